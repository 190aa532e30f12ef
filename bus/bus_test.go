package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// testStage consumes kb.query.test on KB_QUERY (limits retention, so the test
// can read the stream afterwards).
func testStage(t *testing.T, b *bus.Bus, name string) bus.StageSpec {
	t.Helper()
	spec := bus.StageSpec{Name: name, Stream: stage.StreamQuery, Filters: []string{"kb.query." + name},
		AckWait: 2 * time.Second, MaxDeliver: 3}
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Stages: []bus.StageSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	return spec
}

func run(t *testing.T, b *bus.Bus, spec bus.StageSpec, h bus.Handler) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.RunStage(ctx, spec, h, bus.RunOptions{NakBase: 50 * time.Millisecond, NakMax: 200 * time.Millisecond, StatsEvery: 100 * time.Millisecond})
	}()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stage %s: %v", spec.Name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("stage %s did not stop", spec.Name)
		}
	}
	t.Cleanup(stop)
	return cancel
}

func publishRaw(t *testing.T, b *bus.Bus, subject, id string, data []byte) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(bus.HeaderTraceID, "trace-"+id)
	if _, err := b.JS.PublishMsg(context.Background(), m, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func deadLetters(t *testing.T, b *bus.Bus, stage string) []bus.DeadLetter {
	t.Helper()
	dl, err := b.DeadLetters(context.Background(), stage)
	if err != nil {
		t.Fatal(err)
	}
	return dl
}

func TestRunStageRedeliversATransientErrorUntilItSucceeds(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "flaky")
	var calls atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		if calls.Add(1) < 3 {
			return nil, errors.New("database is busy")
		}
		return nil, nil
	}))
	publishRaw(t, b, "kb.query.flaky", "m1", []byte(`{}`))
	waitFor(t, "third delivery", func() bool { return calls.Load() >= 3 })
	time.Sleep(300 * time.Millisecond)
	if got := calls.Load(); got != 3 {
		t.Errorf("handler called %d times, want 3 (acked on the third)", got)
	}
	if dl := deadLetters(t, b, "flaky"); len(dl) != 0 {
		t.Errorf("a message that finally succeeded was dead-lettered: %+v", dl)
	}
}

func TestRunStageDeadLettersAPermanentErrorAtOnceWithItsReason(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "strict")
	var calls atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		calls.Add(1)
		return nil, bus.Permanent(errors.New("field doc_id is missing"))
	}))
	publishRaw(t, b, "kb.query.strict", "m1", []byte(`{"x":1}`))
	waitFor(t, "dead letter", func() bool { return len(deadLetters(t, b, "strict")) == 1 })
	dl := deadLetters(t, b, "strict")[0]
	if dl.Reason != "field doc_id is missing" || dl.Subject != "kb.query.strict" || dl.Delivered != 1 || string(dl.Data) != `{"x":1}` || dl.TraceID != "trace-m1" {
		t.Errorf("dead letter = %+v", dl)
	}
	time.Sleep(300 * time.Millisecond)
	if calls.Load() != 1 {
		t.Errorf("permanent failure retried: %d calls", calls.Load())
	}
}

func TestRunStageDeadLettersMalformedEventsAndKeepsGoing(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "decode")
	var good atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		if _, err := bus.Decode[*schemas.DocChanged](m); err != nil {
			return nil, err
		}
		good.Add(1)
		return nil, nil
	}))
	publishRaw(t, b, "kb.query.decode", "bad1", []byte(`{not json`))
	publishRaw(t, b, "kb.query.decode", "bad2", []byte(`{"type":"kb.nope.v9"}`))
	publishRaw(t, b, "kb.query.decode", "ok", []byte(`{"type":"kb.doc.changed.v1","doc_id":"d1","hash":"h"}`))
	waitFor(t, "two dead letters and one success", func() bool {
		return len(deadLetters(t, b, "decode")) == 2 && good.Load() == 1
	})
	for _, dl := range deadLetters(t, b, "decode") {
		if !(len(dl.Reason) > 0 && (contains(dl.Reason, "malformed") || contains(dl.Reason, "unknown event type"))) {
			t.Errorf("reason %q does not say what was wrong", dl.Reason)
		}
	}
}

