package system_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

func TestASystemAdmitsOnlyTheHoldersOfItsDataDirectorysCredentials(t *testing.T) {
	t.Setenv(bus.EnvNATSUser, "")
	t.Setenv(bus.EnvNATSPassword, "")
	t.Setenv(bus.EnvNATSNKey, "")
	t.Setenv(bus.EnvNATSCreds, "")
	ctx := context.Background()
	dir, other := t.TempDir(), t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "calibration.json")
	if err := os.WriteFile(old, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "todo.txt")
	if err := os.WriteFile(foreign, []byte("not exocortex's"), 0o644); err != nil {
		t.Fatal(err)
	}
	sys, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sys.Stop()
		}
	})
	url := sys.Bus.Server.ClientURL()
	seed, err := os.ReadFile(bus.NKeyFile(dir))
	if err != nil {
		t.Fatalf("the system wrote no credentials: %v", err)
	}

	if b, err := bus.Open(ctx, bus.Options{URL: url, Log: testLog(t)}); !errors.Is(err, bus.ErrNotAuthorized) {
		if err == nil {
			b.Close()
		}
		t.Fatalf("a client without credentials: %v, want ErrNotAuthorized", err)
	}
	// A command on the same data directory finds the system and its key.
	b, local, closeFn, err := system.Attach(ctx, system.Config{DataDir: dir, Log: testLog(t)}, false)
	if err != nil || local {
		t.Fatalf("attach on the data directory: local %v, %v", local, err)
	}
	if _, err := b.KV(ctx, "KB_SOURCES"); err != nil {
		t.Errorf("a bucket through the attached bus: %v", err)
	}
	_ = closeFn()
	// Elsewhere it is told where the credentials are.
	_, _, _, err = system.Attach(ctx, system.Config{DataDir: other, NATSURL: url, Log: testLog(t)}, false)
	if !errors.Is(err, bus.ErrNotAuthorized) || !strings.Contains(err.Error(), bus.NKeyFile(other)) || !strings.Contains(err.Error(), "--nats-creds") {
		t.Errorf("attach from another data directory without credentials: %v", err)
	}
	_, _, closeFn, err = system.Attach(ctx, system.Config{DataDir: other, NATSURL: url, Creds: bus.Credentials{NKeySeedFile: bus.NKeyFile(dir)}, Log: testLog(t)}, false)
	if err != nil {
		t.Fatalf("attach with the seed given explicitly: %v", err)
	}
	_ = closeFn()

	for path, want := range map[string]os.FileMode{
		dir: 0o700, filepath.Join(dir, "nats"): 0o700, old: 0o600,
		foreign: 0o644, bus.NKeyFile(dir): 0o600, bus.URLFile(dir): 0o600, system.DBPath(dir): 0o600, system.CachePath(dir): 0o600,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %04o", path, fi.Mode().Perm(), err, want)
		}
	}

	// The key is made once: a restart keeps it.
	stopped = true
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}
	start(t, dir)
	if again, _ := os.ReadFile(bus.NKeyFile(dir)); string(again) != string(seed) {
		t.Error("a restart wrote new credentials")
	}
}

func TestACommandWithADataDirectorysKeyReachesAnOpenServer(t *testing.T) {
	t.Setenv(bus.EnvNATSNKey, "")
	dir := t.TempDir()
	if _, _, err := bus.EnsureNKeySeed(bus.NKeyFile(dir)); err != nil {
		t.Fatal(err)
	}
	open := stagetest.New(t) // an external server without authentication
	_, _, closeFn, err := system.Attach(context.Background(), system.Config{DataDir: dir, NATSURL: open.Server.ClientURL(), Log: testLog(t)}, false)
	if err != nil {
		t.Fatalf("attach with the data directory's key to a server without authentication: %v", err)
	}
	_ = closeFn()
}
