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
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// answersOptions are the flags of eval --answers.
type answersOptions struct {
	calibrate   bool
	calibration string // the calibration file: read, or written with calibrate
	method      string
	timeout     time.Duration
	part        string
	analyzer    analysis.Mode
	// scripted answers with the scripted test provider started in-process
	// (nil: the configured providers); labelsURL reads the labels of a
	// scripted provider started elsewhere (its /exocortex/claims URL).
	scripted  *scriptedOptions
	labelsURL string
}

// scriptedOptions start the scripted provider of eval --answers --scripted.
type scriptedOptions struct {
	behaviour llmtest.Behaviour
	json      bool // it takes response_format json_schema: answers are asked in JSON
	seed      uint64
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
	if _, running := system.Running(dir); running || c.nats != "" {
		return nil, fmt.Errorf("eval builds and reads its own index: stop the system running on %s, or leave out --data", dir)
	}
	folders, err := answerFolders(loaded, extra)
	if err != nil {
		return nil, err
	}
	rep := &answersReport{Part: o.part}
	cfg := system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: c.logger(), Calibration: o.calibration, Analyzer: o.analyzer}
	if err := answersCalibration(&cfg, rep, o); err != nil {
		return nil, err
	}
	if err := n.apply(&cfg); err != nil {
		return nil, err
	}
	blocks, err := eval.CollectBlocks(loaded, folders)
	if err != nil {
		return nil, err
	}
	opts, closeScripted := answerLabels(&cfg, rep, loaded, blocks, o)
	defer closeScripted()
	var docs []*schemas.DocChanged
	for _, s := range loaded {
		docs = append(docs, s.Docs...)
	}
	sys, indexSecs, stop, err := startEvalIndex(ctx, cfg, dir != c.data, docs, folders, true)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep.Notes = append(rep.Notes, sys.ModelNotes...)
	rep.IndexSeconds = round4(indexSecs)
	rep.Documents, rep.Chunks, _ = sys.Store.Counts(ctx)
	reps, err := scoreAnswers(ctx, client.New(sys.Bus, client.Options{AskTimeout: o.timeout}), n.noModels, loaded, blocks, opts, o.part)
	if err != nil {
		return nil, err
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

// answerFolders are the notes folders to index: the --ingest ones and
// the sets' own.
func answerFolders(loaded []*eval.Set, extra []string) ([]string, error) {
	folders := append([]string(nil), extra...)
	for _, s := range loaded {
		for _, nf := range s.Notes {
			if _, err := os.Stat(nf); err != nil {
				return nil, fmt.Errorf("golden set %s: its notes folder: %w (give the folder with --ingest)", s.Name, err)
			}
			folders = append(folders, nf)
		}
	}
	return folders, nil
}

// answersCalibration sets the run's answer thresholds: to fit them
// (--calibrate), or from the calibration file.
func answersCalibration(cfg *system.Config, rep *answersReport, o answersOptions) error {
	if o.calibrate {
		// Fit on what the verifier lets through at all: no calibration, and
		// thresholds low enough that the raw scores are seen.
		cfg.Calibration = system.CalibrationOff
		cfg.Answer.MinCoverage, cfg.Answer.MinConfidence, cfg.Answer.QAThreshold = 1e-9, 1e-9, 1e-9
		return nil
	}
	cal, err := answer.LoadCalibrations(o.calibration)
	if err != nil {
		return err
	}
	if cal != nil {
		rep.Calibration, rep.CalibrationFile, rep.Calibrated = cal, o.calibration, true
	}
	return nil
}

// answerLabels is where the claims' labels come from: the scripted
// provider started here (which then answers too: cfg.LLM), a scripted
// provider elsewhere (--labels), or none. closeScripted stops the one
// started here.
func answerLabels(cfg *system.Config, rep *answersReport, loaded []*eval.Set, blocks map[string]string, o answersOptions) (
	opts eval.AnswerOptions, closeScripted func()) {
	opts = eval.AnswerOptions{NoLabels: "the provider does not label its claims: give --scripted KIND (or --labels URL of a scripted provider) " +
		"for false_supported, citation_precision, faithful_kept and confidence_auc"}
	switch {
	case o.scripted != nil:
		srv := startScripted(loaded, blocks, *o.scripted)
		format := "prose"
		if o.scripted.json {
			format = "json"
		}
		cfg.LLM = scriptedLLM(srv.URL(), map[bool]string{true: "json_schema", false: "none"}[o.scripted.json])
		opts = eval.AnswerOptions{LabelSource: fmt.Sprintf("scripted provider in-process: behaviour %s, seed %d, answers in %s", o.scripted.behaviour, o.scripted.seed, format),
			Labels: func(_ context.Context, question string) ([]eval.Label, error) {
				return labelsOf(srv.Claims(question)), nil
			}}
		rep.Notes = append(rep.Notes, fmt.Sprintf("answers from the scripted test provider (behaviour %s, %s) at %s, not from the configured providers", o.scripted.behaviour, format, srv.URL()))
		return opts, srv.Close
	case o.labelsURL != "":
		opts = eval.AnswerOptions{LabelSource: o.labelsURL, Labels: eval.HTTPLabels(o.labelsURL)}
	}
	return opts, func() {}
}

// scoreAnswers asks the part's questions of every set through the whole
// query path and scores the answers, one report per set.
func scoreAnswers(ctx context.Context, cl *client.Client, lexicalOnly bool, loaded []*eval.Set, blocks map[string]string, opts eval.AnswerOptions,
	part string) ([]eval.AnswerReport, error) {
	ask := func(ctx context.Context, q eval.Question) (*schemas.AnswerDone, error) {
		qs := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: newTraceID("eval"), Question: q.Question, Lang: q.Lang}}
		if lexicalOnly {
			qs.Options.Mode = schemas.ModeLexical
		}
		done, _, err := cl.Ask(ctx, qs, client.AskOptions{})
		return done, err
	}
	var reps []eval.AnswerReport
	for _, s := range loaded {
		s, err := eval.Split(s, part)
		if err != nil {
			return nil, err
		}
		r, err := eval.RunAnswers(ctx, ask, s, blocks, opts)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	return reps, nil
}

