package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/schemas"
)

// Await subscribes to subject (core NATS: every message published there,
// stream or not), then calls publish, and returns the first event on subject
// that match accepts. Events that do not decode are skipped. It is how a
// client waits for the answer to its own query.
func (b *Bus) Await(ctx context.Context, subject string, publish func() error, match func(schemas.Event) bool) (schemas.Event, error) {
	ch := make(chan *nats.Msg, 64)
	sub, err := b.NC.ChanSubscribe(subject, ch)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	defer sub.Unsubscribe()
	if err := b.NC.FlushWithContext(ctx); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := publish(); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting on %s: %w", subject, ctx.Err())
		case m := <-ch:
			ev, err := schemas.Decode(m.Data)
			if err != nil {
				continue
			}
			if match(ev) {
				return ev, nil
			}
		}
	}
}

// PublishCore sends an event on core NATS (not a stream): answer tokens,
// which only matter to a client listening now. The subject comes from the
// event, the trace id travels in the header.
func (b *Bus) PublishCore(ev schemas.Event, traceID string) error {
	m, err := eventMsg(ev, traceID)
	if err != nil {
		return err
	}
	m.Header.Del("Nats-Msg-Id")
	if err := b.NC.PublishMsg(m); err != nil {
		return fmt.Errorf("publish %s: %w", m.Subject, err)
	}
	return nil
}

// Subscribe delivers every event on subject (core NATS) to fn until the
// returned stop function is called; events that do not decode are skipped.
func (b *Bus) Subscribe(subject string, fn func(schemas.Event)) (stop func(), err error) {
	sub, err := b.NC.Subscribe(subject, func(m *nats.Msg) {
		if ev, err := schemas.Decode(m.Data); err == nil {
			fn(ev)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
