package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// reportHit is what these tests read of a search result.
type reportHit struct {
	DocID   string `json:"doc_id"`
	Title   string `json:"title"`
	BlockID string `json:"block_id"`
	Report  bool   `json:"report"`
}

func searchHits(t *testing.T, env []string, args ...string) []reportHit {
	t.Helper()
	out, errOut, code := exoResearch(t, env, append([]string{"search", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("search %v: exit %d\n%s", args, code, errOut)
	}
	var res struct {
		Results []reportHit `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	return res.Results
}

// A Markdown folder holds a note and a saved report that copies it (front
// matter exocortex: report): search and ask cite the note; with
// --include-reports the report is found too, labelled as one.
func TestSearchAndAskCiteTheNoteNotItsSavedReportCopy(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "backups.md"), "# Backups\n\nThe NAS makes a backup every night at 02:00 and keeps thirty copies.\n")
	write(t, filepath.Join(vault, "копии.md"), "# Резервные копии\n\nСервер делает резервную копию каждую ночь в 02:00 и хранит тридцать копий.\n")
	// The reports copy each note's sentence twice (a summary and a source
	// quote), so they would outrank the notes.
	write(t, filepath.Join(vault, "Research", "Backups report.md"), schemas.ReportFrontMatter("research-1", "2026-01-02T03:04:05Z")+
		"# Backups report\n\nThe NAS makes a backup every night at 02:00 and keeps thirty copies [1].\n\n## Sources\n\n"+
		"1. Backups — «The NAS makes a backup every night at 02:00 and keeps thirty copies.»\n")
	write(t, filepath.Join(vault, "Research", "Отчёт о копиях.md"), schemas.ReportFrontMatter("research-2", "2026-01-02T03:04:05Z")+
		"# Отчёт о копиях\n\nСервер делает резервную копию каждую ночь в 02:00 и хранит тридцать копий [1].\n\n## Источники\n\n"+
		"1. Резервные копии — «Сервер делает резервную копию каждую ночь в 02:00 и хранит тридцать копий.»\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models")

	for _, tc := range []struct {
		name, query, note, report string
	}{
		{"an English search", "backup every night 02:00 thirty copies", "Backups", "Backups report"},
		{"a Russian search", "резервная копия каждую ночь в 02:00", "Резервные копии", "Отчёт о копиях"},
	} {
		t.Run(tc.name+" cites the note and leaves the report out", func(t *testing.T) {
			hits := searchHits(t, nil, tc.query, "--data", data, "--no-models")
			if len(hits) == 0 || hits[0].Title != tc.note {
				t.Fatalf("search %q: %+v, want the note %q first", tc.query, hits, tc.note)
			}
			for _, h := range hits {
				if h.Title == tc.report || h.Report {
					t.Errorf("search %q returned the saved report: %+v", tc.query, h)
				}
			}
		})
		t.Run(tc.name+" with --include-reports finds the report, labelled", func(t *testing.T) {
			hits := searchHits(t, nil, tc.query, "--data", data, "--no-models", "--include-reports")
			found := false
			for _, h := range hits {
				if h.Title == tc.report {
					found = true
					if !h.Report {
						t.Errorf("the report's hit is not labelled a report: %+v", h)
					}
				}
			}
			if !found {
				t.Errorf("search %q --include-reports: %+v, want the report %q among them", tc.query, hits, tc.report)
			}
			out, errOut, code := exoResearch(t, nil, "search", tc.query, "--data", data, "--no-models", "--include-reports")
			if code != 0 || !strings.Contains(out, "[saved research report]") {
				t.Errorf("the printed results do not label the report (exit %d):\n%s\n%s", code, out, errOut)
			}
		})
		t.Run(tc.name+" asked as a question cites the note only", func(t *testing.T) {
			for _, include := range []bool{false, true} {
				args := []string{"ask", tc.query, "--data", data, "--no-models", "--json"}
				if include {
					args = append(args, "--include-reports")
				}
				out, errOut, code := exoResearch(t, nil, args...)
				if code != 0 {
					t.Fatalf("ask: exit %d\n%s", code, errOut)
				}
				var done schemas.AnswerDone
				if err := json.Unmarshal([]byte(out), &done); err != nil {
					t.Fatalf("ask --json: %v\n%s", err, out)
				}
				note, report := false, false
				for _, c := range done.Citations {
					note = note || c.Title == tc.note
					report = report || c.Title == tc.report
				}
				if !note || report != include {
					t.Errorf("ask (include reports: %v), mode %s: citations %+v; want the note, and the report only when included",
						include, done.Mode, done.Citations)
				}
			}
		})
	}
}

// research --save DIR into the ingested folder writes a report marked by
// its front matter; once the folder is ingested again, a later research
// cites the notes, never the report's copies.
func TestALaterResearchDoesNotCiteASavedMarkdownReport(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "backups.md"), "# Backups\n\n## Schedule\n\nThe NAS makes a backup every night at 02:00 and keeps thirty copies.\n\n"+
		"## Restore\n\nA restore from the NAS takes about two hours for the whole disk.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models")
	env := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}
	const q = "How are backups made and restored?"
	_, errOut, code := exoResearch(t, env, "research", q, "--data", data, "--no-models", "--save", filepath.Join(vault, "Research"))
	if code != 0 {
		t.Fatalf("research --save: exit %d\n%s", code, errOut)
	}
	saved, _ := filepath.Glob(filepath.Join(vault, "Research", "*.md"))
	if len(saved) != 1 {
		t.Fatalf("saved %v\n%s", saved, errOut)
	}
	raw, _ := os.ReadFile(saved[0])
	if !strings.HasPrefix(string(raw), "---\nexocortex: report\nresearch_id: \"research-") || !strings.Contains(string(raw), "\ngenerated: \"") {
		t.Fatalf("the saved report has no report front matter:\n%s", raw)
	}
	mustExo(t, "ingest", vault, "--data", data, "--no-models")
	if hits := searchHits(t, nil, "backup every night", "--data", data, "--no-models", "--include-reports"); !hasReport(hits) {
		t.Fatalf("the saved report was not indexed (or not flagged): %+v", hits)
	}

	out, errOut, code := exoResearch(t, env, "research", q, "--data", data, "--no-models", "--json")
	if code != 0 {
		t.Fatalf("the later research: exit %d\n%s", code, errOut)
	}
	var rep schemas.ResearchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("research --json: %v\n%s", err, out)
	}
	if len(rep.Sources) == 0 {
		t.Fatalf("the later research cites nothing: %s", rep.Markdown)
	}
	for _, s := range rep.Sources {
		if s.Title != "Backups" || strings.Contains(s.Link, "/Research/") {
			t.Errorf("the later research cites %q (%s, %s), not the note", s.Title, s.BlockID, s.Link)
		}
	}
}

func hasReport(hits []reportHit) bool {
	for _, h := range hits {
		if h.Report {
			return true
		}
	}
	return false
}

// research --save siyuan marks the new document (custom-exocortex-report);
// the bridge of a running system indexes it as a report, and a later
// search and research over the kernel cite the note's blocks, not the
// report's.
func TestALaterResearchDoesNotCiteAReportSavedIntoSiYuan(t *testing.T) {
	t.Parallel()
	const box, reports, noteID, para = "20261121100831-kt25p1g", "20261124100000-reports", "20261121100831-xs0m89b", "20261121100831-para001"
	k := siyuantest.New(t, "kernel-token-123")
	k.AddNotebook(box, "Notes")
	k.AddNotebook(reports, "Reports")
	text := "Ravens remember faces of people for years and warn each other about them."
	if err := k.PutDoc(box, noteID, "", "/Ravens", siyuantest.Block{ID: para, Type: "p", Content: text, Markdown: text}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--no-models", "--siyuan", k.URL())
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_TOKEN=kernel-token-123",
		"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG=")
	var upErr bytes.Buffer
	up.Stderr = &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Process.Kill()
	waitChunks := func(want int) {
		t.Helper()
		var st struct{ Chunks int }
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
				out, _, _ := exo(t, "status", "--data", data, "--json")
				if json.Unmarshal([]byte(out), &st) == nil && st.Chunks >= want {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the bridge did not index %d chunks: %+v\n%s", want, st, upErr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitChunks(1)
	env := []string{"EXOCORTEX_SIYUAN_URL=" + k.URL(), "EXOCORTEX_SIYUAN_TOKEN=kernel-token-123",
		"EXOCORTEX_SIYUAN_REPORT_NOTEBOOK=" + reports, "EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}
	const q = "What do ravens remember about people?"
	_, errOut, code := exoResearch(t, env, "research", q, "--data", data, "--save", "siyuan")
	m := regexp.MustCompile(`saved to SiYuan: document (\S+) `).FindStringSubmatch(errOut)
	if code != 0 || m == nil {
		t.Fatalf("research --save siyuan: exit %d\n%s", code, errOut)
	}
	reportID := m[1]
	c := siyuan.NewClient(k.URL(), "kernel-token-123")
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := c.SQL(context.Background(), "SELECT ial FROM blocks WHERE id = '"+reportID+"' LIMIT 1")
	if err != nil || len(rows) != 1 || !strings.Contains(rows[0].Str("ial"), schemas.ReportAttr+`="research-`) {
		t.Fatalf("the report document is not marked: %v, %v", rows, err)
	}
	waitChunks(2) // the report, through the bridge
	query := "ravens remember faces of people"
	if hits := searchHits(t, nil, query, "--data", data, "--include-reports"); !hasReport(hits) {
		t.Fatalf("the report was not indexed as one: %+v\n%s", hits, upErr.String())
	}
	hits := searchHits(t, nil, query, "--data", data)
	if len(hits) == 0 || hits[0].BlockID != para {
		t.Errorf("search: %+v, want the note's block %s first", hits, para)
	}
	for _, h := range hits {
		if h.DocID == reportID || h.Report {
			t.Errorf("search cites the saved report: %+v", h)
		}
	}
	out, errOut, code := exoResearch(t, env, "research", q, "--data", data, "--json")
	if code != 0 {
		t.Fatalf("the later research: exit %d\n%s", code, errOut)
	}
	var rep schemas.ResearchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("research --json: %v\n%s", err, out)
	}
	if len(rep.Sources) == 0 {
		t.Fatalf("the later research cites nothing:\n%s", rep.Markdown)
	}
	for _, s := range rep.Sources {
		if s.DocID == reportID || s.BlockID != para {
			t.Errorf("the later research cites %s of %s, want the note's block %s", s.BlockID, s.DocID, para)
		}
	}
}
