package bus_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// BenchmarkBusOverheadPerEvent measures what the bus adds to one event:
// a JetStream publish (with a message id, file store), fetch, the middleware
// chain, the handler call (a no-op) and the ack. ns/op is per event.
func BenchmarkBusOverheadPerEvent(b *testing.B) {
	bb := stagetest.New(b)
	spec := bus.StageSpec{Name: "bench", Stream: stage.StreamQuery, Filters: []string{"kb.query.bench"}}
	if err := bus.EnsureTopology(context.Background(), bb.JS, bus.Topology{Stages: []bus.StageSpec{spec}}); err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = bb.RunStage(ctx, spec, bus.HandlerFunc(func(context.Context, *bus.Msg) ([]schemas.Event, error) {
			handled.Add(1)
			return nil, nil
		}), bus.RunOptions{Batch: 256})
	}()
	payload := []byte(`{"type":"kb.query.bench.v1","question":"how do I make a database view?"}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := nats.NewMsg("kb.query.bench")
		m.Data = payload
		if _, err := bb.JS.PublishMsgAsync(m, jetstream.WithMsgID(fmt.Sprint("bench-", i))); err != nil {
			b.Fatal(err)
		}
	}
	<-bb.JS.PublishAsyncComplete()
	for handled.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	cancel()
	<-done
}
