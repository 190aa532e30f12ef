package bus_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/exocortex/exocortex/bus"
)

func clearNATSEnv(t *testing.T) {
	t.Setenv(bus.EnvNATSUser, "")
	t.Setenv(bus.EnvNATSPassword, "")
	t.Setenv(bus.EnvNATSNKey, "")
}

func TestAnEmbeddedServerBeyondLoopbackRefusesToStartWithoutCredentials(t *testing.T) {
	clearNATSEnv(t)
	_, err := bus.Open(context.Background(), bus.Options{Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "0.0.0.0:-1"}})
	if !errors.Is(err, bus.ErrNoCredentials) || !strings.Contains(err.Error(), bus.EnvNATSUser) {
		t.Fatalf("open on 0.0.0.0 without credentials: %v", err)
	}
}

func TestAServerWithAUserAndPasswordAdmitsOnlyClientsThatSendThem(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	creds := bus.Credentials{User: "exo", Password: "pa55"}
	srv, err := bus.Open(ctx, bus.Options{Creds: creds, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.Server.ClientURL()
	if _, err := bus.Open(ctx, bus.Options{URL: url}); err == nil || !strings.Contains(err.Error(), bus.EnvNATSPassword) {
		t.Fatalf("a client without credentials: %v", err)
	}
	if _, err := bus.Open(ctx, bus.Options{URL: url, Creds: bus.Credentials{User: "exo", Password: "wrong"}}); err == nil {
		t.Fatal("a client with a wrong password connected")
	}
	// From the environment, as a worker started with --nats gets them.
	t.Setenv(bus.EnvNATSUser, "exo")
	t.Setenv(bus.EnvNATSPassword, "pa55")
	c, err := bus.Open(ctx, bus.Options{URL: url})
	if err != nil {
		t.Fatalf("a client with the credentials: %v", err)
	}
	c.Close()
	if !bus.Reachable(url) {
		t.Error("Reachable with the credentials says no")
	}
}

func TestAServerWithAnNKeyAdmitsTheSeedsHolder(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	file := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(file, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	creds := bus.Credentials{NKeySeedFile: file}
	srv, err := bus.Open(ctx, bus.Options{Creds: creds, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.Server.ClientURL()
	if _, err := bus.Open(ctx, bus.Options{URL: url}); err == nil {
		t.Fatal("a client without the nkey connected")
	}
	c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds})
	if err != nil {
		t.Fatalf("a client with the nkey: %v", err)
	}
	c.Close()
	bad := filepath.Join(t.TempDir(), "bad.nk")
	_ = os.WriteFile(bad, []byte("not a seed"), 0o600)
	if err := (bus.Credentials{NKeySeedFile: bad}).Validate(); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a bad seed file: %v", err)
	}
}
