package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// searchFinds waits until `search q` names a hit of the file want.
func searchFinds(t *testing.T, data, q, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _, err := exo(t, "search", q, "--data", data, "--json")
		if err == nil && strings.Contains(out, filepath.Base(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("search %q never found %s: %v\n%s", q, want, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestCLIUpWatchesTheFoldersGivenAndTheOnesIngested(t *testing.T) {
	data, vault, once, extra := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "Crows.md"), "# Crows\n\nCrows use tools.\n")
	write(t, filepath.Join(once, "Owls.md"), "# Owls\n\nOwls hunt at night.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	mustExo(t, "ingest", once, "--once", "--data", data, "--no-models", "--quiet")
	raw, err := os.ReadFile(filepath.Join(data, "watch"))
	if err != nil {
		t.Fatal(err)
	}
	list := strings.Fields(string(raw))
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }
	if !slices.Equal(list, []string{real(vault)}) {
		t.Errorf("watch list %q, want only the folder ingested without --once (%s)", list, real(vault))
	}

	startUp(t, data, nil, "--no-models", "--http", "off", "--watch", extra)
	write(t, filepath.Join(vault, "Вороны.md"), "# Вороны\n\nВороны запоминают лица.\n")
	write(t, filepath.Join(extra, "Magpies.md"), "# Magpies\n\nMagpies know mirrors.\n")
	searchFinds(t, data, "запоминают", "Вороны.md")
	searchFinds(t, data, "mirrors", "Magpies.md")

	out := mustExo(t, "status", "--data", data)
	for _, want := range []string{"watch: running", real(vault) + ": inotify", real(extra) + ": inotify", "last event"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, real(once)) {
		t.Errorf("status shows the folder ingested --once as watched:\n%s", out)
	}
}

func TestUpWatchMistakesAreNamed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "note.md")
	write(t, file, "x")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"polling without a folder asks for one", []string{"--watch-poll"}, "--watch-poll needs a folder"},
		{"a missing folder is named", []string{"--watch", filepath.Join(t.TempDir(), "missing")}, "missing: no such file"},
		{"a file is not a folder to watch", []string{"--watch", file}, "not a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, err := exo(t, append([]string{"up", "--data", t.TempDir(), "--no-models", "--http", "off", "--listen", "127.0.0.1:-1"}, tc.args...)...)
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Errorf("up %v: %v, stderr %q; want an error saying %q", tc.args, err, errOut, tc.want)
			}
		})
	}
}
