package retrieval_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// facetNote is a one-chunk note of facetCorpus.
type facetNote struct {
	id, lang, notebook, name, text, day string
	tags                                []string
}

// facetCorpus indexes notes in two notebooks, English and Russian, tagged
// and dated.
func facetCorpus(t *testing.T, notes []facetNote) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i, n := range notes {
		c := &schemas.ChunkCreated{ChunkID: "ch-" + n.id, DocID: n.id, DocVersion: 1, Hash: fmt.Sprint("h", i), Text: n.text,
			BlockIDs: []string{"b-" + n.id}, Lang: n.lang}
		if _, err := st.UpsertChunk(ctx, c); err != nil {
			t.Fatal(err)
		}
		when, err := time.Parse(time.DateOnly, n.day)
		if err != nil {
			t.Fatal(err)
		}
		d := &schemas.DocStructure{DocID: n.id, Source: schemas.SourceMarkdown, Title: n.id, Path: n.notebook + "/" + n.id + ".md",
			Notebook: n.notebook, NotebookName: n.name, Tags: n.tags, Updated: when, Hash: n.id, Version: 1, ChunkIDs: []string{c.ChunkID},
			Blocks: []schemas.BlockNode{{ID: "b-" + n.id, Type: schemas.BlockParagraph, ChunkID: c.ChunkID}}}
		if _, err := st.ApplyStructure(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

var facetNotes = []facetNote{
	{"budget-q1", "en", "/notes/work", "Work", "The Atlas budget for the first quarter is 40k.", "2026-01-15", []string{"atlas", "budget"}},
	{"budget-q3", "en", "/notes/work", "Work", "The Atlas budget was raised to 55k in the third quarter.", "2026-09-02", []string{"atlas", "budget"}},
	{"budget-home", "en", "/notes/home", "Personal", "The home budget for groceries is 600 a month.", "2026-09-20", []string{"budget"}},
	{"soup", "en", "/notes/home", "Personal", "Soup needs beets and cabbage.", "2026-09-21", []string{"recipe"}},
	{"бюджет-1", "ru", "/notes/work", "Work", "Бюджет проекта Атлас утверждён на квартал.", "2026-10-01", []string{"атлас", "бюджет"}},
	{"бюджет-2", "ru", "/notes/home", "Personal", "Бюджет семьи на продукты вырос.", "2026-11-03", []string{"бюджет"}},
	{"борщ", "ru", "/notes/home", "Personal", "Борщ варят со свёклой.", "2026-11-04", []string{"рецепт"}},
}

func TestFacetsCountEveryCandidateDocumentNotOnlyTheTopK(t *testing.T) {
	st := facetCorpus(t, facetNotes)
	r := &retrieval.Retriever{Index: st}
	tests := []struct {
		name, question string
		want           schemas.Facets
	}{
		{"an English query over two notebooks", "budget",
			schemas.Facets{Of: schemas.FacetsOfCandidates, Docs: 3,
				Notebooks: []schemas.NotebookCount{{ID: "/notes/work", Name: "Work", Count: 2}, {ID: "/notes/home", Name: "Personal", Count: 1}},
				Tags:      []schemas.TagCount{{Tag: "budget", Count: 3}, {Tag: "atlas", Count: 2}},
				Months:    []schemas.MonthCount{{Month: "2026-09", Count: 2}, {Month: "2026-01", Count: 1}}}},
		{"a Russian query counts Cyrillic tags", "бюджет",
			schemas.Facets{Of: schemas.FacetsOfCandidates, Docs: 2,
				Notebooks: []schemas.NotebookCount{{ID: "/notes/home", Name: "Personal", Count: 1}, {ID: "/notes/work", Name: "Work", Count: 1}},
				Tags:      []schemas.TagCount{{Tag: "бюджет", Count: 2}, {Tag: "атлас", Count: 1}},
				Months:    []schemas.MonthCount{{Month: "2026-11", Count: 1}, {Month: "2026-10", Count: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: tt.question,
				Options: schemas.QueryOptions{Mode: schemas.ModeLexical, K: 1, Expand: -1, Facets: true}}}
			rq, err := r.Retrieve(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Rerank(ctx, rq)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Contexts) != 1 {
				t.Fatalf("%d contexts, want the k=1 asked", len(out.Contexts))
			}
			if out.Facets == nil {
				t.Fatal("no facets on kb.query.reranked")
			}
			if fmt.Sprint(*out.Facets) != fmt.Sprint(tt.want) {
				t.Errorf("facets\n got %+v\nwant %+v", *out.Facets, tt.want)
			}
		})
	}
}

func TestNoFacetsUnlessAsked(t *testing.T) {
	st := facetCorpus(t, facetNotes)
	r := &retrieval.Retriever{Index: st}
	rq, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "budget",
		Options: schemas.QueryOptions{Mode: schemas.ModeLexical}}})
	if err != nil {
		t.Fatal(err)
	}
	if rq.Facets != nil {
		t.Errorf("facets %+v on a query that did not ask", rq.Facets)
	}
}

func TestTheFinalContextsCarryTheirNotesDates(t *testing.T) {
	st := facetCorpus(t, facetNotes)
	r := &retrieval.Retriever{Index: st}
	for _, tt := range []struct{ name, question, doc, want string }{
		{"an English note", "groceries", "budget-home", "2026-09-20T00:00:00Z"},
		{"a Russian note", "свёклой", "борщ", "2026-11-04T00:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			rq, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: tt.question,
				Options: schemas.QueryOptions{Mode: schemas.ModeLexical, Expand: -1}}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Rerank(ctx, rq)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Contexts) == 0 || out.Contexts[0].DocID != tt.doc || out.Contexts[0].Updated != tt.want {
				t.Fatalf("contexts %+v: want %s first, dated %s", out.Contexts, tt.doc, tt.want)
			}
		})
	}
}
