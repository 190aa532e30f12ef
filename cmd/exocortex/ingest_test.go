package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"
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
	t.Parallel()
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
	t.Parallel()
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

// bigNote writes a Markdown note of about size bytes: sections of ordinary
// paragraphs, one of them saying needle.
func bigNote(t *testing.T, path string, size int, needle string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# Big journal\n\n")
	for i := 0; b.Len() < size; i++ {
		if i%20 == 0 {
			fmt.Fprintf(&b, "## Day %d\n\n", i/20)
		}
		fmt.Fprintf(&b, "Entry %d: walked to the river, counted %d herons, wrote down the weather and the price of bread. "+
			"Met a neighbour who talked about the old mill and the road repairs of entry %d.\n\n", i, i%17, i)
		if i == 50000 {
			b.WriteString(needle + "\n\n")
		}
	}
	write(t, path, b.String())
}

func TestCLIIngestIndexesANoteLargerThanTheMaxPayload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("ingests a 20 MB note")
	}
	data, vault := t.TempDir(), t.TempDir()
	// 20 MB: over the embedded server's 8 MiB max payload. Sorted first, so
	// the small notes come after it.
	bigNote(t, filepath.Join(vault, "a-journal.md"), 20<<20, "The zeppelin landed beside the lighthouse.")
	write(t, filepath.Join(vault, "b-small.md"), "# Small\n\nThe marmalade recipe uses bitter oranges.\n")
	write(t, filepath.Join(vault, "c-tiny.md"), "# Tiny\n\nSnowdrops flower in February.\n")

	start := time.Now()
	rep := ingestReport(t, vault, "--data", data)
	t.Logf("ingesting 20 MB + 2 small notes took %s: %+v documents %d chunks %d", time.Since(start), rep.Files, rep.Documents, rep.Chunks)
	if rep.Files.Sent != 3 || rep.Files.Failed != 0 || rep.Documents != 3 || rep.Chunks < 1000 {
		t.Fatalf("ingest = %+v, errors %+v; want all 3 notes indexed", rep, rep.FileErrors)
	}
	for q, want := range map[string]string{"zeppelin lighthouse": "Big journal", "marmalade": "Small", "snowdrops": "Tiny"} {
		if got := searchTitles(t, data, q); len(got) == 0 || got[0] != want {
			t.Errorf("search %q = %q, want %q first", q, got, want)
		}
	}
}

