package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
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
	Embedded     int           `json:"embedded,omitempty"`
	IndexSeconds float64       `json:"index_seconds"`
	Reasons      []string      `json:"reasons,omitempty"`
	Sets         []eval.Report `json:"sets,omitempty"`
	// Lexical is where the lexical leg ran: "index" (the SQLite file's
	// full-text index), or "qdrant" (the collection's lexical vectors, as
	// a retrieve worker without the SQLite file runs it).
	Lexical string `json:"lexical"`
}

// evalFlags are eval's command-line flags.
type evalFlags struct {
	c                                 common
	n                                 neural
	sets, extra                       stringList
	asJSON, answers, calib            *bool
	fetch                             *int
	analyzers, modeList, part         *string
	calPath, method, scripted, labels *string
	scriptedJSON, research            *bool
	scriptedSeed                      *uint64
	researchRate                      *float64
	timeout                           *time.Duration
	dataSet                           bool // --data is on the command line
}

func newEvalFlags() (*flag.FlagSet, *evalFlags) {
	fs := newFlags("eval")
	f := &evalFlags{}
	f.c.register(fs, "warn")
	if d := fs.Lookup("data"); d != nil {
		d.Usage = "build the index in this directory instead of a fresh temporary one (EXOCORTEX_DATA is not used: it is your knowledge base; " +
			"the models are still read from its default models directory)"
		d.DefValue = ""
	}
	fs.Var(&f.sets, "set", "golden set: SQuAD json (v1.1/v2.0) or JSONL; repeat for several (indexed together)")
	fs.Var(&f.extra, "ingest", "also index this folder (a corpus that JSONL gold ids point into); repeatable")
	f.asJSON = fs.Bool("json", false, "print one JSON object")
	f.fetch = fs.Int("fetch", 60, "chunks retrieved per question")
	f.analyzers = fs.String("analyzer", "", "text analysis: plain, stem or full; a comma-separated list runs each on its own index "+
		"(default: the index's own, full for a new index)")
	f.modeList = fs.String("mode", "", "retrieval modes to score, comma-separated: lexical, vector, hybrid, rerank (default: every mode the installed models allow)")
	f.n.register(fs)
	f.part = fs.String("split", eval.PartAll, "questions to score: all, dev (a third of the articles, for tuning) or test (the rest)")
	f.answers = fs.Bool("answers", false, "score answers instead of retrieval: every question goes through retrieval and the answer stage "+
		"with the configured providers; reports false claims shown as supported, citation precision and faithful claims kept (from a scripted provider's labels), "+
		"abstention, wrong language, gold and overlap citation precision and recall, EM/F1 of extractive answers, modes and latency per stage")
	f.calib = fs.Bool("calibrate", false, "with --answers: fit the answer thresholds (llm confidence, extractive score) on the set "+
		"and write them to the calibration file, which up, ask and eval then use")
	f.calPath = fs.String("calibration", "", "calibration file (env "+answer.CalibrationEnv+"; default calibration.json in EXOCORTEX_DATA or --data)")
	f.method = fs.String("calibration-method", eval.MethodIsotonic, "with --calibrate: isotonic (pool-adjacent-violators) or platt (logistic)")
	f.timeout = fs.Duration("timeout", 2*time.Minute, "with --answers: how long to wait for each answer")
	f.scripted = fs.String("scripted", "", "with --answers: answer with the scripted test provider, started in-process instead of the configured providers, "+
		"and score against the labels it gives every claim: KIND is one of its behaviours ("+strings.Join(llmtest.BehaviourNames(), ", ")+")")
	f.scriptedJSON = fs.Bool("scripted-json", false, "with --scripted: the provider takes response_format json_schema, so answers are asked in JSON")
	f.scriptedSeed = fs.Uint64("scripted-seed", 0, "with --scripted mixed: varies which kind each question gets")
	f.research = fs.Bool("research", false, "score research reports instead: every question of the research sets (JSON, see eval/testdata/research-disagree.json) "+
		"goes through plan, investigate, draft and report; reports report sentence precision, planted disagreements reported, changed facts reaching the report "+
		"and calls per research; with --scripted KIND the research stand-in answers ("+strings.Join(llmtest.ResearchKindNames(), ", ")+") and its labels judge the sentences")
	f.researchRate = fs.Float64("scripted-rate", 0, "with --research --scripted: the share of the facts the kind alters (0: one half; 1: every fact it can)")
	f.labels = fs.String("labels", "", "with --answers: read the claims' labels from a scripted provider started elsewhere (its "+llmtest.ClaimsPath+" URL)")
	return fs, f
}