func TestRunStageDeadLettersAfterMaxDeliveries(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "doomed")
	var calls atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		calls.Add(1)
		return nil, errors.New("provider unavailable")
	}))
	publishRaw(t, b, "kb.query.doomed", "m1", []byte(`{}`))
	waitFor(t, "dead letter", func() bool { return len(deadLetters(t, b, "doomed")) == 1 })
	dl := deadLetters(t, b, "doomed")[0]
	if dl.Delivered != 3 || !contains(dl.Reason, "gave up after 3 deliveries") || !contains(dl.Reason, "provider unavailable") {
		t.Errorf("dead letter = %+v", dl)
	}
	if calls.Load() != 3 {
		t.Errorf("handler called %d times, want MaxDeliver=3", calls.Load())
	}
}

func TestRunStageIgnoresADuplicateMessageID(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "dedup")
	var calls atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		calls.Add(1)
		return nil, nil
	}))
	publishRaw(t, b, "kb.query.dedup", "same", []byte(`{}`))
	publishRaw(t, b, "kb.query.dedup", "same", []byte(`{}`))
	publishRaw(t, b, "kb.query.dedup", "other", []byte(`{}`))
	waitFor(t, "two deliveries", func() bool { return calls.Load() == 2 })
	time.Sleep(300 * time.Millisecond)
	if calls.Load() != 2 {
		t.Errorf("calls = %d, want 2 (the duplicate dropped)", calls.Load())
	}
}

func TestRunStagePublishesHandlerOutputWithDeterministicIDsBeforeAcking(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "producer")
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		return []schemas.Event{&schemas.DocChanged{DocID: "d1", Hash: "abc", Source: "markdown"}}, nil
	}))
	sub, err := b.NC.SubscribeSync(schemas.SubjectDocChanged)
	if err != nil {
		t.Fatal(err)
	}
	// A consumer must exist for KB_INGEST (interest retention) to keep it.
	publishRaw(t, b, "kb.query.producer", "m1", []byte(`{}`))
	nm, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := nm.Header.Get("Nats-Msg-Id"); got != "doc:d1@abc:0" {
		t.Errorf("Nats-Msg-Id = %q", got)
	}
	if got := nm.Header.Get(bus.HeaderTraceID); got != "trace-m1" {
		t.Errorf("trace id not carried to the output: %q", got)
	}
	ev, err := schemas.Decode(nm.Data)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Env().Type != schemas.TypeDocChangedV1 || ev.Env().TraceID != "trace-m1" {
		t.Errorf("envelope = %+v", ev.Env())
	}
}

func TestReplayRepublishesADeadLetterAndRemovesIt(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "replay")
	var fail atomic.Bool
	fail.Store(true)
	var ok atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		if fail.Load() {
			return nil, bus.Permanent(errors.New("not yet"))
		}
		ok.Add(1)
		return nil, nil
	}))
	publishRaw(t, b, "kb.query.replay", "m1", []byte(`{"n":1}`))
	waitFor(t, "dead letter", func() bool { return len(deadLetters(t, b, "replay")) == 1 })
	fail.Store(false)
	n, err := b.Replay(context.Background(), deadLetters(t, b, "replay"))
	if err != nil || n != 1 {
		t.Fatalf("replay = %d, %v", n, err)
	}
	waitFor(t, "replayed message handled", func() bool { return ok.Load() == 1 })
	if dl := deadLetters(t, b, "replay"); len(dl) != 0 {
		t.Errorf("replayed dead letter still listed: %+v", dl)
	}
}

func TestStageTotalsSumFlushedCounters(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "counted")
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) { return nil, nil }))
	for _, id := range []string{"a", "b", "c"} {
		publishRaw(t, b, "kb.query.counted", id, []byte(`{}`))
	}
	kv, err := b.KV(context.Background(), bus.BucketStats)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 acks in stats", func() bool {
		tot, err := bus.StageTotals(context.Background(), kv)
		return err == nil && tot["counted"].Acked == 3
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestAMessageThatKeepsKillingItsWorkersIsDeadLetteredFromTheAdvisory covers
// deliveries that never return a result: workers that fetched the message and
// died. After MaxDeliver such deliveries the server's MAX_DELIVERIES advisory
// makes a running stage copy it to the DLQ and remove it from the work stream.
func TestAMessageThatKeepsKillingItsWorkersIsDeadLetteredFromTheAdvisory(t *testing.T) {
	b := stagetest.New(t)
	spec := bus.StageSpec{Name: "crashy", Stream: stage.StreamQuery, Filters: []string{"kb.query.crashy"},
		AckWait: 300 * time.Millisecond, MaxDeliver: 2}
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Stages: []bus.StageSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	// Two "workers" take the message, one after the other, and die without acking.
	cons, err := b.JS.Consumer(context.Background(), spec.Stream, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	publishRaw(t, b, "kb.query.crashy", "boom", []byte(`{"poison":true}`))
	for dead := 0; dead < 2; {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for range batch.Messages() {
			dead++ // fetched, never acked: the worker died
		}
	}
	// A healthy stage is running when the last lease runs out.
	var calls atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		calls.Add(1)
		return nil, nil
	}))
	waitFor(t, "advisory dead letter", func() bool { return len(deadLetters(t, b, "crashy")) == 1 })
	dl := deadLetters(t, b, "crashy")[0]
	if !strings.Contains(dl.Reason, "max deliveries (2)") || dl.Subject != "kb.query.crashy" {
		t.Errorf("dead letter = %+v", dl)
	}
	if calls.Load() != 0 {
		t.Errorf("the message was delivered past MaxDeliver (%d calls)", calls.Load())
	}
	st, _ := b.JS.Stream(context.Background(), spec.Stream)
	if _, err := st.GetMsg(context.Background(), dl.StreamSeq); err == nil {
		t.Error("the poison message is still in the work stream")
	}
}