func TestCLIIngestSkipsAndReportsAFileOverTheLimit(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	bigNote(t, filepath.Join(vault, "a-journal.md"), 3<<20, "needle")
	write(t, filepath.Join(vault, "b-small.md"), "# Small\n\nThe marmalade recipe uses bitter oranges.\n")

	out, errOut, err := exo(t, "ingest", vault, "--data", data, "--max-file-mb", "2")
	if err == nil {
		t.Errorf("ingest with a skipped file exited 0")
	}
	big := filepath.Join(vault, "a-journal.md")
	if !strings.Contains(errOut, big) || !strings.Contains(errOut, "file too large: 3.0 MiB, the limit is 2.0 MiB") {
		t.Errorf("the skipped file is not reported with its size and the limit:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if got := searchTitles(t, data, "marmalade"); len(got) == 0 || got[0] != "Small" {
		t.Errorf("the small note after the big one is not indexed: %q", got)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestCLIIngestReportsEachFailedFileOnceAndExitsNonZero(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "good.md"), "# Good\n\nThe greenhouse needs new glass.\n")
	// Over --max-file-mb 1: a file that genuinely fails.
	bad := filepath.Join(vault, "bad.md")
	write(t, bad, strings.Repeat("All work and no play. ", 100000))
	stray := filepath.Join(vault, "stray.md")
	write(t, stray, "# Stray\n\nThe compost \xff\xfeheap is warm.\n")
	cp := filepath.Join(vault, "cp1251.md")
	text, err := charmap.Windows1251.NewEncoder().String("# Варенье\n\nКлубничное варенье варят двадцать минут.\n")
	if err != nil {
		t.Fatal(err)
	}
	write(t, cp, text)

	out, errOut, err := exo(t, "ingest", vault, "--data", data, "--max-file-mb", "1")
	if code := exitCode(err); code != 3 {
		t.Errorf("exit code %d (%v), want 3 when some files failed and the rest were ingested", code, err)
	}
	if n := strings.Count(errOut, bad); n != 1 {
		t.Errorf("the failed file is named %d times on stderr, want once:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, bad+": file too large: 2.1 MiB, the limit is 1.0 MiB\n") {
		t.Errorf("no 'path: reason' line for the failed file:\n%s", errOut)
	}
	if !strings.Contains(errOut, stray+": 2 invalid UTF-8 bytes replaced with U+FFFD") {
		t.Errorf("the replaced bytes are not reported:\n%s", errOut)
	}
	if !strings.Contains(errOut, cp+": not UTF-8: probably Windows-1251 (CP1251)") {
		t.Errorf("the CP1251 note does not say what it probably is:\n%s", errOut)
	}
	if !strings.Contains(out, "1 failed") || !strings.Contains(errOut, "1 of 4 files failed") {
		t.Errorf("no summary:\nstdout: %s\nstderr: %s", out, errOut)
	}
	for q, want := range map[string]string{"greenhouse": "Good", "compost": "Stray", "клубничное варенье": "Варенье"} {
		if got := searchTitles(t, data, q); len(got) == 0 || got[0] != want {
			t.Errorf("search %q = %q, want %q", q, got, want)
		}
	}

	t.Run("the JSON report lists each failure once and the warnings, with the same exit code", func(t *testing.T) {
		out, _, err := exo(t, "ingest", vault, "--data", t.TempDir(), "--json", "--max-file-mb", "1")
		var rep struct {
			FileErrors []struct{ Path, Error string } `json:"file_errors"`
			Warnings   []struct{ Path, Error string } `json:"warnings"`
		}
		if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
			t.Fatalf("%v\n%s", jerr, out)
		}
		if code := exitCode(err); code != 3 || len(rep.FileErrors) != 1 || rep.FileErrors[0].Path != bad || len(rep.Warnings) != 2 {
			t.Errorf("exit %d, report %+v", code, rep)
		}
	})
	t.Run("when no file could be ingested the exit code is 1", func(t *testing.T) {
		only := t.TempDir()
		write(t, filepath.Join(only, "bad.md"), strings.Repeat("All work and no play. ", 100000))
		_, errOut, err := exo(t, "ingest", only, "--data", t.TempDir(), "--max-file-mb", "1")
		if code := exitCode(err); code != 1 {
			t.Errorf("exit code %d, want 1:\n%s", code, errOut)
		}
	})
	t.Run("when everything is ingested the exit code is 0", func(t *testing.T) {
		_, errOut, err := exo(t, "ingest", filepath.Join(vault, "good.md"), "--data", t.TempDir())
		if code := exitCode(err); code != 0 {
			t.Errorf("exit code %d, want 0:\n%s", code, errOut)
		}
	})
}

func TestCLIIngestIndexesANoteWithBrokenFrontMatterAndWarns(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	broken := filepath.Join(vault, "C", "broken.md")
	write(t, broken, "---\ntitle: [Quince jelly\ntags: preserves\n---\n# Jelly\n\nStrain the pulp through muslin overnight.\n")
	write(t, filepath.Join(vault, "good.md"), "# Good\n\nThe greenhouse needs new glass.\n")

	out, errOut, err := exo(t, "ingest", vault, "--data", data)
	if code := exitCode(err); code != 0 {
		t.Errorf("exit code %d (%v), want 0: a note with a broken front matter is read with a repair\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
	want := broken + ": front matter is not valid YAML (line 2: did not find expected ',' or ']'); indexed without its properties\n"
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr does not warn %q:\n%s", want, errOut)
	}
	if !strings.Contains(out, "ingested 2 documents (0 unchanged, 0 deleted, 0 failed, 1 read with repairs)") {
		t.Errorf("summary does not count the note as read with a repair:\n%s", out)
	}
	for _, q := range []string{"muslin overnight", "quince"} {
		if got := searchTitles(t, data, q); len(got) == 0 || got[0] != "Jelly" {
			t.Errorf("search %q = %q, want the note (its body and its front matter's words are indexed)", q, got)
		}
	}
}

func TestCLIIngestProgressEndsWithTheFinalCounts(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# A\n\nApples ripen in September.\n")
	write(t, filepath.Join(vault, "b.md"), "# B\n\nBeans climb the poles.\n")

	out, errOut, err := exo(t, "ingest", vault, "--data", data)
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	var scans, sents []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(l, "ingest: scanned ") {
			scans = append(scans, l)
		}
		if strings.HasPrefix(l, "ingest: sent ") {
			sents = append(sents, l)
		}
	}
	want := "ingest: scanned 2 documents: 2 sent, 0 unchanged, 0 deleted, 0 failed"
	if len(scans) == 0 || scans[len(scans)-1] != want {
		t.Errorf("the last scan line is not the final count %q:\n%s", want, errOut)
	}
	for i := 1; i < len(scans); i++ {
		if scans[i] == scans[i-1] {
			t.Errorf("scan line printed twice:\n%s", errOut)
		}
	}
	if !strings.Contains(out, "ingested 2 documents") {
		t.Errorf("stdout: %s", out)
	}
	if len(sents) == 0 || !strings.HasPrefix(sents[len(sents)-1], "ingest: sent 2 documents; ") || regexp.MustCompile(` [1-9][0-9]* pending`).MatchString(sents[len(sents)-1]) {
		t.Errorf("the last pipeline line is not the final state:\n%s", errOut)
	}
}
