package system

import (
	"context"
	"errors"
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/workers/stage"
)

// ErrEmbedsCacheTooLarge is returned by Start when Config.EmbedsCache is
// larger than JetStream's store may hold.
var ErrEmbedsCacheTooLarge = errors.New("embedding cache larger than the JetStream store's limit")

// embedsShare is the part of JetStream's store the embedding cache takes
// when it is sized by itself (at most stage.DefaultEmbedsCache).
const embedsShare = 8

// sizeStorage returns cat with the embedding cache sized: cfg.EmbedsCache
// when set (refused when larger than the store's limit); else the limit an
// existing cache already has, while it fits in the store, so that a
// command or a worker that does not set it keeps what up was given; else an
// eighth of the store's limit, at most 1 GiB.
func sizeStorage(ctx context.Context, cfg Config, b *bus.Bus, cat stage.Catalog) (stage.Catalog, error) {
	limit, err := storeLimit(ctx, b)
	if err != nil {
		return cat, err
	}
	n := cfg.EmbedsCache
	switch {
	case n < 0:
		return cat, fmt.Errorf("embedding cache of %d bytes is negative", n)
	case n > 0 && limit > 0 && n > limit:
		return cat, fmt.Errorf("%w: the cache %s, the store %s", ErrEmbedsCacheTooLarge, humanize.IBytes(uint64(n)), humanize.IBytes(uint64(limit)))
	case n == 0:
		had, err := bucketMaxBytes(ctx, b.JS, stage.BucketEmbeds)
		if err != nil {
			return cat, err
		}
		if had > 0 && (limit == 0 || had <= limit) {
			n = had
		}
		if had != 0 && limit > 0 && (had < 0 || had > limit) {
			// The server cannot shrink a bucket that holds more of the
			// store than there is; it is a cache, so it starts again.
			cfg.Log.Warn().Int64("cache_bytes", had).Int64("max_store_bytes", limit).
				Msg("the embedding cache is larger than the JetStream store: emptied and made smaller")
			if err := b.JS.DeleteKeyValue(ctx, stage.BucketEmbeds); err != nil {
				return cat, fmt.Errorf("empty the embedding cache %s to make it smaller: %w", stage.BucketEmbeds, err)
			}
		}
	}
	if n == 0 {
		n = stage.DefaultEmbedsCache
		if limit > 0 {
			n = min(n, limit/embedsShare)
		}
	}
	cfg.Log.Debug().Int64("max_store_bytes", limit).Int64("embeds_cache_bytes", n).Msg("storage limits")
	return cat.WithBucketMaxBytes(stage.BucketEmbeds, n), nil
}

// StoreLimit is JetStream's file store limit in bytes as the bus b sees
// it: the embedded server's, as the running system's disk guard reports it
// to a command, else the account's (see storeLimit); 0 when unlimited or
// unknown.
func StoreLimit(ctx context.Context, b *bus.Bus) (int64, error) {
	if b.Server == nil {
		if d, ok := b.DiskState(ctx); ok && d.MaxStore > 0 {
			return d.MaxStore, nil
		}
	}
	return storeLimit(ctx, b)
}

// storeLimit is JetStream's file store limit in bytes: the embedded
// server's (75% of the free space of its volume unless set), else the
// account's; 0 when unlimited or unknown.
func storeLimit(ctx context.Context, b *bus.Bus) (int64, error) {
	if b.Server != nil {
		if c := b.Server.JetStreamConfig(); c != nil && c.MaxStore > 0 {
			return c.MaxStore, nil
		}
		return 0, nil
	}
	info, err := b.JS.AccountInfo(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the JetStream account's limits: %w", err)
	}
	if info.Limits.MaxStore > 0 {
		return info.Limits.MaxStore, nil
	}
	return 0, nil
}

// bucketMaxBytes is an existing KV bucket's byte limit (-1 unlimited), 0
// when the bucket does not exist yet.
func bucketMaxBytes(ctx context.Context, js jetstream.JetStream, bucket string) (int64, error) {
	s, err := js.Stream(ctx, "KV_"+bucket)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read kv bucket %s: %w", bucket, err)
	}
	return s.CachedInfo().Config.MaxBytes, nil
}
