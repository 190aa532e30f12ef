package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

func TestIsFailoverTellsAClusterBetweenLeadersFromOtherFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a request that got no answer in time is one", fmt.Errorf("kv get x: %w", context.DeadlineExceeded), true},
		{"a publish whose stream did not answer is one", fmt.Errorf("publish x: %w", jetstream.ErrNoStreamResponse), true},
		{"a lost asynchronous publish ack is one", jetstream.ErrAsyncPublishTimeout, true},
		{"no responders is one", nats.ErrNoResponders, true},
		{"a connection between nodes is one", nats.ErrConnectionReconnecting, true},
		{"a cluster without a leader is one", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{"success is none", nil, false},
		{"a cancelled context is none", context.Canceled, false},
		{"a missing stream is none", jetstream.ErrStreamNotFound, false},
		{"a full store is none", &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}, false},
		{"a wrong password is none", nats.ErrAuthorization, false},
		{"any other error is none", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bus.IsFailover(tc.err); got != tc.want {
				t.Errorf("IsFailover(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestPublishesWaitForAStreamThatIsBetweenLeaders: events published while
// no server answers for their stream (as between a dead leader and its
// successor; here, before the stream exists) are sent again until it
// answers, and it holds each once.
func TestPublishesWaitForAStreamThatIsBetweenLeaders(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	var evs []schemas.Event
	for i := range 20 {
		evs = append(evs, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("q%02d", i), Question: "what?"}})
	}
	done := make(chan error, 2)
	go func() { done <- bus.PublishAll(ctx, b.JS, evs[:10], "t") }()
	go func() {
		for _, ev := range evs[10:] {
			if _, err := b.Publish(ctx, ev, "t"); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := bus.EnsureTopology(ctx, b.JS, bus.Topology{Streams: stage.Streams()}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("a publish before its stream answered: %v", err)
			}
		case <-time.After(bus.FailoverBudget):
			t.Fatal("the publishes did not finish")
		}
	}
	s, err := b.JS.Stream(ctx, stage.StreamQuery)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 20 {
		t.Errorf("%s holds %d messages, want 20", stage.StreamQuery, info.State.Msgs)
	}
}
