package main

import (
	"context"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/bus"
)

// diskPatience lets ingest ride out a full disk: a publish, a state write or
// a poll that fails while the bus's store is out of space (or was, since
// ingest started) waits until space returns and tries again, showing why on
// the progress line; interrupted, its error names the disk, not a deadline.
type diskPatience struct {
	b        *bus.Bus
	pr       *progress
	episodes int // the store's full episodes when ingest started
}

func newDiskPatience(ctx context.Context, b *bus.Bus, pr *progress) *diskPatience {
	d := &diskPatience{b: b, pr: pr}
	if st, ok := b.DiskState(ctx); ok {
		d.episodes = st.Episodes
	}
	return d
}

// retry runs fn until it succeeds, fails for another reason than space, or
// ctx ends.
func (d *diskPatience) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	told := false
	for {
		err := d.untilFull(ctx, fn)
		if err == nil {
			return nil
		}
		st, ok := d.b.DiskState(ctx)
		if !ok || !(st.Full || st.Episodes != d.episodes || bus.IsOutOfSpace(err)) {
			return err
		}
		why := st.Message()
		if !st.Full && bus.IsOutOfSpace(err) {
			why = "the JetStream store at " + st.Path + " is at its size limit (up --max-store); waiting for the stages to free room"
		}
		if ctx.Err() != nil {
			return d.fail(what, why, err)
		}
		if !told && (st.Full || bus.IsOutOfSpace(err)) {
			d.pr.println("ingest: waiting: " + why)
			told = true
		}
		if werr := d.b.WaitForSpace(ctx); werr != nil {
			return d.fail(what, why, err)
		}
		if st, ok := d.b.DiskState(ctx); ok {
			d.episodes = st.Episodes
		}
		// JetStream restarts once space is back: give it a moment.
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// fail is retry's error: what was being done (if it says), why it waited,
// and the error.
func (d *diskPatience) fail(what, why string, err error) error {
	if what == "" {
		return fmt.Errorf("%s: %w", why, err)
	}
	return fmt.Errorf("%s: %s: %w", what, why, err)
}

// untilFull runs fn with a context that ends as soon as the store is found
// full: a publish to a stream stuck on a full disk is never answered, and
// the user should hear why at once rather than after a timeout.
func (d *diskPatience) untilFull(ctx context.Context, fn func(ctx context.Context) error) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if st, ok := d.b.DiskState(fctx); ok && st.Full {
					cancel()
					return
				}
			}
		}
	}()
	return fn(fctx)
}

// kv is a bus.KV whose calls ride out a full disk.
func (d *diskPatience) kv(kv bus.KV) bus.KV { return patientKV{kv: kv, d: d} }

type patientKV struct {
	kv bus.KV
	d  *diskPatience
}

func (p patientKV) Get(ctx context.Context, key string) (v []byte, err error) {
	err = p.d.retry(ctx, "read "+key, func(ctx context.Context) error {
		v, err = p.kv.Get(ctx, key)
		return err
	})
	return v, err
}

func (p patientKV) Put(ctx context.Context, key string, value []byte) error {
	return p.d.retry(ctx, "save "+key, func(ctx context.Context) error { return p.kv.Put(ctx, key, value) })
}

func (p patientKV) Delete(ctx context.Context, key string) error {
	return p.d.retry(ctx, "delete "+key, func(ctx context.Context) error { return p.kv.Delete(ctx, key) })
}

func (p patientKV) Keys(ctx context.Context) (keys []string, err error) {
	err = p.d.retry(ctx, "list keys", func(ctx context.Context) error {
		keys, err = p.kv.Keys(ctx)
		return err
	})
	return keys, err
}
