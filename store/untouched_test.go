package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// filesOf lists the files of dir with their sizes and modification times,
// leaving out the names skip says to.
func filesOf(t *testing.T, dir string, skip func(name string) bool) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if skip != nil && skip(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, e.Name()+" "+strconv.FormatInt(fi.Size(), 10)+" "+fi.ModTime().Format(time.RFC3339Nano))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// writtenAndClosed writes a corpus with the memory engine, searches it (so
// that the lexical snapshot is saved) and closes the store; it returns the
// database's path.
func writtenAndClosed(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "exocortex.db")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Lexical = LexicalMemory
	lexCorpus(t, w, 0, 120, 21)
	search(t, w, "river", SearchOptions{})
	if err := w.SaveLexSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openFTS opens the reference of the comparisons: the same database
// ranked by FTS5, itself untouched (a read-only open would make the -wal
// and -shm files the test looks for).
func openFTS(t *testing.T, path string) *Store {
	t.Helper()
	s, err := OpenUntouched(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Lexical = LexicalFTS5
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAWriterThatClosesLastLeavesTheDatabaseAsOneFile(t *testing.T) {
	path := writtenAndClosed(t)
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the writer closed: %v, want none (its connection closes last and checkpoints)", filepath.Base(path+suffix), err)
		}
	}
}

func TestAnUntouchedStoreSearchesAsTheWriterAndLeavesTheDirectoryAsItWas(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare readies the database after it was written and closed;
		// it returns the files the check leaves out (SQLite's -shm when a
		// reader goes through the WAL).
		prepare func(t *testing.T, path string) (skip func(string) bool)
		// memory: the search ranks in the memory index (else on FTS5).
		memory bool
	}{
		{"a database closed cleanly, its lexical snapshot up to date", func(t *testing.T, path string) func(string) bool {
			return nil
		}, true},
		{"a database without a lexical snapshot", func(t *testing.T, path string) func(string) bool {
			if err := os.Remove(LexSnapshotPath(path)); err != nil {
				t.Fatal(err)
			}
			return nil
		}, false},
		{"a snapshot more entries behind the log than a reader replays", func(t *testing.T, path string) func(string) bool {
			w, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			lexCorpus(t, w, 120, 150, 22) // 30 more log entries, beyond LexReplayMax (20 here)
			w.Close()
			return nil
		}, false},
		{"a snapshot a few entries behind the log, replayed in memory", func(t *testing.T, path string) func(string) bool {
			w, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			lexCorpus(t, w, 120, 130, 23)
			w.Close()
			return nil
		}, true},
		{"a database a writer has open (read through its WAL)", func(t *testing.T, path string) func(string) bool {
			w, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			lexCorpus(t, w, 120, 130, 24)
			if _, err := os.Stat(path + "-wal"); err != nil {
				t.Fatalf("no WAL while the writer is open: %v", err)
			}
			// The reader writes its read mark into the -shm file.
			return func(name string) bool { return strings.HasSuffix(name, "-shm") }
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(n int64) { LexReplayMax = n }(LexReplayMax)
			LexReplayMax = 20
			path := writtenAndClosed(t)
			skip := tc.prepare(t, path)
			dir := filepath.Dir(path)
			before := filesOf(t, dir, skip)

			u, err := OpenUntouched(path)
			if err != nil {
				t.Fatal(err)
			}
			u.Lexical = LexicalMemory
			agree(t, tc.name, openFTS(t, path), u, SearchOptions{K: 20})
			_, lexErr := u.LexicalIndex(context.Background())
			if memory := lexErr == nil; memory != tc.memory {
				t.Errorf("ranked in the memory index: %v (%v), want %v", memory, lexErr, tc.memory)
			}
			if !tc.memory && !errors.Is(lexErr, ErrLexicalCold) {
				t.Errorf("the memory index without a cheap snapshot: %v, want ErrLexicalCold", lexErr)
			}
			if err := u.SaveLexSnapshot(context.Background()); err != nil {
				t.Fatal(err)
			}
			if u.Changed() {
				t.Error("Changed says the database changed; nobody wrote it")
			}
			if err := u.Close(); err != nil {
				t.Fatal(err)
			}
			if after := filesOf(t, dir, skip); after != before {
				t.Errorf("an untouched store changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestAnUntouchedStoreSaysWhenAWriterChangedTheFileItRead(t *testing.T) {
	path := writtenAndClosed(t)
	u, err := OpenUntouched(path)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	search(t, u, "river", SearchOptions{})
	if u.Changed() {
		t.Fatal("Changed before anyone wrote")
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	lexCorpus(t, w, 120, 140, 25)
	if err := w.Close(); err != nil { // the checkpoint writes the database file
		t.Fatal(err)
	}
	if !u.Changed() {
		t.Error("a writer checkpointed into the file, and Changed says it did not change")
	}
	again, err := OpenUntouched(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if hits := search(t, again, "river", SearchOptions{K: 200}); len(hits) == 0 {
		t.Error("the store opened again finds nothing")
	}
}

func TestAStoppingWriterSavesTheLexicalSnapshotSoAReaderReplaysNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exocortex.db")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Lexical = LexicalMemory
	lexCorpus(t, w, 0, 60, 26)
	search(t, w, "river", SearchOptions{}) // built and saved
	saved, err := os.Stat(LexSnapshotPath(path))
	if err != nil {
		t.Fatal(err)
	}
	lexCorpus(t, w, 60, 100, 27) // in the log only
	if err := w.SaveLexSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := os.Stat(LexSnapshotPath(path))
	if err != nil || again.ModTime().Equal(saved.ModTime()) && again.Size() == saved.Size() {
		t.Fatalf("SaveLexSnapshot after 40 more chunks left the snapshot as it was (%v)", err)
	}
	// Saved already: nothing to write the second time.
	if err := w.SaveLexSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if third, _ := os.Stat(LexSnapshotPath(path)); !third.ModTime().Equal(again.ModTime()) {
		t.Error("SaveLexSnapshot wrote an unchanged index again")
	}
	w.Close()

	defer func(n int64) { LexReplayMax = n }(LexReplayMax)
	LexReplayMax = 0 // a reader that replays nothing
	u, err := OpenUntouched(path)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.LexicalIndex(context.Background()); err != nil {
		t.Fatalf("a reader after the writer stopped: %v, want the snapshot as it is", err)
	}
	agree(t, "the snapshot saved at stop", openFTS(t, path), u, SearchOptions{K: 20})

	// A writer that never loaded the memory index builds nothing at stop.
	fresh, err := Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	lexCorpus(t, fresh, 0, 20, 28)
	if err := fresh.SaveLexSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(LexSnapshotPath(fresh.Path())); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a store that never searched saved a snapshot: %v", err)
	}
	fresh.Close()
}

func TestChunkLangsCountTheSameFromTheMemoryIndexAsFromTheChunksTable(t *testing.T) {
	mem, fts := openPair(t)
	lexCorpus(t, mem, 0, 150, 29)
	mustApply(t, mem, structure("d003", 2), true) // deletes d003's chunks
	want, err := fts.ChunkLangs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := mem.ChunkLangs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || got["ru"] != want["ru"] || got["en"] != want["en"] || got[""] != want[""] || want["ru"] == 0 || want[""] == 0 {
		t.Errorf("chunk languages from the memory index %v, from the chunks table %v", got, want)
	}
}
