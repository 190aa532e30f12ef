package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/internal/scalebench"
)

func writeResult(t *testing.T, dir string, chunks int, lexP95 float64) string {
	t.Helper()
	r := &scalebench.Result{Chunks: chunks, Words: int64(chunks) * 100, Machine: "linux/amd64, 2 cores", Load: "1.0",
		Build: scalebench.BuildInfo{Chunks: chunks, Seconds: 10},
		Rows:  []scalebench.Row{{Measure: "lexical", Engine: "fts5", Queries: 500, P50MS: 1, P95MS: lexP95, Recall: 0.9}}}
	p := filepath.Join(dir, "scale-"+scalebench.SizeName(chunks)+".json")
	if err := r.WriteJSON(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWritesTheTableBetweenTheMarkersAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	writeResult(t, dir, 100_000, 50)
	writeResult(t, dir, 1_000_000, 412)
	doc := filepath.Join(dir, "benchmarks.md")
	before := "# Title\n\nText before.\n\n" + scalebench.BeginMarker + "\nold table\n" + scalebench.EndMarker + "\n\nText after.\n"
	if err := os.WriteFile(doc, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"-doc", doc, "-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(doc)
	got := string(raw)
	if strings.Contains(got, "old table") {
		t.Errorf("the old table is still there:\n%s", got)
	}
	if !strings.HasPrefix(got, "# Title\n\nText before.\n\n"+scalebench.BeginMarker+"\n") ||
		!strings.HasSuffix(got, "\n"+scalebench.EndMarker+"\n\nText after.\n") {
		t.Errorf("the text around the markers changed:\n%s", got)
	}
	for _, want := range []string{"| 100k p95 ms |", "| 1M p95 ms |", "| lexical | fts5 | 1.00 | 50.0 | 0.90 | 1.00 | 412 | 0.90 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	// A second run with the same results changes nothing.
	out.Reset()
	if err := run([]string{"-doc", doc, "-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(doc); string(again) != got || !strings.Contains(out.String(), "up to date") {
		t.Errorf("a second run changed the file or did not say it was up to date: %q", out.String())
	}
}

func TestRefusesAFileWithoutMarkersAndLeavesItAlone(t *testing.T) {
	dir := t.TempDir()
	res := writeResult(t, dir, 100_000, 50)
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# No markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run([]string{"-doc", doc, res}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "markers not found") {
		t.Fatalf("err = %v, want one saying the markers are missing", err)
	}
	if raw, _ := os.ReadFile(doc); string(raw) != "# No markers\n" {
		t.Errorf("the file changed: %q", raw)
	}
}

func TestSaysWhatToRunWhenThereAreNoResults(t *testing.T) {
	err := run([]string{"-dir", t.TempDir(), "-print"}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "./task bench:scale") {
		t.Fatalf("err = %v, want one naming ./task bench:scale", err)
	}
}

func TestRefusesAJSONFileThatIsNotAScaleResult(t *testing.T) {
	p := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(p, []byte(`{"name":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run([]string{"-print", p}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "not a scale result") {
		t.Fatalf("err = %v, want one saying it is not a scale result", err)
	}
}

func TestKeepLeavesTheSizesAndRowsTheResultsLackInTheTable(t *testing.T) {
	dir := t.TempDir()
	old := []*scalebench.Result{}
	for _, n := range []int{100_000, 1_000_000} {
		r, err := scalebench.ReadResult(writeResult(t, dir, n, float64(n/1000)))
		if err != nil {
			t.Fatal(err)
		}
		r.Rows = append(r.Rows, scalebench.Row{Measure: "vector", Engine: "hnswlib ef=64", P50MS: 0.08, P95MS: 0.1, Recall: 1})
		old = append(old, r)
	}
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# Title\n\n"+scalebench.BeginMarker+"\n"+scalebench.Markdown(old)+scalebench.EndMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "scale-100k.json")
	r := &scalebench.Result{Chunks: 100_000, Words: 1e7, Machine: "linux/amd64, 2 cores", Load: "2.0",
		Build: scalebench.BuildInfo{Chunks: 100_000, Seconds: 10},
		Rows: []scalebench.Row{{Measure: "lexical", Engine: "fts5", P50MS: 3, P95MS: 77, Recall: 0.9},
			{Measure: "scoped lexical", Engine: "memory, tag 5%", P50MS: 0.5, P95MS: 0.9, Recall: 1, Note: "new"}}}
	if err := r.WriteJSON(fresh); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"-doc", doc, "-keep", fresh}, &out); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(doc)
	got := string(raw)
	for _, want := range []string{
		"| 1M chunks |", // the kept corpus row
		"| lexical | fts5 | 3.00 | 77.0 | 0.90 | 1.00 | 1000 | 0.90 |", // new 100k, kept 1M
		"| scoped lexical | memory, tag 5% | 0.50 | 0.90 | 1.00 | | | | new |",
		"| vector | hnswlib ef=64 | 0.08 | 0.10 | 1.00 | 0.08 | 0.10 | 1.00 |", // a row the run left out
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "| 100 | 0.90 | 1.00 |") {
		t.Errorf("the old 100k column is still there:\n%s", got)
	}
}
