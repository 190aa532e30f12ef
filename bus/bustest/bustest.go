// Package bustest runs a real embedded NATS server with JetStream for tests.
// It knows nothing of the application: the streams, KV buckets and
// consumers to create come as a bus.Topology (workers/stage/stagetest gives
// the application's). It may import bus only, never workers/ or internal/.
package bustest

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
)

// New starts an embedded JetStream server on a free port with its store in a
// temporary directory, creates topo's streams, KV buckets and stage
// consumers, and returns a connected bus. The server stops when the test
// ends.
func New(t testing.TB, topo bus.Topology) *bus.Bus {
	t.Helper()
	b, err := bus.Open(context.Background(), bus.Options{
		Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"},
		Log:    zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(b.Close)
	if err := bus.EnsureTopology(context.Background(), b.JS, topo); err != nil {
		t.Fatalf("topology: %v", err)
	}
	return b
}

// Connect opens a second, independent connection to b's server (a separate
// "process" for a stage that a test kills).
func Connect(t testing.TB, b *bus.Bus) *bus.Bus {
	t.Helper()
	c, err := bus.Open(context.Background(), bus.Options{URL: b.Server.ClientURL(), Log: b.Log})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		if !c.NC.IsClosed() {
			c.Close()
		}
	})
	return c
}
