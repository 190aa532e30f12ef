package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/watch"
)

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// startWatching runs the whole pipeline (lexical) with a watcher on vault.
func startWatching(t testing.TB, data, vault string, poll bool) *system.System {
	t.Helper()
	sys, err := system.Start(context.Background(), system.Config{DataDir: data, Listen: "127.0.0.1:-1", NoModels: true, Log: testLog(t),
		StageConfig: []any{&watch.Config{Folders: []string{vault}, Poll: poll, PollEvery: 300 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	return sys
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// paths is where query is found (the documents' paths, sorted).
func paths(t testing.TB, sys *system.System, query string) []string {
	t.Helper()
	hits, err := sys.Store.Search(context.Background(), query, store.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.Path) {
			out = append(out, h.Path)
		}
	}
	slices.Sort(out)
	return out
}

// foundAt waits until query is found at exactly the files want (none: not
// found), and returns how long that took.
func foundAt(t testing.TB, sys *system.System, query string, want ...string) time.Duration {
	t.Helper()
	for i := range want {
		want[i] = notes.Canonical(want[i])
	}
	slices.Sort(want)
	start := time.Now()
	for {
		got := paths(t, sys, query)
		if slices.Equal(got, want) {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%q is found at %q, want %q", query, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAWatchedFolderFollowsEditsCreatesDeletesAndRenames(t *testing.T) {
	for _, mode := range []struct {
		name string
		poll bool
	}{{"through inotify", false}, {"by polling", true}} {
		t.Run(mode.name, func(t *testing.T) {
			vault := t.TempDir()
			write(t, filepath.Join(vault, "Crows.md"), "# Crows\n\nCrows use tools to get food.\n")
			write(t, filepath.Join(vault, ".gitignore"), "private/\n*.draft.md\n")
			write(t, filepath.Join(vault, "logseq", "config.edn"), "{}")
			sys := startWatching(t, t.TempDir(), vault, mode.poll)

			// What was there at start comes in by the reconciliation.
			foundAt(t, sys, "tools", filepath.Join(vault, "Crows.md"))

			steps := []struct {
				name string
				do   func()
				// query -> where it must be found (nothing: nowhere)
				want map[string][]string
			}{
				{"a new note is found", func() {
					write(t, filepath.Join(vault, "Owls.md"), "Owls hunt silently at night.\n")
				}, map[string][]string{"silently": {filepath.Join(vault, "Owls.md")}}},
				{"an edit replaces the old text", func() {
					write(t, filepath.Join(vault, "Crows.md"), "# Crows\n\nCrows remember human faces.\n")
				}, map[string][]string{"faces": {filepath.Join(vault, "Crows.md")}, "tools": nil}},
				{"a Russian note in a new folder is found", func() {
					write(t, filepath.Join(vault, "Заметки", "Вороны.md"), "Вороны запоминают лица людей.\n")
				}, map[string][]string{"запоминают": {filepath.Join(vault, "Заметки", "Вороны.md")}}},
				{"a renamed note is found under its new name only", func() {
					if err := os.Rename(filepath.Join(vault, "Owls.md"), filepath.Join(vault, "Night owls.md")); err != nil {
						t.Fatal(err)
					}
				}, map[string][]string{"silently": {filepath.Join(vault, "Night owls.md")}}},
				{"a renamed folder moves its notes", func() {
					if err := os.Rename(filepath.Join(vault, "Заметки"), filepath.Join(vault, "Птицы")); err != nil {
						t.Fatal(err)
					}
				}, map[string][]string{"запоминают": {filepath.Join(vault, "Птицы", "Вороны.md")}}},
				{"a note written in the renamed folder is found", func() {
					write(t, filepath.Join(vault, "Птицы", "Сороки.md"), "Сороки узнают себя в зеркале.\n")
				}, map[string][]string{"зеркале": {filepath.Join(vault, "Птицы", "Сороки.md")}}},
				{"a deleted note is gone", func() {
					if err := os.Remove(filepath.Join(vault, "Night owls.md")); err != nil {
						t.Fatal(err)
					}
				}, map[string][]string{"silently": nil}},
				{"an editor's save by rename keeps the note", func() {
					// vim: the file moves to a backup, a new one is written,
					// the backup removed.
					p := filepath.Join(vault, "Crows.md")
					if err := os.Rename(p, p+"~"); err != nil {
						t.Fatal(err)
					}
					write(t, filepath.Join(vault, "4913"), "")
					_ = os.Remove(filepath.Join(vault, "4913"))
					write(t, p, "# Crows\n\nCrows remember human faces for years.\n")
					_ = os.Remove(p + "~")
				}, map[string][]string{"years": {filepath.Join(vault, "Crows.md")}}},
				{"editor temporary files, .obsidian, Logseq's backups and gitignored notes are left out", func() {
					for _, rel := range []string{".Crows.md.swp", "Crows.md~", ".#Crows.md", "Crows.md.tmp", ".obsidian/workspace.md",
						".trash/old.md", "logseq/bak/pages/Crows.md", "private/diary.md", "plan.draft.md", ".git/notes.md"} {
						write(t, filepath.Join(vault, rel), "Zanzibar flamingo "+rel+"\n")
					}
					// A note written after them: once it is found, they were
					// read and passed over.
					write(t, filepath.Join(vault, "Sentinel.md"), "Sentinel kestrel.\n")
				}, map[string][]string{"kestrel": {filepath.Join(vault, "Sentinel.md")}, "zanzibar": nil}},
			}
			for _, st := range steps {
				st.do()
				for q, want := range st.want {
					foundAt(t, sys, q, want...)
				}
				t.Logf("%s: ok", st.name)
			}
			// Nothing else slipped in (checked once more after the polls).
			time.Sleep(700 * time.Millisecond)
			if got := paths(t, sys, "zanzibar"); len(got) != 0 {
				t.Errorf("left-out files were indexed: %q", got)
			}

			st := sys.Service(watch.RoleName).(*watch.Service).Source.Status()
			wantMode := watch.ModeInotify
			if mode.poll {
				wantMode = watch.ModePolling
			}
			if len(st.Folders) != 1 || st.Folders[0].Mode != wantMode || st.Folders[0].LastEvent.IsZero() || st.Folders[0].Documents != 4 {
				t.Errorf("status: %+v, want one %s folder with 4 documents and a last event", st.Folders, wantMode)
			}
			var onBus *watch.Status
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if onBus, _ = watch.ReadStatus(context.Background(), sys.Bus); onBus != nil && onBus.Folders[0].Documents == 4 {
					break
				}
			}
			if onBus == nil || onBus.Folders[0].Mode != wantMode || onBus.Stopped {
				t.Errorf("status on the bus: %+v", onBus)
			}
		})
	}
}

func TestChangesMadeWhileUpWasDownAreCaughtAtStart(t *testing.T) {
	vault, data := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "Crows.md"), "Crows use tools.\n")
	write(t, filepath.Join(vault, "Owls.md"), "Owls hunt silently.\n")
	sys := startWatching(t, data, vault, false)
	foundAt(t, sys, "tools", filepath.Join(vault, "Crows.md"))
	foundAt(t, sys, "silently", filepath.Join(vault, "Owls.md"))
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	// While nothing watches: an edit, a delete, a new note, a move.
	write(t, filepath.Join(vault, "Crows.md"), "Crows remember faces.\n")
	if err := os.Remove(filepath.Join(vault, "Owls.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(vault, "Вороны.md"), "Вороны запоминают лица.\n")
	write(t, filepath.Join(vault, "a", "Magpies.md"), "Magpies know mirrors.\n")

	sys = startWatching(t, data, vault, false)
	foundAt(t, sys, "faces", filepath.Join(vault, "Crows.md"))
	foundAt(t, sys, "tools")
	foundAt(t, sys, "silently")
	foundAt(t, sys, "запоминают", filepath.Join(vault, "Вороны.md"))
	foundAt(t, sys, "mirrors", filepath.Join(vault, "a", "Magpies.md"))
	if st := sys.Service(watch.RoleName).(*watch.Service).Source.Status(); st.LastReconcile.IsZero() {
		t.Errorf("no reconciliation in the status: %+v", st)
	}
	// And it is live again.
	write(t, filepath.Join(vault, "a", "Magpies.md"), "Magpies know mirrors and hoard shiny things.\n")
	foundAt(t, sys, "shiny", filepath.Join(vault, "a", "Magpies.md"))
}

func TestTheWatchListKeepsEachFolderOnce(t *testing.T) {
	data, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(a, "note.md"), "x")
	added, err := watch.AddToList(data, []string{a, filepath.Join(a, "note.md"), b})
	if err != nil || len(added) != 2 {
		t.Fatalf("first add: %v, %v; want both folders (the file left out)", added, err)
	}
	if added, err = watch.AddToList(data, []string{a + "/", b}); err != nil || len(added) != 0 {
		t.Errorf("second add: %v, %v; want nothing new", added, err)
	}
	got, err := watch.ReadList(data)
	if err != nil || !slices.Equal(got, []string{notes.Canonical(a), notes.Canonical(b)}) {
		t.Errorf("list: %v, %v", got, err)
	}
	if u := watch.Union([]string{b}, got); !slices.Equal(u, []string{notes.Canonical(b), notes.Canonical(a)}) {
		t.Errorf("union: %v", u)
	}
}

func TestAFileIsNotAFolderToWatch(t *testing.T) {
	f := filepath.Join(t.TempDir(), "note.md")
	write(t, f, "x")
	err := watch.Config{Folders: []string{f, filepath.Join(t.TempDir(), "missing")}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "not a folder") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Validate: %v", err)
	}
}
