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
