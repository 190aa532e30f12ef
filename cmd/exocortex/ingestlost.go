package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/bus"
)

// exitLost is ingest's exit status when the running system it was feeding
// went away (its NATS server stopped answering): what was sent is safe in
// JetStream's store, and running ingest again after 'exocortex up' sends
// the rest.
const exitLost = 4

// lostAfter is how long ingest lets its connection to the running system
// stay down before it says the system went away: well under the 5 s a
// user waits, well over a NATS reconnect to a live server.
const lostAfter = 2 * time.Second

// errSystemGone is the cause ingest's context ends with when the running
// system went away.
var errSystemGone = errors.New("the running system went away")

// lostError is an ingest that stopped because the system it fed went away.
type lostError struct{ url string }

func (e *lostError) Error() string {
	return fmt.Sprintf("the running system at %s went away (exocortex up stopped or the connection broke) before ingest finished; "+
		"what was sent is kept: start 'exocortex up' again and run the same ingest to send the rest", e.url)
}

// watchSystem returns a context that ends, with errSystemGone as its
// cause, once b's connection has been down for lostAfter; stop ends the
// watch.
func watchSystem(ctx context.Context, b *bus.Bus) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var downSince time.Time
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if b.NC.IsConnected() {
				downSince = time.Time{}
				continue
			}
			if downSince.IsZero() {
				downSince = time.Now()
			} else if time.Since(downSince) >= lostAfter {
				cancel(errSystemGone)
				return
			}
		}
	}()
	return wctx, func() { close(done); cancel(nil) }
}