func cmdEval(ctx context.Context, args []string) error {
	fs, f := newEvalFlags()
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	f.sets = append(f.sets, pos...)
	fs.Visit(func(fl *flag.Flag) { f.dataSet = f.dataSet || fl.Name == "data" })
	if *f.research {
		return f.runResearch(ctx)
	}
	script, err := f.check()
	if err != nil {
		return err
	}
	loaded := make([]*eval.Set, 0, len(f.sets))
	for _, p := range f.sets {
		s, err := eval.Load(p)
		if err != nil {
			return err
		}
		loaded = append(loaded, s)
	}
	modes, err := parseAnalyzers(*f.analyzers)
	if err != nil {
		return err
	}
	// eval builds its own index: in a fresh temporary directory unless
	// --data is on its command line (never EXOCORTEX_DATA, the user's
	// knowledge base). The models are still where 'models fetch' put them:
	// the default models directory of the user's data directory.
	temp := !f.dataSet
	if temp {
		f.n.models = models.DirFromEnv(f.n.models, f.c.data)
	}
	if len(modes) > 1 && !temp {
		return errors.New("several analyzers need a temporary index each: leave out --data")
	}
	if *f.answers {
		return f.runAnswers(ctx, loaded, modes, script, temp)
	}
	return f.runRetrieval(ctx, loaded, modes, temp)
}

// runResearch is eval --research: it scores research reports.
func (f *evalFlags) runResearch(ctx context.Context) error {
	if *f.answers || *f.calib || *f.labels != "" || *f.scriptedJSON {
		return &usageError{cmd: "eval", msg: "--research scores research reports: leave out --answers, --calibrate, --labels and --scripted-json"}
	}
	if !f.dataSet {
		f.n.models = models.DirFromEnv(f.n.models, f.c.data)
	}
	return cmdEvalResearch(ctx, f.c, f.n, f.sets, researchOptions{kind: *f.scripted, seed: *f.scriptedSeed, rate: *f.researchRate, timeout: *f.timeout},
		f.dataSet, *f.asJSON)
}

// check refuses flag combinations that make no sense, and returns the
// scripted provider's options (nil without --scripted).
func (f *evalFlags) check() (*scriptedOptions, error) {
	if len(f.sets) == 0 {
		return nil, errors.New("give --set FILE (SQuAD json or JSONL), or the sets as arguments")
	}
	if *f.calib && !*f.answers {
		return nil, errors.New("--calibrate fits the answer thresholds: give --answers too")
	}
	var script *scriptedOptions
	if *f.scripted != "" {
		b, err := llmtest.ParseBehaviour(*f.scripted)
		if err != nil {
			return nil, &usageError{cmd: "eval", msg: "--scripted: " + err.Error()}
		}
		script = &scriptedOptions{behaviour: b, json: *f.scriptedJSON, seed: *f.scriptedSeed}
	}
	if (script != nil || *f.labels != "" || *f.scriptedJSON) && !*f.answers {
		return nil, &usageError{cmd: "eval", msg: "--scripted, --scripted-json and --labels score answers: give --answers too"}
	}
	if script != nil && *f.labels != "" {
		return nil, &usageError{cmd: "eval", msg: "--scripted reads the labels of its own provider: leave out --labels"}
	}
	if *f.scriptedJSON && script == nil {
		return nil, &usageError{cmd: "eval", msg: "--scripted-json is for --scripted KIND"}
	}
	if *f.method != eval.MethodIsotonic && *f.method != eval.MethodPlatt {
		return nil, fmt.Errorf("--calibration-method %q: want isotonic or platt", *f.method)
	}
	return script, nil
}

// parseAnalyzers reads --analyzer's comma-separated list; none is one
// run with the index's own analyzer ("").
func parseAnalyzers(list string) ([]analysis.Mode, error) {
	var modes []analysis.Mode
	for _, m := range splitList(list) {
		mode, err := analysis.ParseMode(m)
		if err != nil {
			return nil, err
		}
		modes = append(modes, mode)
	}
	if len(modes) == 0 {
		modes = []analysis.Mode{""}
	}
	return modes, nil
}

