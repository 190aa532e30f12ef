package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/pipeline"
)

type stageStatus struct {
	Stage        string `json:"stage"`
	Pending      uint64 `json:"pending"`
	AckPending   int    `json:"ack_pending"`
	Acked        int64  `json:"acked"`
	Retried      int64  `json:"retried"`
	DeadLettered uint64 `json:"dead_lettered"`
}

type statusReport struct {
	Running   bool          `json:"running"`
	NATS      string        `json:"nats,omitempty"`
	Stages    []stageStatus `json:"stages"`
	Documents int           `json:"documents"`
	Chunks    int           `json:"chunks"`
}

func cmdStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var c common
	c.register(fs, "warn")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	rep := statusReport{}
	_, rep.Running = pipeline.Running(c.data)
	b, _, closeFn, err := pipeline.Attach(ctx, pipeline.Config{DataDir: c.data, NATSURL: c.nats, Log: c.logger()}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	if rep.Running || c.nats != "" {
		rep.NATS = b.URL()
	}
	states, err := b.StageStates(ctx, bus.Stages())
	if err != nil {
		return err
	}
	dead, err := b.DeadLetterCounts(ctx)
	if err != nil {
		return err
	}
	kv, err := b.KV(ctx, bus.BucketStats)
	if err != nil {
		return err
	}
	totals, err := bus.StageTotals(ctx, kv)
	if err != nil {
		return err
	}
	for _, s := range states {
		t := totals[s.Stage]
		rep.Stages = append(rep.Stages, stageStatus{Stage: s.Stage, Pending: s.Pending, AckPending: s.AckPending,
			Acked: t.Acked, Retried: t.Retried, DeadLettered: dead[s.Stage]})
	}
	rep.Documents, rep.Chunks = countIndexed(ctx, c.data)
	if *asJSON {
		return printJSON(rep)
	}
	state := "not running"
	if rep.Running {
		state = "running, NATS " + rep.NATS
	}
	fmt.Printf("exocortex on %s: %s\n", c.data, state)
	fmt.Printf("%-8s %10s %12s %10s %10s %14s\n", "stage", "pending", "in flight", "acked", "retried", "dead-lettered")
	for _, s := range rep.Stages {
		fmt.Printf("%-8s %10d %12d %10d %10d %14d\n", s.Stage, s.Pending, s.AckPending, s.Acked, s.Retried, s.DeadLettered)
	}
	fmt.Printf("indexed: %d documents, %d chunks\n", rep.Documents, rep.Chunks)
	return nil
}
