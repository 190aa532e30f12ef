package web_test

// statusOf is what `exocortex status --json` prints, for the parts the
// page shows (the CLI builds the full report; the gateway takes it as a
// function).

import (
	"context"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/siyuan"
)

func statusOf(ctx context.Context, sys *system.System) (map[string]any, error) {
	b := sys.Bus
	states, err := b.StageStates(ctx, system.StageSpecs())
	if err != nil {
		return nil, err
	}
	dead, err := b.DeadLetterCounts(ctx)
	if err != nil {
		return nil, err
	}
	kv, err := b.KV(ctx, bus.BucketStats)
	if err != nil {
		return nil, err
	}
	totals, err := bus.StageTotals(ctx, kv)
	if err != nil {
		return nil, err
	}
	type stageStatus struct {
		Stage        string `json:"stage"`
		Pending      uint64 `json:"pending"`
		AckPending   int    `json:"ack_pending"`
		Acked        int64  `json:"acked"`
		Retried      int64  `json:"retried"`
		DeadLettered uint64 `json:"dead_lettered"`
	}
	out := map[string]any{"running": true, "nats": b.URL()}
	var stages []stageStatus
	for _, st := range states {
		t := totals[st.Stage]
		stages = append(stages, stageStatus{Stage: st.Stage, Pending: st.Pending, AckPending: st.AckPending,
			Acked: t.Acked, Retried: t.Retried, DeadLettered: dead[st.Stage]})
	}
	out["stages"] = stages
	if docs, chunks, err := sys.Store.Counts(ctx); err == nil {
		out["documents"], out["chunks"] = docs, chunks
	}
	if hs, err := system.ProviderHealth(ctx, b); err == nil {
		out["providers"] = hs
	}
	if sy, err := siyuan.ReadStatus(ctx, b); err == nil && sy != nil {
		out["siyuan"] = sy
	}
	return out, nil
}
