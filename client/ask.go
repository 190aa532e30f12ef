package client

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Search runs a query to its ranked contexts (kb.query.reranked's event):
// through the running system's retrieve and rerank stages, or here from
// the data directory. Options.SearchTimeout bounds it. The question is
// searched as it is (Options.Literal): a door reads its scope operators
// first (ScopeQuery, ParseQuestion).
func (c *Client) Search(ctx context.Context, q *schemas.QuerySubmitted) (*schemas.QueryReranked, error) {
	q.DetectLang()
	q.Options.Literal = true
	if c.local != nil {
		return c.local.Search(ctx, q, c.opts.SearchTimeout)
	}
	return searchBus(ctx, c.bus, q, c.opts.SearchTimeout)
}

// AskOptions say what Ask does besides answering.
type AskOptions struct {
	// OnToken gets every token of the answer as it comes (restart markers
	// included); nil: none.
	OnToken func(*schemas.AnswerToken)
	// FollowUps keeps listening for the answer's follow-up questions, which
	// come after it: Ask returns a FollowUps to wait for them with (close
	// it). Without it Ask returns nil for them.
	FollowUps bool
	// CancelIfLeft: when ctx ends before the answer, tell the answer stage
	// that the client left (Cancel) and return ctx's error.
	CancelIfLeft bool
}

// Ask answers a question (see Client for who answers), streaming its
// tokens to o.OnToken, and returns the finished kb.answer.done.
// Options.AskTimeout bounds it. The question is asked as it is
// (Options.Literal, see Search).
func (c *Client) Ask(ctx context.Context, q *schemas.QuerySubmitted, o AskOptions) (*schemas.AnswerDone, *FollowUps, error) {
	q.DetectLang()
	q.Options.Literal = true
	done, fu, err := c.answer(ctx, q, o.OnToken)
	if err != nil {
		if o.CancelIfLeft && ctx.Err() != nil {
			if cerr := c.Cancel(q.QueryID, "the client left"); cerr != nil {
				c.opts.Log.Warn().Err(cerr).Str("query_id", q.QueryID).Msg("cannot cancel the query")
			}
			return nil, nil, fmt.Errorf("query %s: %w", q.QueryID, ctx.Err())
		}
		return nil, nil, err
	}
	if !o.FollowUps {
		fu.Close()
		return done, nil, nil
	}
	return done, fu, nil
}

// answer asks whoever answers (see Client).
func (c *Client) answer(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, *FollowUps, error) {
	switch {
	case c.local != nil:
		return askLocal(ctx, c.local, q, c.opts.AskTimeout, onToken)
	case c.AnswersHere():
		log := c.opts.Log
		return answerHere(ctx, c.bus, q, *c.opts.Providers, llm.RouterOptions{Logger: &log}, c.opts.Answer, c.opts.AskTimeout, onToken)
	}
	return askBus(ctx, c.bus, q, c.opts.AskTimeout, onToken)
}

// searchBus publishes a query and waits for its contexts on
// kb.query.reranked: the whole query path through the retrieve and rerank
// stages. A query without a reply within timeout ends with an error that
// wraps context.DeadlineExceeded and says what held it up (a stage without
// a worker, a queue ahead of it, replies this process dropped).
func searchBus(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, timeout time.Duration) (*schemas.QueryReranked, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ev, err := b.AwaitReply(ctx, schemas.SubjectReranked, q.QueryID, q, searchPath)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.QueryID, err)
	}
	r, ok := ev.(*schemas.QueryReranked)
	if !ok {
		return nil, fmt.Errorf("query %s: got %s on %s", q.QueryID, ev.Env().Type, schemas.SubjectReranked)
	}
	return r, nil
}

// The stages a query passes through, as their consumers are named on the
// bus (workers/retrieve, workers/rerank and workers/answering declare them;
// a test holds these and researchPath to the registry):
// what a timeout looks at to say what held it up.
var (
	searchPath = stagesOn(stage.StreamQuery, "retrieve", "rerank")
	answerPath = stagesOn(stage.StreamQuery, "retrieve", "rerank", "answer")
)

// stagesOn names the consumers of the named stages on stream, in the order
// given.
func stagesOn(stream string, names ...string) []bus.StageSpec {
	out := make([]bus.StageSpec, len(names))
	for i, n := range names {
		out[i] = bus.StageSpec{Name: n, Stream: stream}
	}
	return out
}

// FollowUps waits for the follow-up questions of an answer, which come
// after it (kb.answer.followups). Close it when done with it.
type FollowUps struct {
	ch    chan []string
	close func()
	once  sync.Once
}

