package bus

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/schemas"
)

// Await subscribes to subject (core NATS: every message published there,
// stream or not), then calls publish, and returns the first event on subject
// that match accepts. Events that do not decode are skipped. Every event on
// subject is decoded and offered to match, so it suits a single watcher (a
// test, a tool); a client waiting for the reply to its own request uses
// AwaitReply, which shares one subscription among all the waiters of a Bus.
func (b *Bus) Await(ctx context.Context, subject string, publish func() error, match func(schemas.Event) bool) (schemas.Event, error) {
	found := make(chan schemas.Event, 1)
	stop, err := b.Subscribe(subject, func(ev schemas.Event) {
		if match(ev) {
			select {
			case found <- ev:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := publish(); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting on %s: %w", subject, ctx.Err())
	case ev := <-found:
		return ev, nil
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
// fn runs on the subscription's own goroutine, one event at a time; while
// it is busy the client queues up to a million events (a gigabyte) before
// it drops any, and a drop is logged and counted (SlowConsumerStats).
func (b *Bus) Subscribe(subject string, fn func(schemas.Event)) (stop func(), err error) {
	sub, err := b.NC.Subscribe(subject, func(m *nats.Msg) {
		if ev, err := schemas.Decode(m.Data); err == nil {
			fn(ev)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := sub.SetPendingLimits(replyPendingMsgs, replyPendingBytes); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: pending limits: %w", subject, err)
	}
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	trackSub(sub)
	var once sync.Once
	return func() {
		once.Do(func() {
			untrackSub(sub)
			_ = sub.Unsubscribe()
		})
	}, nil
}
