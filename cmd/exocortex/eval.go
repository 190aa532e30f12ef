package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/exocortex/exocortex/analysis"
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
	Analyzer     string        `json:"analyzer"`
	Part         string        `json:"part"`
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
	analyzers := fs.String("analyzer", "", "text analysis: plain, stem or full; a comma-separated list runs each on its own index "+
		"(default: the index's own, full for a new index)")
	part := fs.String("split", eval.PartAll, "questions to score: all, dev (a third of the articles, for tuning) or test (the rest)")
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
	var modes []analysis.Mode
	for _, m := range strings.Split(*analyzers, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		mode, err := analysis.ParseMode(m)
		if err != nil {
			return err
		}
		modes = append(modes, mode)
	}
	if len(modes) == 0 {
		modes = []analysis.Mode{""}
	}
	temp := !dataSet && os.Getenv("EXOCORTEX_DATA") == ""
	if len(modes) > 1 && !temp {
		return errors.New("several analyzers need a temporary index each: leave out --data and EXOCORTEX_DATA")
	}
	var outs []evalReport
	for _, mode := range modes {
		dir := c.data
		if temp {
			tmp, err := os.MkdirTemp("", "exocortex-eval-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		out, err := evalOnce(ctx, c, dir, mode, loaded, extra, *part, *fetch)
		if err != nil {
			return err
		}
		outs = append(outs, out)
	}
	if *asJSON {
		if len(outs) == 1 {
			return printJSON(outs[0])
		}
		return printJSON(outs)
	}
	for _, out := range outs {
		printEval(out)
	}
	return nil
}

// evalOnce indexes the sets (and extra folders) into dir with the analyzer
// mode and scores the part's questions.
func evalOnce(ctx context.Context, c common, dir string, mode analysis.Mode, loaded []*eval.Set, extra []string,
	part string, fetch int) (evalReport, error) {
	c.data = dir
	start := time.Now()
	b, _, closeFn, err := pipeline.Attach(ctx, pipeline.Config{DataDir: c.data, NATSURL: c.nats, Analyzer: mode, Log: c.logger()}, true)
	if err != nil {
		return evalReport{}, err
	}
	defer closeFn()
	trace := newTraceID("eval")
	for _, s := range loaded {
		for _, d := range s.Docs {
			if _, err := b.Publish(ctx, d, trace); err != nil {
				return evalReport{}, err
			}
		}
	}
	if len(extra) > 0 {
		state, err := b.KV(ctx, bus.BucketSources)
		if err != nil {
			return evalReport{}, err
		}
		if _, _, err := files.Sync(ctx, extra, state, func(ctx context.Context, ev *schemas.DocChanged) error {
			_, err := b.Publish(ctx, ev, trace)
			return err
		}, files.SyncOptions{}); err != nil {
			return evalReport{}, err
		}
	}
	if err := pipeline.WaitIdle(ctx, b, bus.Stages(), 100*time.Millisecond, nil); err != nil {
		return evalReport{}, fmt.Errorf("waiting for indexing: %w", err)
	}
	indexSecs := time.Since(start).Seconds()

	st, err := store.OpenReadOnly(pipeline.DBPath(c.data))
	if err != nil {
		return evalReport{}, err
	}
	defer st.Close()
	var reps []eval.Report
	for _, s := range loaded {
		s, err := eval.Split(s, part)
		if err != nil {
			return evalReport{}, err
		}
		r, err := eval.Run(ctx, st, s, eval.Options{Fetch: fetch})
		if err != nil {
			return evalReport{}, err
		}
		reps = append(reps, r)
	}
	out := evalReport{Mode: "lexical", Analyzer: st.Analyzer().Name(), Part: part, IndexSeconds: indexSecs}
	out.Documents, out.Chunks, _ = st.Counts(ctx)
	if len(reps) == 1 {
		out.Report = reps[0]
	} else {
		out.Report = eval.Merge("all", reps)
		out.Sets = reps
	}
	return out, nil
}

func printEval(out evalReport) {
	fmt.Printf("indexed %d documents, %d chunks in %.1fs (mode %s, analyzer %s, questions: %s)\n",
		out.Documents, out.Chunks, out.IndexSeconds, out.Mode, out.Analyzer, out.Part)
	fmt.Printf("%-20s %6s %8s %8s %8s %8s %8s %8s\n", "set", "n", "R@1", "R@5", "R@15", "MRR@15", "p50 ms", "p95 ms")
	rows := append(append([]eval.Report{}, out.Sets...), out.Report)
	if len(out.Sets) == 0 {
		rows = rows[len(rows)-1:]
	}
	for _, r := range rows {
		fmt.Printf("%-20s %6d %8.4f %8.4f %8.4f %8.4f %8.2f %8.2f\n", r.Name, r.N, r.RecallAt1, r.RecallAt5, r.RecallAt15, r.MRRAt15, r.LatencyP50Ms, r.LatencyP95Ms)
	}
}
