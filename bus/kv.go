package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// jsKV adapts a JetStream key-value bucket to KV. A value larger than the
// server's max payload is kept in the KB_VALUES object store (see payload.go).
type jsKV struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	bucket string
	inline int
}

// KV opens a bucket created by EnsureTopology.
func (b *Bus) KV(ctx context.Context, bucket string) (KV, error) {
	kv, err := b.JS.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("open kv bucket %s: %w", bucket, err)
	}
	return jsKV{kv: kv, js: b.JS, bucket: bucket, inline: InlineLimit(b.NC)}, nil
}

func (k jsKV) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := retryFailover(ctx, "kv get "+k.bucket+" "+key, func() (jetstream.KeyValueEntry, error) { return k.kv.Get(ctx, key) })
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kv get %s: %w", key, err)
	}
	if v := e.Value(); bytes.HasPrefix(v, kvObjectPrefix) {
		return getLarge(ctx, k.js, key, v)
	}
	return e.Value(), nil
}

func (k jsKV) Put(ctx context.Context, key string, value []byte) error {
	if len(value) > k.inline || bytes.HasPrefix(value, kvObjectPrefix) {
		stub, err := putLarge(ctx, k.js, k.bucket, key, value)
		if err != nil {
			return err
		}
		value = stub
	}
	if _, err := retryFailover(ctx, "kv put "+k.bucket+" "+key, func() (uint64, error) { return k.kv.Put(ctx, key, value) }); err != nil {
		return fmt.Errorf("kv put %s: %w", key, err)
	}
	return nil
}

func (k jsKV) Delete(ctx context.Context, key string) error {
	_, err := retryFailover(ctx, "kv delete "+k.bucket+" "+key, func() (struct{}, error) { return struct{}{}, k.kv.Delete(ctx, key) })
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("kv delete %s: %w", key, err)
	}
	// The key may have held a large value once, even if its last was small.
	return deleteLarge(ctx, k.js, k.bucket, key)
}

func (k jsKV) Keys(ctx context.Context) ([]string, error) {
	// Listing is a read: sent again while a cluster fails over, as writes are.
	lister, err := retryFailover(ctx, "kv keys "+k.bucket, func() (jetstream.KeyLister, error) { return k.kv.ListKeys(ctx) })
	if err != nil {
		return nil, fmt.Errorf("kv keys: %w", err)
	}
	var out []string
	for key := range lister.Keys() {
		out = append(out, key)
	}
	return out, nil
}
