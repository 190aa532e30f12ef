// Package bus is the only package that talks to NATS: the embedded server,
// streams and consumers, the handler/middleware chain, acks, retries and dead
// letters. Stage handlers receive a Msg and return the events they produce; the
// bus publishes them (with deterministic Nats-Msg-Id) and only then acks.
package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// Msg is one delivered message as a handler sees it.
type Msg struct {
	Subject string
	Data    []byte
	Header  map[string][]string
	// Delivered counts deliveries of this message, starting at 1.
	Delivered uint64
	// Stream and StreamSeq locate the message in JetStream.
	Stream    string
	StreamSeq uint64
	// TraceID comes from the Exo-Trace-Id header (or the event envelope).
	TraceID string

	// stub is the body as it travelled when Data was read from the object
	// store (see payload.go), and object that object's name.
	stub   []byte
	object string

	// published are the functions OnPublished registered.
	published []func(ctx context.Context) error
}

// OnPublished registers fn to run once the handler's output is durably
// published (every event acknowledged by JetStream) and before the message
// is acked. A handler saves there the state that claims its output was
// handed on (the chunk stage's manifest), so that a crash or a failed
// publish leaves no state that a resend would trust. If fn fails, the
// message is retried as if the handler had failed; its output, already
// published, is deduplicated by its message ids.
func (m *Msg) OnPublished(fn func(ctx context.Context) error) {
	m.published = append(m.published, fn)
}

// Published runs the functions OnPublished registered, in order, and stops
// at the first error. The bus calls it after publishing a handler's
// output; a test that calls a handler directly calls it to stand for a
// successful publish.
func (m *Msg) Published(ctx context.Context) error {
	for _, fn := range m.published {
		if err := fn(ctx); err != nil {
			return err
		}
	}
	m.published = nil
	return nil
}

// Handler processes one message and returns the events it produced.
// The returned error decides the ack: nil acks (after the events are
// published); a Permanent error terminates the message and dead-letters it
// with the reason; a RetryAfter error naks with that delay; any other error
// naks with a growing delay until the consumer's max deliveries, after which
// the message is dead-lettered.
type Handler interface {
	Handle(ctx context.Context, m *Msg) ([]schemas.Event, error)
}

// Batcher is implemented by a handler that can apply a fetched batch of
// messages as one unit of work (the index stage: one SQLite transaction).
// The bus calls Batch with a function that handles every message of the
// batch; each message's result still decides its own ack, and the messages
// are acked only after Batch returns nil. If Batch fails, every message of
// the batch is retried.
type Batcher interface {
	Batch(ctx context.Context, fn func(ctx context.Context) error) error
}

// BatchHandler is implemented by a handler that does one unit of work for a
// whole fetched batch (the embed stage: one model run for many chunks). The
// bus calls HandleBatch instead of Handle when it has more than one message;
// it must return one Outcome per message, in order, and each outcome decides
// that message's ack exactly as Handle's results would.
type BatchHandler interface {
	Handler
	HandleBatch(ctx context.Context, msgs []*Msg) []Outcome
}

// Outcome is the result of one message of a batch.
type Outcome struct {
	Out []schemas.Event
	Err error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m *Msg) ([]schemas.Event, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m *Msg) ([]schemas.Event, error) { return f(ctx, m) }

// Middleware wraps a handler.
type Middleware func(Handler) Handler

// Chain applies middleware so that the first one is the outermost.
func Chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: the message is terminated and
// dead-lettered at once with err as the reason.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or anything it wraps) was marked Permanent.
// Malformed and unknown events from schemas.Decode count as permanent too.
func IsPermanent(err error) bool {
	var p *permanentError
	if errors.As(err, &p) {
		return true
	}
	return errors.Is(err, schemas.ErrMalformed) || errors.Is(err, schemas.ErrUnknownType) || errors.Is(err, schemas.ErrInvalid)
}

type retryAfterError struct {
	err   error
	delay time.Duration
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.err, e.delay)
}
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter asks for redelivery after d (a provider's Retry-After, say).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, delay: d}
}

// retryDelay returns the delay asked for by a RetryAfter error, if any.
func retryDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.delay, true
	}
	return 0, false
}

// Decode decodes m's payload as T; a malformed payload is a permanent error.
func Decode[T schemas.Event](m *Msg) (T, error) {
	ev, err := schemas.DecodeAs[T](m.Data)
	if err != nil {
		return ev, Permanent(fmt.Errorf("decode %s: %w", m.Subject, err))
	}
	return ev, nil
}

// KV is a small key-value store (a JetStream KV bucket in production, a map in
// tests). Get returns (nil, nil) for a missing key.
type KV interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, value []byte) error
	Delete(ctx context.Context, key string) error
	Keys(ctx context.Context) ([]string, error)
}

// MemKV is an in-memory KV for tests and single-process tools.
type MemKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return &MemKV{m: map[string][]byte{}} }

func (k *MemKV) Get(_ context.Context, key string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	if !ok {
		return nil, nil
	}
	return append([]byte(nil), v...), nil
}

func (k *MemKV) Put(_ context.Context, key string, value []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), value...)
	return nil
}

func (k *MemKV) Delete(_ context.Context, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
	return nil
}

func (k *MemKV) Keys(_ context.Context) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.m))
	for key := range k.m {
		out = append(out, key)
	}
	return out, nil
}
