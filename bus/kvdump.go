package bus

import (
	"bytes"
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// EachKV calls fn with every live key of bucket and its current value (a
// value kept in the KB_VALUES object store is read from there), in one
// pass over the bucket rather than a request per key; it returns how many
// it read. Backups use it.
func (b *Bus) EachKV(ctx context.Context, bucket string, fn func(key string, value []byte) error) (int, error) {
	kv, err := b.JS.KeyValue(ctx, bucket)
	if err != nil {
		return 0, fmt.Errorf("open kv bucket %s: %w", bucket, err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return 0, fmt.Errorf("read kv bucket %s: %w", bucket, err)
	}
	defer func() { _ = w.Stop() }()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("read kv bucket %s: %w", bucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return n, fmt.Errorf("read kv bucket %s: the watch stopped after %d keys", bucket, n)
			}
			if e == nil { // the current values have all been delivered
				return n, nil
			}
			v := e.Value()
			if bytes.HasPrefix(v, kvObjectPrefix) {
				if v, err = getLarge(ctx, b.JS, e.Key(), v); err != nil {
					return n, fmt.Errorf("read kv bucket %s: %w", bucket, err)
				}
			}
			if err := fn(e.Key(), v); err != nil {
				return n, err
			}
			n++
		}
	}
}
