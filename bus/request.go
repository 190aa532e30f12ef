package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/schemas"
)

// Requests over core NATS request-reply (not streams): a client asks, one
// process of those answering the subject (a queue group) replies at once,
// and nothing is kept. The doors ask this way for what only the machine
// with the data directory has (schemas/requests.go): a block or a document
// of the index, an ingest of its files.

// ErrNoResponders is a request that no process answers: nothing serving
// its subject runs.
var ErrNoResponders = errors.New("no process answers")

// DefaultRequestTimeout bounds a request whose context has no deadline.
const DefaultRequestTimeout = 30 * time.Second

// answerQueue is the queue group of every answering process: one of them
// answers each request.
const answerQueue = "kb.answerers"

// Request sends req (a registered request event) on its subject and decodes
// the reply strictly as a T. Nobody answering is ErrNoResponders, naming
// the subject.
func Request[T schemas.Event](ctx context.Context, b *Bus, req schemas.Event, traceID string) (T, error) {
	var zero T
	msg, err := eventMsg(req, traceID)
	if err != nil {
		return zero, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
	}
	reply, err := b.NC.RequestMsgWithContext(ctx, msg)
	if errors.Is(err, nats.ErrNoResponders) {
		return zero, fmt.Errorf("%w on %s", ErrNoResponders, msg.Subject)
	}
	if err != nil {
		return zero, fmt.Errorf("request %s: %w", msg.Subject, err)
	}
	out, err := schemas.DecodeAs[T](reply.Data)
	if err != nil {
		return zero, fmt.Errorf("reply to %s: %w", msg.Subject, err)
	}
	return out, nil
}

// Answer answers the requests on subject with handle, which gets the
// decoded request (a registered event) and returns the reply to send. A
// request that does not decode is logged and left unanswered (its client
// times out). The returned stop unsubscribes and waits for the answers in
// progress, so that what they read can be closed after it.
func (b *Bus) Answer(subject string, handle func(ctx context.Context, req schemas.Event) schemas.Event) (stop func(), err error) {
	var (
		mu      sync.Mutex
		stopped bool
		running sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := b.NC.QueueSubscribe(subject, answerQueue, func(m *nats.Msg) {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		// Each request in its own goroutine: a long one (an ingest) does
		// not hold up the next.
		go func() {
			defer running.Done()
			b.answer(ctx, subject, m, handle)
		}()
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("answer %s: %w", subject, err)
	}
	return func() {
		_ = sub.Unsubscribe()
		mu.Lock()
		stopped = true
		mu.Unlock()
		cancel()
		running.Wait()
	}, nil
}

// answer decodes m, handles it and sends the reply.
func (b *Bus) answer(ctx context.Context, subject string, m *nats.Msg, handle func(ctx context.Context, req schemas.Event) schemas.Event) {
	req, err := schemas.Decode(m.Data)
	if err != nil {
		b.Log.Warn().Err(err).Str("subject", subject).Msg("a request that does not decode is left unanswered")
		return
	}
	msg, err := eventMsg(handle(ctx, req), req.Env().TraceID)
	if err == nil {
		err = m.RespondMsg(msg)
	}
	if err != nil {
		b.Log.Warn().Err(err).Str("subject", subject).Msg("reply not sent")
	}
}
