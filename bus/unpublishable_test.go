package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// TestAnOutputThatCannotBePublishedIsDeadLetteredAtOnce: a handler's output
// whose message id alone is over NATS's max payload (a document id of
// 2 MB; the body goes to the payload store, the id cannot) can never be
// published. The message used to be retried until its deliveries ran out,
// and its dead letter, quoting the id in its reason, was too large to
// publish too, so it went round for ever. It is dead-lettered on its first
// delivery, with a bounded reason that says why.
func TestAnOutputThatCannotBePublishedIsDeadLetteredAtOnce(t *testing.T) {
	for _, tc := range []struct{ name, id string }{
		{"an English document id of 2 MB", strings.Repeat("notes/", 2<<20/6)},
		{"a Russian document id of 2 MB", strings.Repeat("заметки/", 2<<20/15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := stagetest.New(t)
			spec := testStage(t, b, "bloat")
			spec.MaxDeliver = 5
			var calls atomic.Int32
			run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
				calls.Add(1)
				return []schemas.Event{&schemas.DocChanged{DocID: tc.id, Hash: "abc", Source: "markdown"}}, nil
			}))
			publishRaw(t, b, "kb.query.bloat", "m1", []byte(`{"x":1}`))
			waitFor(t, "dead letter", func() bool { return len(deadLetters(t, b, "bloat")) == 1 })
			dl := deadLetters(t, b, "bloat")[0]
			if !strings.Contains(dl.Reason, "cannot be published") || !strings.Contains(dl.Reason, "maximum") || len(dl.Reason) > 4096 {
				t.Errorf("reason (%d bytes) does not say why in brief: %.300s", len(dl.Reason), dl.Reason)
			}
			if string(dl.Data) != `{"x":1}` || dl.Delivered != 1 {
				t.Errorf("dead letter = data %q, delivered %d", dl.Data, dl.Delivered)
			}
			time.Sleep(500 * time.Millisecond)
			if n := calls.Load(); n != 1 {
				t.Errorf("an unpublishable output was retried: %d calls", n)
			}
		})
	}
}