// startScripted starts the scripted provider over the sets' notes: it
// knows the blocks (for its claims' source blocks) and the sets'
// translations of their questions (for the translation requests).
func startScripted(loaded []*eval.Set, blocks map[string]string, o scriptedOptions) *llmtest.Server {
	tr := map[string]map[string]string{}
	for _, s := range loaded {
		for _, q := range s.Questions {
			if len(q.Translations) > 0 {
				tr[q.Question] = q.Translations
			}
		}
	}
	return llmtest.NewScriptedServer(llmtest.ScriptOptions{Behaviour: o.behaviour, Translations: tr, Blocks: blocks, Seed: o.seed})
}

// labelsOf are the scripted provider's claims as eval's labels.
func labelsOf(claims []llmtest.Claim) []eval.Label {
	out := make([]eval.Label, 0, len(claims))
	for _, c := range claims {
		out = append(out, eval.Label{Question: c.Question, Sentence: c.Sentence, Label: c.Label, SourceBlock: c.SourceBlock,
			SourceSentence: c.SourceSentence, Supported: c.Supported, Request: c.Request})
	}
	return out
}

// printAnswerReport prints one report, each figure under its JSON name.
func printAnswerReport(a eval.AnswerReport) {
	row := func(name, format string, args ...any) {
		fmt.Printf("  %-29s "+format+"\n", append([]any{name}, args...)...)
	}
	fmt.Printf("\nanswers on %s: %d questions (%d answerable, %d not in the notes)\n", a.Name, a.N, a.Answerable, a.Unanswerable)
	row("modes", "%s", counts(a.Modes))
	if l := a.LabelReport; l != nil {
		row("labels", "%s", a.Labels)
		row("labelled_claims", "%d  (%s)", l.LabelledClaims, counts(l.LabelledClaimsByLabel))
		row("false_supported", "%d  (claims labelled unsupported that an answer shows with a citation: %s)", l.FalseSupported, counts(l.FalseSupportedByLabel))
		row("false_supported_share", "%.4f  (of %d shown_cited_claims; unmatched_cited_sentences %d)", l.FalseSupportedShare, l.ShownCitedClaims, l.UnmatchedCitedSentences)
		row("citation_precision", "%.4f  (%d correct_citations of %d labelled_citations: a supported claim cited to its source block or a block holding its source sentence)",
			l.CitationPrecision, l.CorrectCitations, l.LabelledCitations)
		row("faithful_kept", "%.4f  (%d faithful_kept_claims of %d faithful_claims shown with a correct citation)", l.FaithfulKept, l.FaithfulKeptClaims, l.FaithfulClaims)
		if l.ConfidenceAUC != nil {
			row("confidence_auc", "%.4f  (answers showing no false claim, %d, above those showing one, %d; ties count half)", *l.ConfidenceAUC, l.ConfidenceAUCClean, l.ConfidenceAUCFalse)
		} else {
			row("confidence_auc", "n/a  (%s)", l.ConfidenceAUCNote)
		}
	} else {
		for _, name := range []string{"false_supported", "false_supported_share", "citation_precision", "faithful_kept", "confidence_auc"} {
			row(name, "n/a  (%s)", a.LabelsMissing)
		}
	}
	row("abstention", "%.4f  (%d abstained_right of %d questions not in the notes); abstained_wrong %d", a.Abstention, a.AbstainedRight, a.Unanswerable, a.AbstainedWrong)
	row("wrong_language", "%d  (of %d language_checked answers, «quotes» aside, not in the question's language)", a.WrongLanguage, a.LanguageChecked)
	row("gold_citation_precision", "%.4f  (%d gold_correct_citations of %d gold_citations name a gold block or one holding a gold answer)",
		a.GoldCitationPrecision, a.GoldCorrectCitations, a.GoldCitations)
	row("gold_citation_recall", "%.4f  (%d gold_supported_claims of %d gold_claims); gold_supported_answers %.4f; gold_citations_unanswerable %d",
		a.GoldCitationRecall, a.GoldSupportedClaims, a.GoldClaims, a.GoldSupportedAnswers, a.GoldCitationsUnanswerable)
	row("overlap_support_precision", "%.4f  (%d overlap_supporting_citations of %d overlap_citations: quote or 60%% of the words in the block; the verifier's kind of rule)",
		a.OverlapSupportPrecision, a.OverlapSupportingCitations, a.OverlapCitations)
	row("overlap_support_recall", "%.4f  (%d overlap_supported_claims of %d overlap_claims)", a.OverlapSupportRecall, a.OverlapSupportedClaims, a.OverlapClaims)
	if a.Extractive > 0 {
		row("exact_match", "%.4f  (f1 %.4f; extractive %d)", a.ExactMatch, a.F1, a.Extractive)
	}
	row("mean_confidence", "%.4f; unsupported %d (sentences marked)", a.MeanConfidence, a.Unsupported)
	fmt.Printf("  %-29s %9s %9s %5s\n", "latency_ms", "p50", "p95", "n")
	for _, st := range a.Stages() {
		l := a.LatencyMS[st]
		fmt.Printf("  %-29s %9.2f %9.2f %5d\n", st, l.P50, l.P95, l.N)
	}
	for _, m := range a.Misses {
		fmt.Printf("  miss: %s\n", m)
	}
}

// counts writes "k v, k v" in key order.
func counts(m map[string]int) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
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
	for _, note := range r.Notes {
		fmt.Printf("note: %s\n", note)
	}
	rows := append(append([]eval.AnswerReport{}, r.Sets...), r.AnswerReport)
	if len(r.Sets) == 0 {
		rows = rows[len(rows)-1:]
	}
	for _, a := range rows {
		printAnswerReport(a)
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
