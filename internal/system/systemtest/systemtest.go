// Package systemtest holds the helpers of whole-system tests: start a
// system in a temporary data directory, feed it folders of notes over the
// bus and wait until every stage is idle. The tests of internal/system,
// client and internal/maintenance share it.
//
// It is for tests only; it may import internal/system, bus, schemas and the
// workers it feeds (workers/files, workers/stage).
package systemtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// Log is a logger that writes warnings and errors to the test's log.
func Log(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// Start starts a whole system (every stage, an embedded NATS server on a
// free port) with its data in dir; it stops when the test ends.
func Start(t testing.TB, dir string) *system.System {
	t.Helper()
	sys, err := system.Start(context.Background(), system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	return sys
}

// SyncPaths publishes the notes under paths (files or folders) as a files
// source does, and returns what it sent; files it could not read are logged.
func SyncPaths(t testing.TB, b *bus.Bus, paths ...string) files.SyncStats {
	t.Helper()
	ctx := context.Background()
	kv, err := b.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	stats, ferrs, err := files.Sync(ctx, paths, kv, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := b.Publish(ctx, ev, "test-trace")
		return err
	}, files.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fe := range ferrs {
		t.Logf("file error: %+v", fe)
	}
	return stats
}

// WaitIdle waits (up to 2 minutes) until every stage's consumer has handled
// all it was sent.
func WaitIdle(t testing.TB, b *bus.Bus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := system.WaitIdle(ctx, b, system.StageSpecs(), 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
}

// WriteFile writes text to path, making its folder, and moves its mtime
// forward so that a rewrite within the same second is seen as a change.
func WriteFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Make sure the mtime moves even within one second.
	future := time.Now().Add(time.Duration(len(text)) * time.Millisecond)
	_ = os.Chtimes(path, future, future)
}
