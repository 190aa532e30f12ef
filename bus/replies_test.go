package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// querySpec is a first stage on the query path, as the retrieve stage's.
var querySpec = bus.StageSpec{Name: "retrieve", Stream: stage.StreamQuery, Filters: []string{schemas.SubjectQuery}}

func reranked(id, text string) *schemas.QueryReranked {
	return &schemas.QueryReranked{Query: schemas.Query{QueryID: id, Question: text}, Mode: "lexical",
		Contexts: []schemas.Context{{Rank: 1, Source: "lexical", Passage: schemas.Passage{ChunkID: "c-" + id, DocID: "d", Text: text}}}}
}

func next(t *testing.T, w *bus.Reply, within time.Duration) (schemas.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return w.Next(ctx)
}

func TestEachWaiterGetsOnlyTheReplyOfItsOwnID(t *testing.T) {
	b := stagetest.New(t)
	other := bustest.Connect(t, b) // the stage, another process
	ru, err := b.Expect(schemas.SubjectReranked, "q-ru")
	if err != nil {
		t.Fatal(err)
	}
	defer ru.Close()
	en, err := b.Expect(schemas.SubjectReranked, "q-en")
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	ctx := context.Background()
	for _, ev := range []*schemas.QueryReranked{
		reranked("q-nobody", "a query of another process"),
		reranked("q-en", "Crows use sticks to get food."),
		reranked("q-ru", "Вороны используют палочки, чтобы доставать еду."),
	} {
		if _, err := other.Publish(ctx, ev, ev.QueryID); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		w    *bus.Reply
		id   string
		text string
	}{
		{"the Russian query's waiter gets the Russian contexts", ru, "q-ru", "Вороны используют палочки, чтобы доставать еду."},
		{"the English query's waiter gets the English contexts", en, "q-en", "Crows use sticks to get food."},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := next(t, c.w, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			r := ev.(*schemas.QueryReranked)
			if r.QueryID != c.id || r.Contexts[0].Text != c.text {
				t.Errorf("got %s %q", r.QueryID, r.Contexts[0].Text)
			}
			if ev, err := next(t, c.w, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a second event came: %v %v", ev, err)
			}
		})
	}
}

func TestAWaiterClosedGetsNothingAndAnotherOfTheSameIDStillDoes(t *testing.T) {
	b := stagetest.New(t)
	gone, err := b.Expect(schemas.SubjectAnswerDone, "q-1")
	if err != nil {
		t.Fatal(err)
	}
	stays, err := b.Expect(schemas.SubjectAnswerDone, "q-1")
	if err != nil {
		t.Fatal(err)
	}
	defer stays.Close()
	gone.Close()
	gone.Close() // twice is fine
	if _, err := b.Publish(context.Background(), &schemas.AnswerDone{QueryID: "q-1", Mode: schemas.AnswerSearchOnly, Answer: "Вороны"}, "q-1"); err != nil {
		t.Fatal(err)
	}
	if ev, err := next(t, stays, 5*time.Second); err != nil || ev.(*schemas.AnswerDone).Answer != "Вороны" {
		t.Fatalf("the waiter left: %v %v", ev, err)
	}
	if ev, err := next(t, gone, 200*time.Millisecond); err == nil {
		t.Errorf("a closed waiter got %v", ev)
	}
}

func TestAReplyTooLargeForOneMessageIsReadBackFromThePayloadStore(t *testing.T) {
	b := smallBus(t) // 64 KiB messages
	w, err := b.Expect(schemas.SubjectReranked, "q-big")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	text := strings.Repeat("Вороны используют палочки. Crows use sticks. ", 5000) // ~300 KB
	if _, err := b.Publish(context.Background(), reranked("q-big", text), "q-big"); err != nil {
		t.Fatal(err)
	}
	ev, err := next(t, w, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r := ev.(*schemas.QueryReranked); r.QueryID != "q-big" || r.Contexts[0].Text != text {
		t.Errorf("got %s with %d bytes of text", r.QueryID, len(r.Contexts[0].Text))
	}
}

func TestATimeoutSaysWhatHeldTheReplyUp(t *testing.T) {
	for _, c := range []struct {
		name   string
		stages []bus.StageSpec // consumers created
		worker func(t *testing.T, b *bus.Bus)
		want   []string
	}{
		{name: "a stage that never ran is named as having no consumer",
			want: []string{"stage retrieve has no consumer on KB_QUERY", "exocortex worker --stage retrieve"}},
		{name: "a stage whose consumer has no worker is named with the queue",
			stages: []bus.StageSpec{querySpec},
			want:   []string{"stage retrieve has no worker taking work: 1 messages queued", "this request is still queued"}},
		{name: "a busy stage is named with its queue and what it holds",
			stages: []bus.StageSpec{querySpec},
			worker: func(t *testing.T, b *bus.Bus) {
				run(t, b, querySpec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
					time.Sleep(2 * time.Second) // slower than the wait
					return nil, nil
				}))
			},
			want: []string{"stage retrieve is busy: 0 messages queued, 1 in hand, it holds this request"}},
		{name: "a request the stages took and answered nothing to is said to be dead-lettered or lost",
			stages: []bus.StageSpec{querySpec},
			worker: func(t *testing.T, b *bus.Bus) {
				run(t, b, querySpec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
					return nil, nil
				}))
			},
			want: []string{"every stage on the way is idle with nothing queued", "exocortex dlq list"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := stagetest.New(t, c.stages...)
			if c.worker != nil {
				c.worker(t, b)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q-late", Question: "Что едят вороны?"}}
			_, err := b.AwaitReply(ctx, schemas.SubjectReranked, q.QueryID, q, []bus.StageSpec{querySpec})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want one wrapping context.DeadlineExceeded", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "no reply on kb.query.reranked within") {
				t.Errorf("%q does not name the subject and the query", err)
			}
		})
	}
}

func slowStat(subject string) (bus.SlowConsumerStat, bool) {
	for _, s := range bus.SlowConsumerStats() {
		if s.Subject == subject {
			return s, true
		}
	}
	return bus.SlowConsumerStat{}, false
}

func TestASlowConsumerIsLoggedWithItsSubjectAndCounted(t *testing.T) {
	for _, s := range bus.ReplySubjects {
		if _, ok := slowStat(s); !ok {
			t.Errorf("%s has no slow-consumer count before anything happened", s)
		}
	}
	srv := stagetest.New(t)
	var logs syncBuffer
	b, err := bus.Open(context.Background(), bus.Options{URL: srv.Server.ClientURL(), Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const subject = "kb.test.slow"
	before, _ := slowStat(subject)
	release := make(chan struct{})
	sub, err := b.NC.Subscribe(subject, func(*nats.Msg) { <-release })
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	if err := sub.SetPendingLimits(1, 1<<20); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := srv.NC.Publish(subject, []byte("Вороны / crows")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the slow consumer counted", func() bool {
		s, _ := slowStat(subject)
		return s.Episodes > before.Episodes
	})
	if l := logs.String(); !strings.Contains(l, `"subject":"kb.test.slow"`) || !strings.Contains(l, "slow consumer") {
		t.Errorf("log %q does not name the slow consumer's subject", l)
	}
}
