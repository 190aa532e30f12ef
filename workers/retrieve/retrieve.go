// Package retrieve is the retrieve stage (kb.query.submitted ->
// kb.query.retrieved: BM25 and vector search fused by RRF), over a
// retrieval.Retriever. The rerank stage is workers/rerank. A question
// published onto NATS without a door (kb.query.submitted.v2 without
// options.literal) has its scope operators and date phrases read here
// (ReadText), with the doors' rules.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// Timeout bounds one query's work in a stage; past it the query is retried.
const Timeout = 20 * time.Second

// NewRetrieve returns the retrieve stage's handler.
func NewRetrieve(r *retrieval.Retriever) bus.Handler {
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		q, err := bus.Decode[*schemas.QuerySubmitted](m)
		if err != nil {
			return nil, err
		}
		var read []string
		if q.ReadsText() {
			notes, refused := ReadText(q, time.Now())
			if refused != nil {
				zerolog.Ctx(ctx).Info().Str("query_id", q.QueryID).Strs("reasons", refused.Reasons).Msg("scope of the question refused")
				return []schemas.Event{refused}, nil
			}
			read = notes
		}
		ctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		out, err := r.Retrieve(ctx, q)
		if err != nil {
			return nil, Classify(err)
		}
		// What was read comes first, as the doors show it before the reply.
		out.Reasons = append(read, out.Reasons...)
		zerolog.Ctx(ctx).Info().Str("query_id", q.QueryID).Str("mode", out.Mode).Int("candidates", len(out.Candidates)).
			Interface("timings_ms", out.TimingsMS).Strs("reasons", out.Reasons).Msg("retrieved")
		return []schemas.Event{out}, nil
	})
}

// Classify retries a query that ran out of time a little later; other
// failures (the index is busy, a model failed) are retried with backoff.
func Classify(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return bus.RetryAfter(fmt.Errorf("query timed out after %s: %w", Timeout, err), time.Second)
	}
	return err
}
