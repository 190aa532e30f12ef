package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// RevKV is a KV whose values carry revisions, for compare-and-set: two
// workers that read the same revision cannot both write after it. Values
// written through PutIf must fit in one message (no large-value spill).
type RevKV interface {
	KV
	// GetRev returns the value and its revision (nil and 0 for a missing
	// or deleted key).
	GetRev(ctx context.Context, key string) ([]byte, uint64, error)
	// PutIf writes value when key is still at revision rev (0: the key must
	// not exist); ok is false when another writer came first.
	PutIf(ctx context.Context, key string, value []byte, rev uint64) (ok bool, err error)
}

var _ RevKV = jsKV{}

// ErrTooLargeForRevision is PutIf's error for a value larger than one
// message: such values are kept aside (see payload.go) and cannot be
// compared-and-set.
var ErrTooLargeForRevision = errors.New("value too large for a revisioned write")

func (k jsKV) GetRev(ctx context.Context, key string) ([]byte, uint64, error) {
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("kv get %s: %w", key, err)
	}
	return e.Value(), e.Revision(), nil
}

func (k jsKV) PutIf(ctx context.Context, key string, value []byte, rev uint64) (bool, error) {
	if len(value) > k.inline {
		return false, fmt.Errorf("kv put-if %s: value of %d bytes is over the %d bytes of one message: %w", key, len(value), k.inline, ErrTooLargeForRevision)
	}
	var err error
	if rev == 0 {
		_, err = k.kv.Create(ctx, key, value)
	} else {
		_, err = k.kv.Update(ctx, key, value, rev)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return false, nil
	default:
		return false, fmt.Errorf("kv put-if %s at revision %d: %w", key, rev, err)
	}
}
