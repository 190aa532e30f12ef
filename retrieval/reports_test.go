package retrieval_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// reportCorpus indexes, per language, a note with two chunks and a saved
// research report (DocStructure.Report) that copies the note's first
// sentence three times, so the report outranks the note on every
// retriever; the note's second chunk references a block of the report.
// Vectors: the report's points lie on the query's axis, the note's near it.
func reportCorpus(t *testing.T) (*store.Store, vectors.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	vs, err := vectors.Open(ctx, vectors.Config{Dir: t.TempDir(), Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	note := map[string][2]string{
		"en": {"Backups run every night at 02:00 on the NAS.", "The backup NAS keeps thirty nightly copies."},
		"ru": {"Резервные копии делаются каждую ночь в 02:00 на NAS.", "NAS хранит тридцать ночных резервных копий."},
	}
	var pts []vectors.Point
	for _, lang := range []string{"en", "ru"} {
		nd, rd := "note-"+lang, "report-"+lang
		var noteIDs, reportIDs []string
		var noteBlocks, reportBlocks []schemas.BlockNode
		for i, text := range note[lang] {
			id := fmt.Sprintf("%s-b%d", nd, i)
			c := &schemas.ChunkCreated{ChunkID: "ch-" + id, DocID: nd, DocVersion: 1, Ordinal: i, Hash: "h-" + id, Text: text,
				BlockIDs: []string{id}, Lang: lang}
			bn := schemas.BlockNode{ID: id, Type: schemas.BlockParagraph, ChunkID: c.ChunkID}
			if i == 1 {
				c.Refs, bn.Refs = []string{rd + "-b0"}, []string{rd + "-b0"}
			}
			if _, err := st.UpsertChunk(ctx, c); err != nil {
				t.Fatal(err)
			}
			noteIDs, noteBlocks = append(noteIDs, c.ChunkID), append(noteBlocks, bn)
			v := unit(8, 0)
			v[i+1] = 0.5
			pts = append(pts, vectors.Point{ID: c.ChunkID, DocID: nd, Lang: lang, Vector: v})
		}
		for i := range 3 {
			id := fmt.Sprintf("%s-b%d", rd, i)
			c := &schemas.ChunkCreated{ChunkID: "ch-" + id, DocID: rd, DocVersion: 1, Ordinal: i, Hash: "h-" + id,
				Text: note[lang][0] + " " + note[lang][0], BlockIDs: []string{id}, Lang: lang}
			if _, err := st.UpsertChunk(ctx, c); err != nil {
				t.Fatal(err)
			}
			reportIDs = append(reportIDs, c.ChunkID)
			reportBlocks = append(reportBlocks, schemas.BlockNode{ID: id, Type: schemas.BlockParagraph, ChunkID: c.ChunkID})
			pts = append(pts, vectors.Point{ID: c.ChunkID, DocID: rd, Lang: lang, Vector: unit(8, 0)})
		}
		for _, d := range []*schemas.DocStructure{
			{DocID: nd, Title: "Backups " + lang, Path: nd + ".md", Hash: nd, Version: 1, ChunkIDs: noteIDs, Blocks: noteBlocks},
			{DocID: rd, Title: "Research: backups " + lang, Path: rd + ".md", Hash: rd, Version: 1, ChunkIDs: reportIDs,
				Blocks: reportBlocks, Report: true},
		} {
			if _, err := st.ApplyStructure(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := vs.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	return st, vs
}

func TestRetrievalLeavesSavedReportsOutUnlessAsked(t *testing.T) {
	st, vs := reportCorpus(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, question, lang, mode string
		include                    bool
		// small retriever lists, so only the over-fetch can keep them full
		lexK, vecK int
		wantReport bool
		wantNotes  int
	}{
		{"an English question finds the note's chunks and no report copy", "backups every night at 02:00", "en", schemas.ModeLexical, false, 0, 0, false, 2},
		{"a Russian question finds the note's chunks and no report copy", "резервные копии каждую ночь в 02:00", "ru", schemas.ModeLexical, false, 0, 0, false, 2},
		{"a lexical list as short as the report copies still fills with notes", "backups every night at 02:00", "en", schemas.ModeLexical, false, 2, 0, false, 2},
		{"a vector list as short as the report copies still fills with notes", "резервные копии", "ru", schemas.ModeVector, false, 0, 2, false, 2},
		{"hybrid retrieval leaves the reports out of both lists", "backups every night", "en", schemas.ModeHybrid, false, 2, 2, false, 2},
		{"include_reports brings the English report back, flagged", "backups every night at 02:00", "en", schemas.ModeLexical, true, 0, 0, true, 0},
		{"include_reports brings the Russian report back in vector search", "резервные копии", "ru", schemas.ModeVector, true, 0, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(unit(8, 0)),
				Config: retrieval.Config{LexicalK: tc.lexK, VectorK: tc.vecK, Expand: 4}}
			q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: tc.question, Lang: tc.lang,
				Options: schemas.QueryOptions{Mode: tc.mode, K: 10, Lang: tc.lang, IncludeReports: tc.include}}}
			rq, err := r.Retrieve(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			rr, err := r.Rerank(ctx, rq)
			if err != nil {
				t.Fatal(err)
			}
			notes, reports := 0, 0
			for _, c := range rr.Contexts {
				switch c.DocID {
				case "note-" + tc.lang:
					notes++
				case "report-" + tc.lang:
					reports++
					if !c.Report {
						t.Errorf("report chunk %s is not flagged as a report", c.ChunkID)
					}
				default:
					t.Errorf("context %s of %s: the language filter let it through", c.ChunkID, c.DocID)
				}
			}
			if tc.wantReport != (reports > 0) || notes < tc.wantNotes {
				t.Errorf("%d note and %d report contexts (%v); want notes >= %d and reports: %v", notes, reports, ids(rr.Contexts), tc.wantNotes, tc.wantReport)
			}
			if !tc.include {
				for _, c := range rq.Candidates {
					if c.DocID == "report-"+tc.lang {
						t.Errorf("candidate %s of the report reached fusion", c.ChunkID)
					}
				}
			}
		})
	}
}

func ids(cs []schemas.Context) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ChunkID+"("+c.Source+")")
	}
	return out
}

