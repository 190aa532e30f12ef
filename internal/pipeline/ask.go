package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// Ask publishes a query and waits for its contexts on kb.query.reranked: the
// whole query path through the retrieve and rerank stages.
func Ask(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, timeout time.Duration) (*schemas.QueryReranked, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ev, err := b.Await(ctx, schemas.SubjectReranked, func() error {
		_, err := b.Publish(ctx, q, q.QueryID)
		return err
	}, func(ev schemas.Event) bool {
		r, ok := ev.(*schemas.QueryReranked)
		return ok && r.QueryID == q.QueryID
	})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w (is the retrieve stage running?)", q.QueryID, err)
	}
	return ev.(*schemas.QueryReranked), nil
}

// AskAnswer publishes a question and streams its answer: onToken gets every
// token of kb.answer.tokens.<query_id> as it comes (restart markers
// included), and the finished kb.answer.done is returned.
func AskAnswer(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, timeout time.Duration, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	final := make(chan struct{})
	var once sync.Once
	stop, err := b.Subscribe(schemas.SubjectAnswerTokensPrefix+q.QueryID, func(ev schemas.Event) {
		t, ok := ev.(*schemas.AnswerToken)
		if !ok {
			return
		}
		if onToken != nil {
			onToken(t)
		}
		if t.Final {
			once.Do(func() { close(final) })
		}
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	ev, err := b.Await(ctx, schemas.SubjectAnswerDone, func() error {
		_, err := b.Publish(ctx, q, q.QueryID)
		return err
	}, func(ev schemas.Event) bool {
		d, ok := ev.(*schemas.AnswerDone)
		return ok && d.QueryID == q.QueryID
	})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w (is the answer stage running?)", q.QueryID, err)
	}
	// The tokens went out before the answer, but they are dispatched on
	// their own subscription: let the last of them arrive before leaving.
	select {
	case <-final:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	return ev.(*schemas.AnswerDone), nil
}

// AnswerHere answers a query in this process with the client's own
// language-model providers over the contexts the running system retrieves
// (its retrieve and rerank stages; its answer stage is told to leave the
// query alone). onToken gets the streamed tokens. The extractive rung is
// the running system's only, so it is not tried here. cfg tunes the
// answer (its calibrated thresholds: LoadCalibration).
func AnswerHere(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, providers llm.Config, opts llm.RouterOptions,
	cfg answer.Config, timeout time.Duration, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	q.Options.NoAnswer = true
	rq, err := Ask(ctx, b, q, timeout)
	if err != nil {
		return nil, err
	}
	an, err := analysis.New(analysis.Full)
	if err != nil {
		return nil, err
	}
	router, err := llm.NewRouter(providers, opts)
	if err != nil {
		return nil, fmt.Errorf("language-model providers: %w", err)
	}
	a := &answer.Answerer{Analyzer: an, Router: router, Config: cfg, Emit: func(ctx context.Context, t *schemas.AnswerToken) error {
		if onToken != nil {
			onToken(t)
		}
		return nil
	}}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return a.Answer(ctx, rq), nil
}
