package system_test

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/stage"
)

// embedsMaxBytes is the KB_EMBEDS bucket's byte limit as the server holds it.
func embedsMaxBytes(t *testing.T, sys *system.System) int64 {
	t.Helper()
	s, err := sys.Bus.JS.Stream(context.Background(), "KV_"+stage.BucketEmbeds)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config.MaxBytes
}

func startLimited(t *testing.T, dir string, maxStore, embeds int64) (*system.System, error) {
	t.Helper()
	sys, err := system.Start(context.Background(), system.Config{DataDir: dir, Listen: "127.0.0.1:-1", NoModels: true,
		MaxStore: maxStore, EmbedsCache: embeds, Log: testLog(t)})
	if err == nil {
		t.Cleanup(func() { _ = sys.Stop() })
	}
	return sys, err
}

func TestStorageLimitsFollowTheSettings(t *testing.T) {
	const mib = 1 << 20
	t.Run("a small JetStream store starts with the embedding cache an eighth of it", func(t *testing.T) {
		sys, err := startLimited(t, t.TempDir(), 64*mib, 0)
		if err != nil {
			t.Fatalf("start with a 64 MiB store: %v", err)
		}
		if got := embedsMaxBytes(t, sys); got != 8*mib {
			t.Fatalf("KB_EMBEDS max bytes %d, want %d", got, 8*mib)
		}
	})
	t.Run("a configured embedding cache is the bucket's limit, and a restart applies a new one", func(t *testing.T) {
		dir := t.TempDir()
		sys, err := startLimited(t, dir, 64*mib, 5*mib)
		if err != nil {
			t.Fatal(err)
		}
		if got := embedsMaxBytes(t, sys); got != 5*mib {
			t.Fatalf("KB_EMBEDS max bytes %d, want %d", got, 5*mib)
		}
		// A stop right after start may report a stage still subscribing
		// as cancelled; only the restart matters here.
		_ = sys.Stop()
		sys, err = startLimited(t, dir, 64*mib, 2*mib)
		if err != nil {
			t.Fatalf("restart with a smaller cache: %v", err)
		}
		if got := embedsMaxBytes(t, sys); got != 2*mib {
			t.Fatalf("after restart KB_EMBEDS max bytes %d, want %d", got, 2*mib)
		}
	})
	t.Run("an embedding cache larger than the store is refused, naming both", func(t *testing.T) {
		_, err := startLimited(t, t.TempDir(), 16*mib, 32*mib)
		if err == nil || !strings.Contains(err.Error(), "embedding cache") || !strings.Contains(err.Error(), "store") {
			t.Fatalf("start error %v, want one about the embedding cache and the store", err)
		}
	})
	t.Run("by default the cache is at most 1 GiB", func(t *testing.T) {
		sys, err := startLimited(t, t.TempDir(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := embedsMaxBytes(t, sys); got <= 0 || got > 1<<30 {
			t.Fatalf("KB_EMBEDS max bytes %d, want within (0, 1 GiB]", got)
		}
	})
}

func TestAttachKeepsTheOwnersEmbeddingCache(t *testing.T) {
	const mib = 1 << 20
	dir := t.TempDir()
	sys, err := startLimited(t, dir, 64*mib, 3*mib)
	if err != nil {
		t.Fatal(err)
	}
	b, local, closeFn, err := system.Attach(context.Background(), system.Config{DataDir: dir, NoModels: true, Log: testLog(t)}, false)
	if err != nil {
		t.Fatalf("attach to the running system: %v", err)
	}
	defer func() { _ = closeFn() }()
	if local {
		t.Fatal("attach started its own system instead of joining the running one")
	}
	_ = b
	if got := embedsMaxBytes(t, sys); got != 3*mib {
		t.Fatalf("after an attach KB_EMBEDS max bytes %d, want the owner's %d", got, 3*mib)
	}
}

func TestACommandStartingTheSystemKeepsTheCacheUpWasGiven(t *testing.T) {
	const mib = 1 << 20
	dir := t.TempDir()
	sys, err := startLimited(t, dir, 64*mib, 24*mib)
	if err != nil {
		t.Fatal(err)
	}
	_ = sys.Stop()
	// ingest, search... start the system themselves, without the setting.
	sys, err = startLimited(t, dir, 64*mib, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := embedsMaxBytes(t, sys); got != 24*mib {
		t.Fatalf("KB_EMBEDS max bytes %d, want the one set before, %d", got, 24*mib)
	}
	_ = sys.Stop()
	// A store made smaller than the cache resizes it.
	sys, err = startLimited(t, dir, 16*mib, 0)
	if err != nil {
		t.Fatalf("start with a store smaller than the cache: %v", err)
	}
	if got := embedsMaxBytes(t, sys); got != 16*mib/8 {
		t.Fatalf("KB_EMBEDS max bytes %d, want %d", got, 16*mib/8)
	}
}
