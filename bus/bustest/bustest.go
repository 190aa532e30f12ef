// Package bustest runs a real embedded NATS server with JetStream for tests.
package bustest

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/workers/stage"
)

// New starts an embedded JetStream server on a free port with its store in a
// temporary directory, creates the application's streams and KV buckets
// (workers/stage) and the consumers of the given stages, and returns a
// connected bus. The server stops when the test ends.
func New(t testing.TB, stages ...bus.StageSpec) *bus.Bus {
	t.Helper()
	b, err := bus.Open(context.Background(), bus.Options{
		Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"},
		Log:    zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(b.Close)
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Streams: stage.Streams(), Stages: stages, Buckets: stage.Buckets()}); err != nil {
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
