package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// ingestJSON is the part of `ingest --json` these tests read.
type ingestJSON struct {
	Files struct {
		Sent, Unchanged, Deleted, Failed int
	} `json:"files"`
	FileErrors []struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	} `json:"file_errors"`
	Documents int `json:"documents"`
	Chunks    int `json:"chunks"`
}

func ingestReport(t *testing.T, args ...string) ingestJSON {
	t.Helper()
	out, errOut, err := exo(t, append([]string{"ingest", "--json"}, args...)...)
	var rep ingestJSON
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("ingest %v: %v (%v)\nstdout: %s\nstderr: %s", args, jerr, err, out, errOut)
	}
	return rep
}

// searchTitles returns the titles of the hits of q.
func searchTitles(t *testing.T, data, q string) []string {
	t.Helper()
	var res struct {
		Results []hit `json:"results"`
	}
	out := mustExo(t, "search", q, "--data", data, "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search %q: %v\n%s", q, err, out)
	}
	var titles []string
	for _, h := range res.Results {
		titles = append(titles, h.Title)
	}
	return titles
}

func TestCLIIngestKeepsNotesOfTwoFoldersApart(t *testing.T) {
	data, dir := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "A"), filepath.Join(dir, "B")
	write(t, filepath.Join(a, "todo.md"), "# Todo A\n\nWater the avocado seedlings.\n")
	write(t, filepath.Join(b, "todo.md"), "# Todo B\n\nCalibrate the barometer.\n")

	ingestReport(t, a, "--data", data)
	rep := ingestReport(t, b, "--data", data)
	if rep.Documents != 2 || rep.Files.Deleted != 0 {
		t.Fatalf("after A then B: %+v, want both todo.md indexed", rep)
	}
	if got := searchTitles(t, data, "avocado seedlings"); len(got) == 0 || got[0] != "Todo A" {
		t.Errorf("A's todo is not found: %q", got)
	}
	if got := searchTitles(t, data, "barometer"); len(got) == 0 || got[0] != "Todo B" {
		t.Errorf("B's todo is not found: %q", got)
	}
	rep = ingestReport(t, a, "--data", data)
	if rep.Files.Sent != 0 || rep.Files.Unchanged != 1 || rep.Documents != 2 {
		t.Errorf("re-ingesting A: %+v, want nothing changed", rep)
	}
}

func TestCLIIngestSubfolderAfterItsParentAddsNoDuplicates(t *testing.T) {
	data, notes := t.TempDir(), t.TempDir()
	write(t, filepath.Join(notes, "top.md"), "# Top\n\nSee [[inner]] for the quince recipe.\n")
	write(t, filepath.Join(notes, "sub", "inner.md"), "# Inner\n\nQuince jelly needs patience.\n")
	write(t, filepath.Join(notes, "sub", "more.md"), "# More\n\nLoquat trees flower in autumn.\n")

	ingestReport(t, notes, "--data", data)
	rep := ingestReport(t, filepath.Join(notes, "sub"), "--data", data)
	if rep.Documents != 3 || rep.Files.Sent != 0 || rep.Files.Unchanged != 2 {
		t.Errorf("after notes then notes/sub: %+v, want 3 documents, the subfolder unchanged", rep)
	}
	got := searchTitles(t, data, "quince jelly patience")
	n := 0
	for _, title := range got {
		if strings.EqualFold(title, "Inner") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("search hits %q: Inner found %d times, want once", got, n)
	}
}
