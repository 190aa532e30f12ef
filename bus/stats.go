package bus

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
)

// Counters are a stage instance's running totals since it started.
type Counters struct {
	Acked        int64 `json:"acked"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
	Published    int64 `json:"published"`
}

type counters struct {
	acked, retried, deadLettered, published atomic.Int64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Acked:        c.acked.Load(),
		Retried:      c.retried.Load(),
		DeadLettered: c.deadLettered.Load(),
		Published:    c.published.Load(),
	}
}

func statsKey(stage, instance string) string { return stage + "." + instance }

// StageTotals sums the counters every instance of each stage has flushed to
// the KB_STATS bucket (every instance that ever ran, so totals survive restarts).
func StageTotals(ctx context.Context, kv KV) (map[string]Counters, error) {
	keys, err := kv.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]Counters{}
	for _, k := range keys {
		stage, _, ok := strings.Cut(k, ".")
		if !ok {
			continue
		}
		raw, err := kv.Get(ctx, k)
		if err != nil || raw == nil {
			continue
		}
		var c Counters
		if json.Unmarshal(raw, &c) != nil {
			continue
		}
		t := out[stage]
		t.Acked += c.Acked
		t.Retried += c.Retried
		t.DeadLettered += c.DeadLettered
		t.Published += c.Published
		out[stage] = t
	}
	return out, nil
}
