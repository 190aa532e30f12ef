// Package answering is the answer stage: kb.query.reranked -> streamed tokens on
// kb.answer.tokens.<query_id> (core NATS), the finished answer on
// kb.answer.done, then its follow-up questions on kb.answer.followups.
package answering

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/schemas"
)

// Publish sends an event: on core NATS for the tokens, on its stream for
// the answer.
type Publish func(ctx context.Context, ev schemas.Event, traceID string) error

// New returns the stage's handler. Tokens go out as they come through
// publishCore (the bus's core publish). The answer goes out through
// publish (its stream) as soon as it is final, before the follow-up
// questions are generated, so they never delay it; the follow-ups are the
// handler's output, published on their stream before the query is acked.
func New(a *answer.Answerer, publishCore func(ev schemas.Event, traceID string) error, publish Publish, opts ...Option) bus.Handler {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		rq, err := bus.Decode[*schemas.QueryReranked](m)
		if err != nil {
			return nil, err
		}
		if rq.Options.NoAnswer {
			return nil, nil // the client wanted the contexts only
		}
		log := zerolog.Ctx(ctx)
		// First-token and total latency count from the question's
		// submission (from here when an older retrieve stage did not say).
		since := rq.SubmittedAt
		if since.IsZero() {
			since = time.Now()
		}
		var firstToken atomic.Int64
		ans := *a
		ans.Emit = func(ctx context.Context, t *schemas.AnswerToken) error {
			firstToken.CompareAndSwap(0, int64(max(time.Since(since), 1)))
			if err := publishCore(t, m.TraceID); err != nil {
				log.Warn().Err(err).Str("query_id", rq.QueryID).Int("seq", t.Seq).Msg("answer token not sent; the stream to the client stops")
				return err
			}
			return nil
		}
		// A client that leaves cancels its query (kb.cancel.query.<id>):
		// the language model is let go and the answer finishes at once.
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		var cancelled atomic.Bool
		if o.subscribe != nil {
			stop, err := o.subscribe(schemas.SubjectQueryCancelPrefix+rq.QueryID, func(schemas.Event) {
				cancelled.Store(true)
				cancel()
			})
			if err != nil {
				log.Warn().Err(err).Str("query_id", rq.QueryID).Msg("cannot listen for the query's cancellation; it is answered in full")
			} else {
				defer stop()
			}
		}
		done := ans.Respond(actx, rq)
		if cancelled.Load() {
			done.Reasons = append(done.Reasons, ReasonCancelled+": the client left and cancelled the query")
		}
		if cancelled.Load() {
			// Not an answer of its mode: what the stage gave up with
			// once the client left.
			metrics.ObserveCancelled()
		} else {
			metrics.ObserveAnswer(done, time.Duration(firstToken.Load()), time.Since(since))
		}
		log.Info().Str("query_id", rq.QueryID).Str("mode", done.Mode).Int("citations", len(done.Citations)).
			Float64("confidence", done.Confidence).Strs("reasons", done.Reasons).Msg("answered")
		if err := publish(ctx, done, m.TraceID); err != nil {
			return nil, fmt.Errorf("publish answer %s: %w", rq.QueryID, err)
		}
		if cancelled.Load() {
			return nil, nil // nobody is there for follow-up questions
		}
		fu := ans.FollowUp(ctx, rq, done)
		log.Info().Str("query_id", rq.QueryID).Int("follow_ups", len(fu.FollowUps)).
			Float64("took_ms", fu.TimingsMS["follow_ups"]).Msg("follow-up questions")
		return []schemas.Event{fu}, nil
	})
}

// ReasonCancelled: the client cancelled the query while it was answered.
const ReasonCancelled = "cancelled"

// Option configures the answer stage.
type Option func(*options)

type options struct {
	subscribe func(subject string, fn func(schemas.Event)) (func(), error)
}

// WithCancels lets clients cancel their queries: subscribe (the bus's core
// Subscribe) listens on kb.cancel.query.<query_id> while a query is
// answered.
func WithCancels(subscribe func(subject string, fn func(schemas.Event)) (func(), error)) Option {
	return func(o *options) { o.subscribe = subscribe }
}