// indexDir is where one eval run builds its index: --data, or a fresh
// temporary directory that done removes.
func (f *evalFlags) indexDir(temp bool) (dir string, done func(), err error) {
	if !temp {
		return f.c.data, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "exocortex-eval-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// runAnswers is eval --answers: it scores the answers on one index.
func (f *evalFlags) runAnswers(ctx context.Context, loaded []*eval.Set, modes []analysis.Mode, script *scriptedOptions, temp bool) error {
	if len(modes) > 1 {
		return errors.New("--answers runs on one index: give one --analyzer")
	}
	if *f.calPath == "" {
		*f.calPath = answer.CalibrationPath(f.c.data) // the user's data directory, not the temporary index
	}
	dir, done, err := f.indexDir(temp)
	if err != nil {
		return err
	}
	defer done()
	rep, err := evalAnswers(ctx, f.c, f.n, dir, loaded, f.extra, answersOptions{calibrate: *f.calib, calibration: *f.calPath, method: *f.method,
		timeout: *f.timeout, part: *f.part, analyzer: modes[0], scripted: script, labelsURL: *f.labels})
	if err != nil {
		return err
	}
	if *f.asJSON {
		return printJSON(rep)
	}
	printAnswers(rep)
	return nil
}

// runRetrieval scores retrieval: one index per analyzer, every
// retrieval mode on each.
func (f *evalFlags) runRetrieval(ctx context.Context, loaded []*eval.Set, modes []analysis.Mode, temp bool) error {
	var outs []evalReport
	for _, mode := range modes {
		dir, done, err := f.indexDir(temp)
		if err != nil {
			return err
		}
		defer done()
		res, err := evalOnce(ctx, f.c, f.n, dir, temp, mode, splitList(*f.modeList), loaded, f.extra, *f.part, *f.fetch)
		if err != nil {
			return err
		}
		outs = append(outs, res...)
	}
	if *f.asJSON {
		if len(outs) == 1 {
			return printJSON(outs[0])
		}
		return printJSON(struct {
			Runs       []evalReport `json:"runs"`
			FusionGain []fusionGain `json:"fusion_gain,omitempty"`
		}{outs, gains(outs)})
	}
	for _, out := range outs {
		printEval(out)
	}
	printGain(outs)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// fusionGain is hybrid minus the better single retriever, at R@1, R@5 and MRR.
type fusionGain struct {
	Analyzer  string  `json:"analyzer"`
	RecallAt1 float64 `json:"recall_at_1"`
	RecallAt5 float64 `json:"recall_at_5"`
	MRRAt15   float64 `json:"mrr_at_15"`
}

func gains(outs []evalReport) []fusionGain {
	by := map[string]map[string]eval.Report{}
	var order []string
	for _, o := range outs {
		if by[o.Analyzer] == nil {
			by[o.Analyzer] = map[string]eval.Report{}
			order = append(order, o.Analyzer)
		}
		by[o.Analyzer][o.Mode] = o.Report
	}
	var out []fusionGain
	for _, a := range order {
		m := by[a]
		l, okL := m[schemas.ModeLexical]
		v, okV := m[schemas.ModeVector]
		h, okH := m[schemas.ModeHybrid]
		if !okL || !okV || !okH {
			continue
		}
		out = append(out, fusionGain{Analyzer: a, RecallAt1: round4(h.RecallAt1 - max(l.RecallAt1, v.RecallAt1)),
			RecallAt5: round4(h.RecallAt5 - max(l.RecallAt5, v.RecallAt5)), MRRAt15: round4(h.MRRAt15 - max(l.MRRAt15, v.MRRAt15))})
	}
	return out
}

func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

func printGain(outs []evalReport) {
	for _, g := range gains(outs) {
		fmt.Printf("fusion gain (hybrid minus the better single retriever, analyzer %s): R@1 %+.4f  R@5 %+.4f  MRR@15 %+.4f\n",
			g.Analyzer, g.RecallAt1, g.RecallAt5, g.MRRAt15)
	}
}

// evalOnce indexes the sets (and extra folders) into dir with the analyzer
// mode and scores the part's questions in each retrieval mode.
func evalOnce(ctx context.Context, c common, n neural, dir string, temp bool, mode analysis.Mode, modes []string, loaded []*eval.Set,
	extra []string, part string, fetch int) ([]evalReport, error) {
	c.data = dir
	for _, m := range modes {
		if !schemas.ValidMode(m) || m == "" {
			return nil, fmt.Errorf("--mode %q: want lexical, vector, hybrid or rerank", m)
		}
	}
	if _, running := system.Running(c.data); running || c.nats != "" {
		return nil, fmt.Errorf("eval builds and reads its own index: stop the system running on %s, or leave out --data", c.data)
	}
	cfg := system.Config{DataDir: c.data, Listen: "127.0.0.1:-1", Analyzer: mode, Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return nil, err
	}
	var docs []*schemas.DocChanged
	for _, s := range loaded {
		docs = append(docs, s.Docs...)
	}
	sys, indexSecs, stop, err := startEvalIndex(ctx, cfg, temp, docs, extra, true)
	if err != nil {
		return nil, err
	}
	defer stop()
	if len(modes) == 0 {
		modes = installedModes(sys.Retriever)
	}
	r, lexicalOn := evalRetriever(sys)
	var outs []evalReport
	for _, m := range modes {
		out, err := scoreMode(ctx, sys, r, lexicalOn, m, loaded, part, fetch)
		if err != nil {
			return nil, err
		}
		out.IndexSeconds = indexSecs
		outs = append(outs, out)
	}
	return outs, nil
}

// installedModes are the retrieval modes the installed models allow.
func installedModes(r *retrieval.Retriever) []string {
	modes := []string{schemas.ModeLexical}
	switch r.Modes() {
	case schemas.ModeRerank:
		modes = append(modes, schemas.ModeVector, schemas.ModeHybrid, schemas.ModeRerank)
	case schemas.ModeHybrid:
		modes = append(modes, schemas.ModeVector, schemas.ModeHybrid)
	}
	return modes
}

// evalRetriever is the retriever eval scores and where its lexical leg
// runs. With --vectors qdrant the lexical leg runs on the collection's
// lexical vectors, as a retrieve worker without the SQLite file runs
// it; the index stage wrote them beside the SQLite file.
func evalRetriever(sys *system.System) (*retrieval.Retriever, string) {
	lexicalOn, r := "index", sys.Retriever
	if ls, ok := sys.Vectors.(vectors.LexicalStore); ok {
		if has, why := ls.HasLexical(); has {
			lexicalOn = ls.Name()
			r = &retrieval.Retriever{Index: &retrieval.VectorIndex{Store: ls, Analyzer: sys.Store.Analyzer()}, Vectors: r.Vectors, Embedder: r.Embedder,
				Reranker: r.Reranker, Config: r.Config, Reformulate: r.Reformulate, Translate: r.Translate}
		} else {
			fmt.Fprintf(os.Stderr, "note: lexical search on the index file, not on %s: %s\n", ls.Name(), why)
		}
	}
	return r, lexicalOn
}

// scoreMode scores the part's questions of every set in one retrieval
// mode m (IndexSeconds is left to the caller).
func scoreMode(ctx context.Context, sys *system.System, r *retrieval.Retriever, lexicalOn, m string, loaded []*eval.Set, part string, fetch int) (evalReport, error) {
	st := sys.Store
	var searcher eval.Searcher = st
	srch := &retrieval.Searcher{R: r, Mode: m}
	if m != schemas.ModeLexical || lexicalOn != "index" {
		searcher = srch
	}
	var reps []eval.Report
	for _, s := range loaded {
		s, err := eval.Split(s, part)
		if err != nil {
			return evalReport{}, err
		}
		r, err := eval.Run(ctx, searcher, s, eval.Options{Fetch: fetch})
		if err != nil {
			return evalReport{}, fmt.Errorf("mode %s: %w", m, err)
		}
		reps = append(reps, r)
	}
	out := evalReport{Mode: m, Analyzer: st.Analyzer().Name(), Part: part, Reasons: srch.LastReasons, Lexical: lexicalOn}
	if srch.LastMode != "" && srch.LastMode != m {
		out.Mode = srch.LastMode + " (asked " + m + ")"
	}
	out.Documents, out.Chunks, _ = st.Counts(ctx)
	if sys.Embedder != nil {
		out.Embedded, _, _ = st.EmbedCounts(ctx, sys.Embedder.Name())
	}
	if len(reps) == 1 {
		out.Report = reps[0]
	} else {
		out.Report = eval.Merge("all", reps)
		out.Sets = reps
	}
	return out, nil
}

func printEval(out evalReport) {
	fmt.Printf("indexed %s, %s (%d embedded) in %.1fs (mode %s, analyzer %s, questions: %s)\n",
		plural(out.Documents, "document", "documents"), plural(out.Chunks, "chunk", "chunks"), out.Embedded, out.IndexSeconds, out.Mode, out.Analyzer, out.Part)
	if out.Lexical != "index" && out.Lexical != "" {
		fmt.Printf("  lexical search on %s's lexical vectors\n", out.Lexical)
	}
	for _, r := range out.Reasons {
		fmt.Printf("  note: %s\n", r)
	}
	fmt.Printf("%-20s %6s %8s %8s %8s %8s %8s %8s\n", "set", "n", "R@1", "R@5", "R@15", "MRR@15", "p50 ms", "p95 ms")
	rows := append(append([]eval.Report{}, out.Sets...), out.Report)
	if len(out.Sets) == 0 {
		rows = rows[len(rows)-1:]
	}
	for _, r := range rows {
		fmt.Printf("%-20s %6d %8.4f %8.4f %8.4f %8.4f %8.2f %8.2f\n", r.Name, r.N, r.RecallAt1, r.RecallAt5, r.RecallAt15, r.MRRAt15, r.LatencyP50Ms, r.LatencyP95Ms)
	}
}

// evalCollection gives eval its own Qdrant collection, so that the sets
// never go into the notes' one: a throwaway collection for a temporary
// index (dropped when done, see dropEvalCollection), and
// evalCollectionName beside an index eval keeps (--data).
func evalCollection(cfg *system.Config, temp bool) {
	if cfg.Vectors.Kind != vectors.KindQdrant {
		return
	}
	cfg.Vectors.Qdrant.Collection = evalCollectionName
	if temp {
		cfg.Vectors.Qdrant.Collection = fmt.Sprintf("%s_%x", evalCollectionName, time.Now().UnixNano())
	}
}

// evalCollectionName is the Qdrant collection of an index eval keeps (--data).
const evalCollectionName = "exocortex_eval"

// dropEvalCollection deletes a temporary index's throwaway collection
// (and no other: its name must be evalCollection's).
func dropEvalCollection(sys *system.System, cfg system.Config) {
	d, ok := sys.Vectors.(interface{ DropCollection(context.Context) error })
	if !ok || !strings.HasPrefix(cfg.Vectors.Qdrant.Collection, evalCollectionName+"_") {
		return
	}
	if err := d.DropCollection(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "note: %v (eval's throwaway collection: delete it by hand)\n", err)
	}
}

// startEvalIndex starts the system on cfg, eval's own index (in its own
// Qdrant collection, see evalCollection), and indexes the documents and
// folders into it; indexSecs is how long that took. printNotes prints the
// system's model notes on stderr before indexing. stop stops the system
// and drops a throwaway collection.
func startEvalIndex(ctx context.Context, cfg system.Config, temp bool, docs []*schemas.DocChanged, folders []string, printNotes bool) (
	sys *system.System, indexSecs float64, stop func(), err error) {
	evalCollection(&cfg, temp)
	start := time.Now()
	sys, err = system.Start(ctx, cfg)
	if err != nil {
		return nil, 0, nil, err
	}
	stop = func() {
		dropEvalCollection(sys, cfg)
		sys.Stop()
	}
	if printNotes {
		for _, note := range sys.ModelNotes {
			fmt.Fprintf(os.Stderr, "note: %s\n", note)
		}
	}
	if err := indexForEval(ctx, sys.Bus, docs, folders, newTraceID("eval")); err != nil {
		stop()
		return nil, 0, nil, err
	}
	return sys, time.Since(start).Seconds(), stop, nil
}

// scriptedLLM is the LLM configuration of the scripted test provider at
// url, in every role; structured is its StructuredOutput.
func scriptedLLM(url, structured string) *llm.Config {
	return &llm.Config{Providers: []llm.Provider{{Name: "scripted", BaseURL: url, Free: true, Timeout: 30 * time.Second,
		StructuredOutput: structured,
		Models:           map[string]string{llm.RoleFast: "scripted", llm.RoleLongContext: "scripted", llm.RoleStrategic: "scripted"}}}}
}

// indexForEval publishes the sets' documents and the folders' notes onto
// the bus and waits until every stage is idle: the index an eval reads.
func indexForEval(ctx context.Context, b *bus.Bus, docs []*schemas.DocChanged, folders []string, trace string) error {
	for _, d := range docs {
		if _, err := b.Publish(ctx, d, trace); err != nil {
			return err
		}
	}
	if len(folders) > 0 {
		state, err := b.KV(ctx, stage.BucketSources)
		if err != nil {
			return err
		}
		if _, _, err := files.Sync(ctx, folders, state, func(ctx context.Context, ev *schemas.DocChanged) error {
			_, err := b.Publish(ctx, ev, trace)
			return err
		}, files.SyncOptions{}); err != nil {
			return err
		}
	}
	if err := system.WaitIdle(ctx, b, system.StageSpecs(), 100*time.Millisecond, nil); err != nil {
		return fmt.Errorf("waiting for indexing: %w", err)
	}
	return nil
}
