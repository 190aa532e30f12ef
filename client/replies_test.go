package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/retrieve"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// fakeQueryStage answers every kb.query.submitted at once, from another
// connection (another process): a search gets its kb.query.reranked (a
// dozen contexts of a few hundred bytes, as a real one), a question its
// tokens, its kb.answer.done and its kb.answer.followups. It runs on the
// retrieve stage's durable consumer with workers goroutines.
func fakeQueryStage(t *testing.T, b *bus.Bus, workers int) {
	t.Helper()
	stageBus := bustest.Connect(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
			q, err := bus.Decode[*schemas.QuerySubmitted](m)
			if err != nil {
				return nil, err
			}
			if q.Options.NoAnswer {
				out := &schemas.QueryReranked{Query: schemas.Query{QueryID: q.QueryID, Question: q.Question, Lang: q.Lang}, Searched: q.Question, Mode: "lexical"}
				for i := range 12 {
					out.Contexts = append(out.Contexts, schemas.Context{Rank: i + 1, Score: 1 / float64(i+1), Source: "lexical",
						Passage: schemas.Passage{ChunkID: fmt.Sprintf("c%d", i), DocID: "d", Title: "Вороны / Crows",
							Text: strings.Repeat("Вороны используют палочки, чтобы доставать еду. Crows use sticks to get food. ", 4)}})
				}
				return []schemas.Event{out}, nil
			}
			words := strings.Fields("Вороны используют палочки. Crows use sticks to get food.")
			for i, w := range words {
				tok := &schemas.AnswerToken{QueryID: q.QueryID, Seq: i + 1, Text: w + " ", Final: i == len(words)-1}
				if err := stageBus.PublishCore(tok, m.TraceID); err != nil {
					return nil, err
				}
			}
			return []schemas.Event{
				&schemas.AnswerDone{QueryID: q.QueryID, Question: q.Question, Lang: q.Lang, Mode: schemas.AnswerSearchOnly,
					Answer: strings.Join(words, " ")},
				&schemas.AnswerFollowUps{QueryID: q.QueryID, Lang: q.Lang, FollowUps: []string{"Зачем? / Why? " + q.QueryID}},
			}, nil
		})
		if err := stageBus.RunStage(ctx, retrieve.Stage().Spec(), h, bus.RunOptions{Workers: workers, Batch: 1}); err != nil {
			t.Errorf("fake stage: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// Hundreds of searches and questions in flight at once on one connection
// each get their own reply: none is lost to another's (the waiters used to
// share a 64-slot subscription to the reply subject, and the client dropped
// what did not fit, silently).
func TestHundredsOfQueriesInFlightEachGetTheirOwnReply(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		ask  bool
	}{
		{"three hundred searches at once each get their own contexts", 300, false},
		{"three hundred streamed questions at once each get their tokens, answer and follow-ups", 300, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := stagetest.New(t, retrieve.Stage().Spec())
			fakeQueryStage(t, b, 16)
			const timeout = 15 * time.Second
			start := time.Now()
			var wg sync.WaitGroup
			var completed atomic.Int64
			errs := make(chan error, c.n)
			for i := range c.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					question := fmt.Sprintf("Что вороны используют для еды, вопрос %d?", i)
					if i%2 == 1 {
						question = fmt.Sprintf("What do crows use to get food, question %d?", i)
					}
					id := fmt.Sprintf("q-%d", i)
					q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: id, Question: question, Options: schemas.QueryOptions{NoAnswer: !c.ask}}}
					if !c.ask {
						r, err := client.New(b, client.Options{SearchTimeout: timeout}).Search(context.Background(), q)
						switch {
						case err != nil:
							errs <- err
						case r.QueryID != id || len(r.Contexts) != 12:
							errs <- fmt.Errorf("query %s got %s with %d contexts", id, r.QueryID, len(r.Contexts))
						default:
							completed.Add(1)
						}
						return
					}
					var tokens []string
					done, fu, err := client.New(b, client.Options{AskTimeout: timeout}).Ask(context.Background(), q, client.AskOptions{OnToken: func(tok *schemas.AnswerToken) {
						tokens = append(tokens, tok.Text)
					}, FollowUps: true})
					if err != nil {
						errs <- err
						return
					}
					defer fu.Close()
					qs, ok := fu.Wait(context.Background(), timeout)
					switch {
					case done.QueryID != id:
						errs <- fmt.Errorf("query %s got the answer of %s", id, done.QueryID)
					case len(tokens) != 9:
						errs <- fmt.Errorf("query %s got %d tokens of 9: %q", id, len(tokens), tokens)
					case !ok || len(qs) != 1 || !strings.HasSuffix(qs[0], " "+id):
						errs <- fmt.Errorf("query %s got follow-ups %q (came: %v)", id, qs, ok)
					default:
						completed.Add(1)
					}
				}()
			}
			wg.Wait()
			close(errs)
			var first []error
			for err := range errs {
				if len(first) < 3 {
					first = append(first, err)
				}
			}
			if n := completed.Load(); n != int64(c.n) {
				t.Fatalf("%d of %d completed in %s; first errors: %v", n, c.n, time.Since(start).Round(time.Millisecond), errors.Join(first...))
			}
			t.Logf("%d completed in %s", c.n, time.Since(start).Round(time.Millisecond))
		})
	}
}
