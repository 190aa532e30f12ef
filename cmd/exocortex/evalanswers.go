package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// answersOptions are the flags of eval --answers.
type answersOptions struct {
	calibrate   bool
	calibration string // the calibration file: read, or written with calibrate
	method      string
	timeout     time.Duration
	part        string
	analyzer    analysis.Mode
}

// answersReport is what eval --answers prints with --json.
type answersReport struct {
	eval.AnswerReport
	Documents    int                  `json:"documents"`
	Chunks       int                  `json:"chunks"`
	IndexSeconds float64              `json:"index_seconds"`
	Part         string               `json:"part"`
	Notes        []string             `json:"notes,omitempty"`
	Sets         []eval.AnswerReport  `json:"sets,omitempty"`
	Calibration  *answer.Calibrations `json:"calibration,omitempty"`
	// CalibrationFile is the file the run's thresholds came from (or, with
	// --calibrate, the file written); empty when none was used.
	CalibrationFile string `json:"calibration_file,omitempty"`
	// Calibrated says the run's answer thresholds came from the file;
	// Written that --calibrate wrote it.
	Calibrated bool `json:"calibrated"`
	Written    bool `json:"written,omitempty"`
}

// evalAnswers indexes the sets' documents and notes folders into dir, asks
// every question through the whole query path (retrieve, rerank, answer
// with the configured providers) and scores the answers; with calibrate it
// fits the answer thresholds and writes them to the calibration file.
func evalAnswers(ctx context.Context, c common, n neural, dir string, loaded []*eval.Set, extra []string, o answersOptions) (*answersReport, error) {
	if _, running := pipeline.Running(dir); running || c.nats != "" {
		return nil, fmt.Errorf("eval builds and reads its own index: stop the system running on %s, or leave out --data", dir)
	}
	folders := append([]string(nil), extra...)
	for _, s := range loaded {
		for _, nf := range s.Notes {
			if _, err := os.Stat(nf); err != nil {
				return nil, fmt.Errorf("golden set %s: its notes folder: %w (give the folder with --ingest)", s.Name, err)
			}
			folders = append(folders, nf)
		}
	}
	rep := &answersReport{Part: o.part}
	cfg := pipeline.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: c.logger(), Calibration: o.calibration, Analyzer: o.analyzer}
	if o.calibrate {
		// Fit on what the verifier lets through at all: no calibration, and
		// thresholds low enough that the raw scores are seen.
		cfg.Calibration = pipeline.CalibrationOff
		cfg.Answer.MinCoverage, cfg.Answer.MinConfidence, cfg.Answer.QAThreshold = 1e-9, 1e-9, 1e-9
	} else {
		cal, err := answer.LoadCalibrations(o.calibration)
		if err != nil {
			return nil, err
		}
		if cal != nil {
			rep.Calibration, rep.CalibrationFile, rep.Calibrated = cal, o.calibration, true
		}
	}
	if err := n.apply(&cfg); err != nil {
		return nil, err
	}
	temp := dir != c.data
	evalCollection(&cfg, temp)
	start := time.Now()
	sys, err := pipeline.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer sys.Stop()
	defer dropEvalCollection(sys, cfg)
	rep.Notes = append(rep.Notes, sys.ModelNotes...)
	for _, note := range sys.ModelNotes {
		fmt.Fprintf(os.Stderr, "note: %s\n", note)
	}
	b := sys.Bus
	trace := newTraceID("eval")
	for _, s := range loaded {
		for _, d := range s.Docs {
			if _, err := b.Publish(ctx, d, trace); err != nil {
				return nil, err
			}
		}
	}
	if len(folders) > 0 {
		state, err := b.KV(ctx, stage.BucketSources)
		if err != nil {
			return nil, err
		}
		if _, _, err := files.Sync(ctx, folders, state, func(ctx context.Context, ev *schemas.DocChanged) error {
			_, err := b.Publish(ctx, ev, trace)
			return err
		}, files.SyncOptions{}); err != nil {
			return nil, err
		}
	}
	if err := pipeline.WaitIdle(ctx, b, pipeline.StageSpecs(), 100*time.Millisecond, nil); err != nil {
		return nil, fmt.Errorf("waiting for indexing: %w", err)
	}
	rep.IndexSeconds = round4(time.Since(start).Seconds())
	rep.Documents, rep.Chunks, _ = sys.Store.Counts(ctx)
	blocks, err := eval.CollectBlocks(loaded, folders)
	if err != nil {
		return nil, err
	}
	ask := func(ctx context.Context, q eval.Question) (*schemas.AnswerDone, error) {
		qs := &schemas.QuerySubmitted{QueryID: newTraceID("eval"), Question: q.Question, Lang: q.Lang}
		if n.noModels {
			qs.Options.Mode = schemas.ModeLexical
		}
		return pipeline.AskAnswer(ctx, b, qs, o.timeout, nil)
	}
	var reps []eval.AnswerReport
	for _, s := range loaded {
		s, err := eval.Split(s, o.part)
		if err != nil {
			return nil, err
		}
		r, err := eval.RunAnswers(ctx, ask, s, blocks)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	if len(reps) == 1 {
		rep.AnswerReport = reps[0]
	} else {
		rep.AnswerReport = eval.MergeAnswers("all", reps)
		rep.Sets = reps
	}
	if o.calibrate {
		if err := calibrate(rep, loaded, o); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// calibrate fits the llm and extractive calibrations on the run's answers
// and writes them to the calibration file.
func calibrate(rep *answersReport, loaded []*eval.Set, o answersOptions) error {
	var names []string
	for _, s := range loaded {
		names = append(names, s.Name)
	}
	cal := &answer.Calibrations{Set: strings.Join(names, ","), Fitted: time.Now().UTC().Truncate(time.Second)}
	var errs []error
	var err error
	if cal.LLM, err = eval.Calibrate(rep.Samples, schemas.AnswerLLM, o.method); err != nil {
		errs = append(errs, err)
	}
	if cal.QA, err = eval.Calibrate(rep.Samples, schemas.AnswerExtractive, o.method); err != nil {
		errs = append(errs, err)
	}
	if cal.LLM == nil && cal.QA == nil {
		return fmt.Errorf("nothing to calibrate: %w (configure a language-model provider, EXOCORTEX_LLM_BASE_URL or --llm-config, or install the extractive model)",
			errors.Join(errs...))
	}
	if err := cal.Save(o.calibration); err != nil {
		return err
	}
	rep.Calibration, rep.CalibrationFile, rep.Written = cal, o.calibration, true
	return nil
}

func printAnswers(r *answersReport) {
	fmt.Printf("indexed %s, %s in %.1fs (questions: %s)\n", plural(r.Documents, "document", "documents"), plural(r.Chunks, "chunk", "chunks"), r.IndexSeconds, r.Part)
	rows := append(append([]eval.AnswerReport{}, r.Sets...), r.AnswerReport)
	if len(r.Sets) == 0 {
		rows = rows[len(rows)-1:]
	}
	for _, a := range rows {
		fmt.Printf("\nanswers on %s: %d questions (%d answerable, %d not in the notes)\n", a.Name, a.N, a.Answerable, a.Unanswerable)
		var modes []string
		for m, k := range a.Modes {
			modes = append(modes, fmt.Sprintf("%s %d", m, k))
		}
		sort.Strings(modes)
		fmt.Printf("  modes               %s\n", strings.Join(modes, ", "))
		fmt.Printf("  citation precision  %.4f  (%d of %d citations name a block that holds their claim's support: its quote, or most of its words)\n", a.SupportPrecision, a.SupportCitations, a.AllCitations)
		fmt.Printf("  citation recall     %.4f  (%d of %d claims have a citation whose block holds them)\n", a.SupportRecall, a.SupportClaims, a.AllClaims)
		fmt.Printf("  gold precision      %.4f  (%d of %d citations of answers to answerable questions name a gold block or one holding a gold answer)\n",
			a.CitationPrecision, a.CorrectCitations, a.Citations)
		fmt.Printf("  gold recall         %.4f  (%d of %d claims have such a citation); answers with one: %.4f\n", a.CitationRecall, a.SupportedClaims, a.Claims, a.SupportedAnswers)
		fmt.Printf("  abstention          %.4f  (%d of %d questions not in the notes said so); answerable but abstained: %d\n", a.AbstentionRate, a.AbstainedRight, a.Unanswerable, a.AbstainedWrong)
		if a.Extractive > 0 {
			fmt.Printf("  extractive          EM %.4f  F1 %.4f  (%d answers)\n", a.ExactMatch, a.F1, a.Extractive)
		}
		fmt.Printf("  confidence          mean %.4f; unsupported sentences marked: %d; citations on unanswerable questions: %d\n", a.MeanConfidence, a.Unsupported, a.CitationsUnanswerable)
		fmt.Printf("  %-18s %9s %9s %5s\n", "latency (ms)", "p50", "p95", "n")
		for _, st := range a.Stages() {
			l := a.LatencyMS[st]
			fmt.Printf("  %-18s %9.2f %9.2f %5d\n", st, l.P50, l.P95, l.N)
		}
		for _, m := range a.Misses {
			fmt.Printf("  miss: %s\n", m)
		}
	}
	if r.Calibration == nil {
		return
	}
	verb := "read from"
	if r.Written {
		verb = "written to"
	}
	fmt.Printf("\ncalibration %s %s (fitted on %s, %s):\n", verb, r.CalibrationFile, r.Calibration.Set, r.Calibration.Fitted.Format(time.RFC3339))
	for _, kc := range []struct {
		kind string
		c    *answer.Calibration
	}{{"llm confidence", r.Calibration.LLM}, {"extractive score", r.Calibration.QA}} {
		if kc.c == nil {
			fmt.Printf("  %-17s none (no such answers)\n", kc.kind)
			continue
		}
		fmt.Printf("  %-17s %s on %d answers, threshold %.4f (calibrated probability of a right answer)\n", kc.kind, kc.c.Method, kc.c.Samples, kc.c.Threshold)
	}
}
