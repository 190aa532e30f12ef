package bus_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// TestAReplayedDeadLetterThatFailsAgainIsListedOnce replays the dead letter of
// one of two stages that read the same subject: only that stage sees the
// replay, so the other stage's dead letter is not doubled, and the replayed
// one, failing again, is listed once.
func TestAReplayedDeadLetterThatFailsAgainIsListedOnce(t *testing.T) {
	b := stagetest.New(t)
	a := bus.StageSpec{Name: "first", Stream: stage.StreamQuery, Filters: []string{"kb.query.shared"}, AckWait: 2 * time.Second, MaxDeliver: 3}
	o := bus.StageSpec{Name: "second", Stream: stage.StreamQuery, Filters: []string{"kb.query.shared"}, AckWait: 2 * time.Second, MaxDeliver: 3}
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Stages: []bus.StageSpec{a, o}}); err != nil {
		t.Fatal(err)
	}
	var firstCalls, secondCalls atomic.Int32
	run(t, b, a, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		firstCalls.Add(1)
		return nil, bus.Permanent(errors.New("still broken"))
	}))
	run(t, b, o, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		secondCalls.Add(1)
		return nil, bus.Permanent(errors.New("broken here too"))
	}))
	publishRaw(t, b, "kb.query.shared", "m1", []byte(`{"n":1}`))
	waitFor(t, "two dead letters", func() bool { return len(deadLetters(t, b, "")) == 2 })

	n, err := b.Replay(context.Background(), deadLetters(t, b, "first"))
	if err != nil || n != 1 {
		t.Fatalf("replay = %d, %v", n, err)
	}
	waitFor(t, "the replayed message handled again", func() bool { return firstCalls.Load() == 2 })
	time.Sleep(300 * time.Millisecond)
	if got := secondCalls.Load(); got != 1 {
		t.Errorf("the other stage handled the replay of first's dead letter: %d calls", got)
	}
	if dl := deadLetters(t, b, ""); len(dl) != 2 {
		t.Errorf("%d dead letters after a replay failed again, want 2 (one per stage): %+v", len(dl), dl)
	}
	counts, err := b.DeadLetterCounts(context.Background())
	if err != nil || counts["first"] != 1 || counts["second"] != 1 {
		t.Errorf("dead-letter counts = %v, %v; want first 1, second 1", counts, err)
	}
}

func TestPurgeRemovesTheGivenDeadLettersOrAll(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "purged")
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		return nil, bus.Permanent(errors.New("bad"))
	}))
	for _, id := range []string{"a", "b", "c"} {
		publishRaw(t, b, "kb.query.purged", id, []byte(`{}`))
	}
	waitFor(t, "three dead letters", func() bool { return len(deadLetters(t, b, "purged")) == 3 })
	all := deadLetters(t, b, "purged")
	n, err := b.PurgeDeadLetters(context.Background(), all[1:2])
	if err != nil || n != 1 {
		t.Fatalf("purge one = %d, %v", n, err)
	}
	left := deadLetters(t, b, "purged")
	if len(left) != 2 || left[0].Seq != all[0].Seq || left[1].Seq != all[2].Seq {
		t.Errorf("after purging #%d: %+v", all[1].Seq, left)
	}
	if n, err := b.PurgeDeadLetters(context.Background(), left); err != nil || n != 2 {
		t.Fatalf("purge the rest = %d, %v", n, err)
	}
	if left := deadLetters(t, b, ""); len(left) != 0 {
		t.Errorf("dead letters left after purging all: %+v", left)
	}
}

// A stage's backlog counts a message as soon as its publish is acknowledged.
// The server tells consumers about a new message asynchronously, after the
// publisher's ack, so a consumer's own pending count can lag; a caller that
// waits for the pipeline to be idle must not see "nothing pending" then.
func TestStageStatesCountAMessageAsSoonAsItsPublishIsAcknowledged(t *testing.T) {
	b := stagetest.New(t)
	ctx := context.Background()
	spec := bus.StageSpec{Name: "backlog", Stream: stage.StreamQuery, Filters: []string{"kb.query.backlog"}}
	if err := bus.EnsureTopology(ctx, b.JS, bus.Topology{Stages: []bus.StageSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	var lagged int
	for i := 1; i <= 300; i++ {
		if _, err := b.JS.Publish(ctx, "kb.query.backlog", []byte("x")); err != nil {
			t.Fatal(err)
		}
		states, err := b.StageStates(ctx, []bus.StageSpec{spec})
		if err != nil {
			t.Fatal(err)
		}
		if states[0].Pending == 0 && states[0].AckPending == 0 {
			lagged++
		}
	}
	if lagged > 0 {
		t.Fatalf("%d of 300 times the stage read idle right after a message for it was published", lagged)
	}
}
