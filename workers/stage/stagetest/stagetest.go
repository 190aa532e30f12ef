// Package stagetest starts a test bus with the application's streams and KV
// buckets (the catalog of workers/stage) on bus/bustest's embedded server.
// It is for tests only; it may import bus, bus/bustest and workers/stage.
package stagetest

import (
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/workers/stage"
)

// New starts an embedded JetStream server on a free port with its store in a
// temporary directory, creates the application's streams and KV buckets
// (stage.Streams, stage.Buckets) and the consumers of the given stages, and
// returns a connected bus. The server stops when the test ends.
func New(t testing.TB, stages ...bus.StageSpec) *bus.Bus {
	t.Helper()
	return bustest.New(t, bus.Topology{Streams: stage.Streams(), Stages: stages, Buckets: stage.Buckets()})
}
