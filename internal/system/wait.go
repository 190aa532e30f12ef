package system

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/bus"
)

// WaitIdle polls the stages' consumers, in pipeline order, until none has
// anything pending or unacknowledged, calling progress after each poll. A
// stage publishes its outputs before it acks its input, so once an earlier
// stage reads idle, everything it produced is already visible to the next.
// Polls that get no answer while a NATS cluster fails over are repeated
// (for up to bus.FailoverBudget).
func WaitIdle(ctx context.Context, b *bus.Bus, stages []bus.StageSpec, every time.Duration, progress func([]bus.StageState)) error {
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var failing time.Time // since when the polls get no answer
	for {
		states, err := b.StageStates(ctx, stages)
		switch {
		case err == nil:
			failing = time.Time{}
		case bus.IsFailover(err) && ctx.Err() == nil && (failing.IsZero() || time.Since(failing) < bus.FailoverBudget):
			// A NATS cluster failing over: poll again.
			if failing.IsZero() {
				failing = time.Now()
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
			continue
		default:
			return err
		}
		if progress != nil {
			progress(states)
		}
		idle := true
		for _, s := range states {
			if s.Pending > 0 || s.AckPending > 0 {
				idle = false
				break
			}
		}
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
