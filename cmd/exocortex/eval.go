package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/files"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type evalReport struct {
	eval.Report
	Mode         string        `json:"mode"`
	Documents    int           `json:"documents"`
	Chunks       int           `json:"chunks"`
	IndexSeconds float64       `json:"index_seconds"`
	Sets         []eval.Report `json:"sets,omitempty"`
}

func cmdEval(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var c common
	c.register(fs, "warn")
	var sets, extra stringList
	fs.Var(&sets, "set", "golden set: SQuAD json (v1.1/v2.0) or JSONL; repeat for several (indexed together)")
	fs.Var(&extra, "ingest", "also index this folder (a corpus that JSONL gold ids point into); repeatable")
	asJSON := fs.Bool("json", false, "print one JSON object")
	fetch := fs.Int("fetch", 60, "chunks retrieved per question")
	dataSet := false
	if _, err := parse(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { dataSet = dataSet || f.Name == "data" })
	if len(sets) == 0 {
		return errors.New("give --set FILE (SQuAD json or JSONL)")
	}
	loaded := make([]*eval.Set, 0, len(sets))
	for _, p := range sets {
		s, err := eval.Load(p)
		if err != nil {
			return err
		}
		loaded = append(loaded, s)
	}
	if !dataSet && os.Getenv("EXOCORTEX_DATA") == "" {
		tmp, err := os.MkdirTemp("", "exocortex-eval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		c.data = tmp
	}

	start := time.Now()
	b, _, closeFn, err := pipeline.Attach(ctx, pipeline.Config{DataDir: c.data, NATSURL: c.nats, Log: c.logger()}, true)
	if err != nil {
		return err
	}
	defer closeFn()
	trace := newTraceID("eval")
	for _, s := range loaded {
		for _, d := range s.Docs {
			if _, err := b.Publish(ctx, d, trace); err != nil {
				return err
			}
		}
	}
	if len(extra) > 0 {
		state, err := b.KV(ctx, bus.BucketSources)
		if err != nil {
			return err
		}
		if _, _, err := files.Sync(ctx, extra, state, func(ctx context.Context, ev *schemas.DocChanged) error {
			_, err := b.Publish(ctx, ev, trace)
			return err
		}, files.SyncOptions{}); err != nil {
			return err
		}
	}
	if err := pipeline.WaitIdle(ctx, b, bus.Stages(), 100*time.Millisecond, nil); err != nil {
		return fmt.Errorf("waiting for indexing: %w", err)
	}
	indexSecs := time.Since(start).Seconds()

	st, err := store.OpenReadOnly(pipeline.DBPath(c.data))
	if err != nil {
		return err
	}
	defer st.Close()
	var reps []eval.Report
	for _, s := range loaded {
		r, err := eval.Run(ctx, st, s, eval.Options{Fetch: *fetch})
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	out := evalReport{Mode: "lexical", IndexSeconds: indexSecs}
	out.Documents, out.Chunks, _ = st.Counts(ctx)
	if len(reps) == 1 {
		out.Report = reps[0]
	} else {
		out.Report = eval.Merge("all", reps)
		out.Sets = reps
	}
	if *asJSON {
		return printJSON(out)
	}
	fmt.Printf("indexed %d documents, %d chunks in %.1fs (mode %s)\n", out.Documents, out.Chunks, indexSecs, out.Mode)
	fmt.Printf("%-20s %6s %8s %8s %8s %8s %8s %8s\n", "set", "n", "R@1", "R@5", "R@15", "MRR@15", "p50 ms", "p95 ms")
	rows := append(append([]eval.Report{}, reps...), out.Report)
	if len(reps) == 1 {
		rows = reps
	}
	for _, r := range rows {
		fmt.Printf("%-20s %6d %8.4f %8.4f %8.4f %8.4f %8.2f %8.2f\n", r.Name, r.N, r.RecallAt1, r.RecallAt5, r.RecallAt15, r.MRRAt15, r.LatencyP50Ms, r.LatencyP95Ms)
	}
	return nil
}