// The store knows its reports: DocStructure.Report or the marks in meta
// (front matter, SiYuan attribute) flag a document; a note written over
// a report, or its deletion, clears it.
func TestTheStoreListsReportDocumentsAndFlagsTheirHits(t *testing.T) {
	st, _ := reportCorpus(t)
	ctx := context.Background()
	got, err := st.ReportDocs(ctx)
	if err != nil || len(got) != 2 || got["report-en"] != 3 || got["report-ru"] != 3 {
		t.Fatalf("ReportDocs = %v, %v; want both reports with 3 chunks", got, err)
	}
	for _, tc := range []struct {
		name   string
		doc    *schemas.DocStructure
		report bool
	}{
		{"front matter exocortex: report marks a Markdown file", &schemas.DocStructure{DocID: "fm", Hash: "1", Version: 1,
			Meta: map[string]string{"exocortex": "report", "research_id": "r1"}}, true},
		{"the SiYuan attribute marks a document", &schemas.DocStructure{DocID: "sy", Hash: "1", Version: 1,
			Meta: map[string]string{schemas.ReportAttr: "r2"}}, true},
		{"the report rewritten as a note is a note again", &schemas.DocStructure{DocID: "report-en", Hash: "2", Version: 2,
			ChunkIDs: []string{"ch-report-en-b0"}}, false},
		{"a deleted report is gone from the list", &schemas.DocStructure{DocID: "report-ru", Version: 3, Deleted: true}, false},
		{"a note with other front matter is a note", &schemas.DocStructure{DocID: "plain", Hash: "1", Version: 1,
			Meta: map[string]string{"exocortex": "notes", "tags": "report"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := st.ApplyStructure(ctx, tc.doc); err != nil {
				t.Fatal(err)
			}
			got, err := st.ReportDocs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got[tc.doc.DocID]; ok != tc.report {
				t.Errorf("%s listed as a report: %v, want %v (%v)", tc.doc.DocID, ok, tc.report, got)
			}
		})
	}
	hits, err := st.Passages(ctx, []string{"ch-note-en-b0", "ch-report-en-b0"})
	if err != nil || len(hits) != 2 || hits[0].Report || hits[1].Report {
		t.Errorf("passages after the report became a note: %+v, %v", hits, err)
	}
}
