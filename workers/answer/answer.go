// Package answer is the answer stage: kb.query.reranked -> streamed tokens on
// kb.answer.tokens.<query_id> (core NATS) and the finished answer on
// kb.answer.done.
package answer

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// New returns the stage's handler. Tokens go out as they come through
// publish (the bus's core publish); the answer is the handler's output, so
// it is published on the stream before the query is acked.
func New(a *answer.Answerer, publish func(ev schemas.Event, traceID string) error) bus.Handler {
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		rq, err := bus.Decode[*schemas.QueryReranked](m)
		if err != nil {
			return nil, err
		}
		if rq.Options.NoAnswer {
			return nil, nil // the client wanted the contexts only
		}
		ans := *a
		ans.Emit = func(ctx context.Context, t *schemas.AnswerToken) error {
			if err := publish(t, m.TraceID); err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Str("query_id", rq.QueryID).Int("seq", t.Seq).Msg("answer token not sent; the stream to the client stops")
				return err
			}
			return nil
		}
		done := ans.Answer(ctx, rq)
		zerolog.Ctx(ctx).Info().Str("query_id", rq.QueryID).Str("mode", done.Mode).Int("citations", len(done.Citations)).
			Float64("confidence", done.Confidence).Strs("reasons", done.Reasons).Msg("answered")
		return []schemas.Event{done}, nil
	})
}
