package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStalled is the cause of a write cancelled by WithStallTimeout.
var ErrStalled = errors.New("store: write made no progress")

type stallKey struct{}

type watchdog struct {
	d time.Duration
	t *time.Timer
}

// WithStallTimeout returns a context for a write that is cancelled, with
// cause ErrStalled, once the write has made no progress for d: a large write
// (a document with 100k blocks) takes as long as it needs while rows keep
// going in, and a stuck one (a lock held elsewhere, a stalled disk) fails
// after d. Call the returned cancel when the write is done.
func WithStallTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{d: d}
	w.t = time.AfterFunc(d, func() { cancel(fmt.Errorf("%w for %s", ErrStalled, d)) })
	ctx = context.WithValue(ctx, stallKey{}, w)
	return ctx, func() {
		w.t.Stop()
		cancel(context.Canceled)
	}
}

// progress tells ctx's watchdog, if any, that the write moved on.
func progress(ctx context.Context) {
	if w, ok := ctx.Value(stallKey{}).(*watchdog); ok && ctx.Err() == nil {
		w.t.Reset(w.d)
	}
}
