package bus

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/schemas"
)

// Recover turns a panic in the handler into an error (retried, then
// dead-lettered) so that one bad message never kills a worker.
func Recover() Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m *Msg) (out []schemas.Event, err error) {
			defer func() {
				if r := recover(); r != nil {
					zerolog.Ctx(ctx).Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg("handler panicked")
					out, err = nil, fmt.Errorf("handler panicked: %v", r)
				}
			}()
			return next.Handle(ctx, m)
		})
	}
}

// Logging puts a logger with the stage, subject, stream sequence, delivery
// count and trace id into the context (zerolog.Ctx) and logs each result.
func Logging(base zerolog.Logger, stage string) Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, m *Msg) ([]schemas.Event, error) {
			log := base.With().
				Str("stage", stage).
				Str("subject", m.Subject).
				Uint64("stream_seq", m.StreamSeq).
				Uint64("delivered", m.Delivered).
				Str("trace_id", m.TraceID).
				Logger()
			ctx = log.WithContext(ctx)
			start := time.Now()
			out, err := next.Handle(ctx, m)
			ev := log.Debug()
			switch {
			case IsOutOfSpace(err):
				// The bus logs a full disk once and holds the message.
				ev = log.Debug().Err(err).Bool("out_of_space", true)
			case err != nil:
				ev = log.Warn().Err(err).Bool("permanent", IsPermanent(err))
			}
			ev.Dur("took", time.Since(start)).Int("events_out", len(out)).Msg("handled")
			return out, err
		})
	}
}