func newFollowUps(close func()) *FollowUps {
	return &FollowUps{ch: make(chan []string, 1), close: close}
}

func (f *FollowUps) deliver(qs []string) {
	select {
	case f.ch <- qs:
	default: // a duplicate
	}
}

// Wait returns the follow-up questions if they come within d (ok false
// when they did not; an empty list when the answer has none).
func (f *FollowUps) Wait(ctx context.Context, d time.Duration) (qs []string, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case qs := <-f.ch:
		return qs, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

// Close stops waiting for them.
func (f *FollowUps) Close() { f.once.Do(f.close) }

// askBus publishes a question and streams its answer (see streamAnswer),
// and listens for its follow-up questions, published after it: wait for
// them with the returned FollowUps (nil on error).
func askBus(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, timeout time.Duration, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, *FollowUps, error) {
	// Registered before the question leaves: the follow-ups may come
	// right after the answer.
	w, err := b.Expect(schemas.SubjectAnswerFollowUps, q.QueryID)
	if err != nil {
		return nil, nil, err
	}
	wctx, stop := context.WithCancel(context.Background())
	fu := newFollowUps(func() {
		stop()
		w.Close()
	})
	go func() {
		for {
			ev, err := w.Next(wctx)
			if err != nil {
				return
			}
			if f, ok := ev.(*schemas.AnswerFollowUps); ok {
				fu.deliver(f.FollowUps)
				return
			}
		}
	}()
	done, err := streamAnswer(ctx, b, q, timeout, onToken)
	if err != nil {
		fu.Close()
		return nil, nil, err
	}
	return done, fu, nil
}

// streamAnswer streams a question's tokens, each query on a subject of its
// own (kb.answer.tokens.<query_id>, subscribed to before the question
// leaves), to onToken (restart markers included), and waits for its
// kb.answer.done.
func streamAnswer(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, timeout time.Duration, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
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
	ev, err := b.AwaitReply(ctx, schemas.SubjectAnswerDone, q.QueryID, q, answerPath)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.QueryID, err)
	}
	done, ok := ev.(*schemas.AnswerDone)
	if !ok {
		return nil, fmt.Errorf("query %s: got %s on %s", q.QueryID, ev.Env().Type, schemas.SubjectAnswerDone)
	}
	// The tokens went out before the answer, but they are dispatched on
	// their own subscription: let the last of them arrive before leaving.
	select {
	case <-final:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	return done, nil
}

// answerHere answers a query in this process with the client's own
// language-model providers over the contexts the running system retrieves
// (its retrieve and rerank stages; its answer stage is told to leave the
// query alone). onToken gets the streamed tokens. The extractive rung is
// the running system's only, so it is not tried here. The answer is
// returned as soon as it is final; its follow-up questions are generated
// after it, for the returned FollowUps (until it is closed). cfg tunes the
// answer (its calibrated thresholds: system.LoadCalibration).
func answerHere(ctx context.Context, b *bus.Bus, q *schemas.QuerySubmitted, providers llm.Config, opts llm.RouterOptions,
	cfg answer.Config, timeout time.Duration, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, *FollowUps, error) {
	q.Options.NoAnswer = true
	rq, err := searchBus(ctx, b, q, timeout)
	if err != nil {
		return nil, nil, err
	}
	if rq.Lang == "" {
		rq.Lang = q.Lang // a running system from before language detection
	}
	an, err := analysis.New(analysis.Full)
	if err != nil {
		return nil, nil, err
	}
	router, err := llm.NewRouter(providers, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("language-model providers: %w", err)
	}
	a := &answer.Answerer{Analyzer: an, Router: router, Config: cfg, Emit: func(ctx context.Context, t *schemas.AnswerToken) error {
		if onToken != nil {
			onToken(t)
		}
		return nil
	}}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	done := a.Respond(ctx, rq)
	fu := newFollowUps(cancel)
	later := *done // FollowUp writes to it while the caller reads done
	later.TimingsMS = maps.Clone(done.TimingsMS)
	go func() {
		ev := a.FollowUp(ctx, rq, &later)
		fu.deliver(ev.FollowUps)
	}()
	return done, fu, nil
}

// askLocal is l.Ask with its follow-up questions for the returned
// FollowUps: an answer given here, without a running system.
func askLocal(ctx context.Context, l Local, q *schemas.QuerySubmitted, timeout time.Duration, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, *FollowUps, error) {
	fu := newFollowUps(func() {})
	done, stop, err := l.Ask(ctx, q, timeout, onToken, fu.deliver)
	if err != nil {
		return nil, nil, err
	}
	fu.close = stop
	return done, fu, nil
}
