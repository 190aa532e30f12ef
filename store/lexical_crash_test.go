//go:build linux || darwin || freebsd

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// TestTheMemoryIndexIsRightAfterAWriterIsKilled runs a child process that
// writes chunks, waits until this process has built its own memory index,
// then edits and deletes and kills itself with SIGKILL in the middle of a
// batch. This process's index, following the log, and a fresh one built
// from SQLite must both rank as FTS5 does on what survived.
func TestTheMemoryIndexIsRightAfterAWriterIsKilled(t *testing.T) {
	if dir := os.Getenv("STORE_LEX_CRASH_CHILD"); dir != "" {
		lexCrashChild(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTheMemoryIndexIsRightAfterAWriterIsKilled$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "STORE_LEX_CRASH_CHILD="+dir)
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	waitFile(t, filepath.Join(dir, "phase1"), done)
	follower, err := OpenReadOnly(filepath.Join(dir, "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	follower.Lexical = LexicalMemory
	if len(search(t, follower, "river", SearchOptions{})) == 0 {
		t.Fatal("no hits after the first phase")
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	s, err := Open(filepath.Join(dir, "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Lexical = LexicalMemory
	fts, err := OpenReadOnly(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer fts.Close()
	fts.Lexical = LexicalFTS5
	_, n, err := s.Counts(context.Background())
	if err != nil || n < 300 || n >= 400 {
		t.Fatalf("%d chunks after the crash (%v): want the committed batches only", n, err)
	}
	agree(t, "fresh after the crash", fts, s, SearchOptions{K: 20})
	agree(t, "follower after the crash", fts, follower, SearchOptions{K: 20})
}

func waitFile(t *testing.T, path string, done <-chan error) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("child ended before %s: %v", path, err)
		default:
		}
	}
	t.Fatalf("no %s after 60s", path)
}

func lexCrashChild(t *testing.T, dir string) {
	ctx := context.Background()
	s, err := Open(filepath.Join(dir, "exocortex.db"))
	if err != nil {
		panic(err)
	}
	s.Lexical = LexicalMemory
	lexCorpus(t, s, 0, 300, 8)
	if err := os.WriteFile(filepath.Join(dir, "phase1"), nil, 0o644); err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Committed: deletes and edits, searched in between.
	mustApply(t, s, &schemas.DocStructure{DocID: "d003", Version: 2, Deleted: true}, true)
	mustUpsert(t, s, tombstone("c0101", "d010", 1), true)
	c := chunkEv("c0102", "d010", 2, "Zebras graze on the savanna near the river.")
	mustUpsert(t, s, c, true)
	search(t, s, "river zebras", SearchOptions{})
	lexCorpus(t, s, 300, 350, 9)
	// Not committed: a batch cut by SIGKILL.
	_ = s.Batch(ctx, func(ctx context.Context) error {
		for i := 350; i < 400; i++ {
			if _, err := s.UpsertChunk(ctx, chunkEv(fmt.Sprintf("c%04d", i), "d035", 1, "Killed in the middle of the river.")); err != nil {
				panic(err)
			}
		}
		if _, err := s.ApplyStructure(ctx, &schemas.DocStructure{DocID: "d004", Version: 2, Deleted: true}); err != nil {
			panic(err)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
}