// batchOf is a BatchHandler that records batch sizes; a message whose data is
// "bad" fails permanently, "flaky" fails the first time.
type batchOf struct {
	mu      sync.Mutex
	sizes   []int
	handled map[string]int
}

func (h *batchOf) Handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	o := h.HandleBatch(ctx, []*bus.Msg{m})[0]
	return o.Out, o.Err
}

func (h *batchOf) HandleBatch(ctx context.Context, msgs []*bus.Msg) []bus.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(msgs) == 0 {
		return nil
	}
	h.sizes = append(h.sizes, len(msgs))
	out := make([]bus.Outcome, len(msgs))
	for i, m := range msgs {
		key := string(m.Data)
		h.handled[key]++
		switch {
		case key == `"bad"`:
			out[i].Err = bus.Permanent(errors.New("bad input"))
		case key == `"flaky"` && h.handled[key] == 1:
			out[i].Err = errors.New("try again")
		}
	}
	return out
}

func TestABatchHandlerSeesWholeBatchesAndEachOutcomeSettlesItsOwnMessage(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "batchy")
	for i := 0; i < 20; i++ {
		publishRaw(t, b, "kb.query.batchy", fmt.Sprintf("m%d", i), []byte(fmt.Sprintf(`"ok-%d"`, i)))
	}
	publishRaw(t, b, "kb.query.batchy", "bad", []byte(`"bad"`))
	publishRaw(t, b, "kb.query.batchy", "flaky", []byte(`"flaky"`))
	h := &batchOf{handled: map[string]int{}}
	run(t, b, spec, h)
	waitFor(t, "the flaky message's retry", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.handled[`"flaky"`] >= 2
	})
	waitFor(t, "the bad message's dead letter", func() bool { return len(deadLetters(t, b, "batchy")) == 1 })
	h.mu.Lock()
	defer h.mu.Unlock()
	// How many messages one fetch returns depends on timing; the outcomes
	// below must hold whichever way the messages were grouped.
	t.Logf("batch sizes %v", h.sizes)
	for i := 0; i < 20; i++ {
		if n := h.handled[fmt.Sprintf(`"ok-%d"`, i)]; n != 1 {
			t.Errorf("ok-%d handled %d times, want once", i, n)
		}
	}
	if n := h.handled[`"bad"`]; n != 1 {
		t.Errorf("the permanently bad message was handled %d times", n)
	}
}

func TestOnPublishedRunsOnlyAfterASuccessAndItsFailureRetriesTheMessage(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "stateful")
	var handled, saved, failedSaves atomic.Int32
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		n := handled.Add(1)
		m.OnPublished(func(context.Context) error {
			if failedSaves.Load() == 0 {
				failedSaves.Add(1)
				return errors.New("state bucket is full")
			}
			saved.Add(1)
			return nil
		})
		if n == 1 {
			return nil, errors.New("publish failed") // its state must not be saved
		}
		return []schemas.Event{&schemas.DocChanged{DocID: "d1", Hash: "abc", Source: "markdown"}}, nil
	}))
	publishRaw(t, b, "kb.query.stateful", "m1", []byte(`{}`))
	waitFor(t, "the state saved", func() bool { return saved.Load() == 1 })
	time.Sleep(300 * time.Millisecond)
	// 1: the handler fails; 2: its state fails to save; 3: saved and acked.
	if h, f, s := handled.Load(), failedSaves.Load(), saved.Load(); h != 3 || f != 1 || s != 1 {
		t.Errorf("handled %d times, %d failed saves, %d saves; want 3, 1, 1", h, f, s)
	}
	if dl := deadLetters(t, b, "stateful"); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
}
