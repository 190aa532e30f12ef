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
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
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

func TestAnEmbeddedServerBeyondLoopbackRefusesToStartWithoutTLS(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	creds := bus.Credentials{User: "exo", Password: "pa55"}
	_, err := bus.Open(ctx, bus.Options{Creds: creds, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "0.0.0.0:-1"}})
	if !errors.Is(err, bus.ErrNoTLS) || errors.Is(err, bus.ErrNoCredentials) || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("open on 0.0.0.0 with credentials and without TLS: %v", err)
	}
	_, err = bus.Open(ctx, bus.Options{Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "0.0.0.0:-1"}})
	if !errors.Is(err, bus.ErrNoTLS) || !errors.Is(err, bus.ErrNoCredentials) {
		t.Fatalf("open on 0.0.0.0 without credentials or TLS names both: %v", err)
	}
	// With both it starts, and the client of the embedded server trusts
	// the server's own certificate, though 0.0.0.0 is not a name in it.
	srv, err := bus.Open(ctx, bus.Options{Creds: creds, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "0.0.0.0:-1", TLS: bustest.TLS(t, "127.0.0.1")}})
	if err != nil {
		t.Fatalf("open on 0.0.0.0 with credentials and TLS: %v", err)
	}
	srv.Close()
}

func TestAServerWithTLSAdmitsOnlyClientsThatTrustItsCertificate(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	files := bustest.TLS(t, "127.0.0.1")
	creds := bus.Credentials{User: "exo", Password: "pa55"}
	srv, err := bus.Open(ctx, bus.Options{Creds: creds, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", TLS: files}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.Server.ClientURL()
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("the server's URL %s is not tls://", url)
	}
	c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds, TLS: bus.TLSFiles{CA: files.CA}})
	if err != nil {
		t.Fatalf("a client that trusts the CA: %v", err)
	}
	if _, err := c.JS.AccountInfo(ctx); err != nil {
		t.Errorf("JetStream over TLS: %v", err)
	}
	c.Close()
	if c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds}); err == nil || !strings.Contains(err.Error(), "certificate") {
		if c != nil {
			c.Close()
		}
		t.Errorf("a client without the CA: %v", err)
	}
	if c, err := bus.Open(ctx, bus.Options{URL: strings.Replace(url, "tls://", "nats://", 1), Creds: creds, TLS: bus.TLSFiles{CA: files.CA}}); err != nil {
		t.Errorf("a nats:// URL with the CA upgrades to TLS: %v", err)
	} else {
		c.Close()
	}
	other := bustest.TLS(t, "127.0.0.1")
	if c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds, TLS: bus.TLSFiles{CA: other.CA}}); err == nil {
		c.Close()
		t.Error("a client that trusts another CA connected")
	}
	if c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds, TLS: bus.TLSFiles{Pin: other.Cert}}); err == nil {
		c.Close()
		t.Error("a client pinned to another certificate connected")
	}
	if c, err := bus.Open(ctx, bus.Options{URL: url, Creds: creds, TLS: bus.TLSFiles{Pin: files.Cert}}); err != nil {
		t.Errorf("a client pinned to the server's certificate: %v", err)
	} else {
		c.Close()
	}
	if !bus.Reachable(url) {
		t.Error("Reachable says no to a TLS server")
	}
}

func TestAServerAdmitsEachOfItsCredentialsAndTheDataDirectorysSeedIsWrittenOnce(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	seed := filepath.Join(t.TempDir(), "nats.nk")
	nk, created, err := bus.EnsureNKeySeed(seed)
	if err != nil || !created {
		t.Fatalf("first EnsureNKeySeed: created %v, %v", created, err)
	}
	if fi, err := os.Stat(seed); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the seed file: %v %v, want mode 0600", fi.Mode(), err)
	}
	first, _ := os.ReadFile(seed)
	again, created, err := bus.EnsureNKeySeed(seed)
	if now, _ := os.ReadFile(seed); err != nil || created || again != nk || string(now) != string(first) {
		t.Fatalf("second EnsureNKeySeed: created %v, %v; the seed changed: %v", created, err, string(now) != string(first))
	}
	user := bus.Credentials{User: "exo", Password: "pa55"}
	srv, err := bus.Open(ctx, bus.Options{Creds: nk, Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", Auth: []bus.Credentials{user}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.Server.ClientURL()
	for _, c := range []bus.Credentials{nk, user} {
		b, err := bus.Open(ctx, bus.Options{URL: url, Creds: c})
		if err != nil {
			t.Errorf("a client with %s: %v", c, err)
			continue
		}
		b.Close()
	}
	_, err = bus.Open(ctx, bus.Options{URL: url})
	if !errors.Is(err, bus.ErrNotAuthorized) || !strings.Contains(err.Error(), "no credentials") {
		t.Errorf("a client without credentials: %v", err)
	}
}

func TestAKeyFoundRatherThanGivenIsSentOnlyToAServerThatAsks(t *testing.T) {
	clearNATSEnv(t)
	ctx := context.Background()
	open := stagetest.New(t) // a server without authentication
	nk, _, err := bus.EnsureNKeySeed(filepath.Join(t.TempDir(), "nats.nk"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := bus.Open(ctx, bus.Options{URL: open.Server.ClientURL(), Creds: nk}); err == nil {
		c.Close()
		t.Fatal("nats.go sent an nkey to a server without authentication; CredsIfAsked is not needed")
	}
	c, err := bus.Open(ctx, bus.Options{URL: open.Server.ClientURL(), Creds: nk, CredsIfAsked: true})
	if err != nil {
		t.Fatalf("a found key and a server without authentication: %v", err)
	}
	c.Close()
}
