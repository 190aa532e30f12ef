package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// researchOptions are the flags of eval --research.
type researchOptions struct {
	// kind is the research stand-in's kind ("": the configured providers,
	// whose facts carry no labels).
	kind    string
	seed    uint64
	rate    float64
	timeout time.Duration
	temp    bool
}

// researchEvalReport is what eval --research prints with --json.
type researchEvalReport struct {
	eval.ResearchSummary
	Documents    int      `json:"documents"`
	Chunks       int      `json:"chunks"`
	IndexSeconds float64  `json:"index_seconds"`
	Notes        []string `json:"notes,omitempty"`
}

// evalResearch indexes the research sets' notes into dir, runs every
// question through the whole research pipeline (plan, investigate, draft,
// report) and scores each report by the stand-in's labels and the notes'
// blocks: report sentence precision, planted disagreements reported,
// changed facts reaching the report, calls per research.
func evalResearch(ctx context.Context, c common, n neural, dir string, paths []string, o researchOptions) (*researchEvalReport, error) {
	if _, running := system.Running(dir); running || c.nats != "" {
		return nil, fmt.Errorf("eval builds and reads its own index: stop the system running on %s, or leave out --data", dir)
	}
	sets, folders, err := loadResearchSets(paths)
	if err != nil {
		return nil, err
	}
	rep := &researchEvalReport{}
	cfg := system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return nil, err
	}
	blocks, err := eval.CollectBlocks(nil, folders)
	if err != nil {
		return nil, err
	}
	sc := &researchScorer{blocks: blocks, timeout: o.timeout,
		labelSource: "none: the configured providers label nothing; every sentence is judged by its cited blocks' words"}
	if o.kind != "" {
		k, err := llmtest.ParseResearchKind(o.kind)
		if err != nil {
			return nil, err
		}
		tr := map[string]map[string]string{}
		for _, s := range sets {
			for q, m := range s.Translations() {
				tr[q] = m
			}
		}
		sc.srv, sc.stand = llmtest.StartResearchServer(llmtest.ResearchOptions{Kind: k, Seed: o.seed, Rate: o.rate, Translations: tr})
		defer sc.srv.Close()
		cfg.LLM = scriptedLLM(sc.srv.URL(), "none")
		sc.labelSource = fmt.Sprintf("research stand-in in-process: kind %s, seed %d, rate %g", k, o.seed, o.rate)
		rep.Notes = append(rep.Notes, "research by the scripted stand-in ("+sc.labelSource+") at "+sc.srv.URL()+", not by the configured providers")
	}
	sys, indexSecs, stop, err := startEvalIndex(ctx, cfg, o.temp, nil, folders, false)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep.Notes = append(rep.Notes, sys.ModelNotes...)
	rep.IndexSeconds = round4(indexSecs)
	rep.Documents, rep.Chunks, _ = sys.Store.Counts(ctx)
	sc.client = client.New(sys.Bus, client.Options{})
	var scores []eval.ResearchScore
	var names []string
	for _, s := range sets {
		names = append(names, s.Name)
		for _, q := range s.Questions {
			score, err := sc.score(ctx, s, q)
			if err != nil {
				return nil, err
			}
			scores = append(scores, score)
		}
	}
	rep.ResearchSummary = eval.SumResearch(strings.Join(names, ","), sc.labelSource, scores)
	return rep, nil
}

// loadResearchSets reads the research sets and checks their notes folders.
func loadResearchSets(paths []string) (sets []*eval.ResearchSet, folders []string, err error) {
	for _, p := range paths {
		s, err := eval.LoadResearchSet(p)
		if err != nil {
			return nil, nil, err
		}
		for _, nf := range s.Notes {
			if _, err := os.Stat(nf); err != nil {
				return nil, nil, fmt.Errorf("research set %s: its notes folder: %w", s.Name, err)
			}
			folders = append(folders, nf)
		}
		sets = append(sets, s)
	}
	return sets, folders, nil
}

// researchScorer runs one research question at a time and scores its
// report; srv and stand are the scripted stand-in (nil: the configured
// providers answer).
type researchScorer struct {
	client      *client.Client
	srv         *llmtest.Server
	stand       *llmtest.Research
	blocks      map[string]string
	labelSource string
	timeout     time.Duration
}

// score researches q and scores the report by the stand-in's labels of
// this research alone and the calls it made.
func (sc *researchScorer) score(ctx context.Context, s *eval.ResearchSet, q eval.ResearchQuestion) (eval.ResearchScore, error) {
	reqsBefore, labelsBefore := 0, 0
	if sc.srv != nil {
		reqsBefore, labelsBefore = len(sc.srv.Requests()), len(sc.stand.Labels())
	}
	req := &schemas.ResearchRequested{ResearchID: newTraceID("eval-research"), Question: q.Question, Lang: q.Lang}
	r, err := sc.client.Research(ctx, req, client.ResearchOptions{Timeout: sc.timeout})
	if err != nil {
		if ctx.Err() != nil {
			return eval.ResearchScore{}, ctx.Err()
		}
		r = &schemas.ResearchReport{Question: q.Question, Mode: "failed", Reasons: []string{err.Error()}}
	}
	var labels []eval.ResearchLabel
	calls := 0
	if sc.srv != nil {
		calls = len(sc.srv.Requests()) - reqsBefore
		labels = researchLabels(sc.stand.Labels()[labelsBefore:])
	}
	score := eval.ScoreResearch(r, labels, sc.blocks, s.Planted(q))
	score.ID, score.Calls = q.ID, calls
	if sc.srv == nil {
		score.Calls = r.LLMCalls
	}
	return score, nil
}

// researchLabels are the stand-in's fact labels as eval reads them.
func researchLabels(ls []llmtest.ResearchLabel) []eval.ResearchLabel {
	var out []eval.ResearchLabel
	for _, l := range ls {
		if l.Step != "facts" || l.Text == "" {
			continue
		}
		out = append(out, eval.ResearchLabel{Text: l.Text, Label: l.Label, SourceBlock: l.SourceBlock, SourceSentence: l.SourceSentence,
			Supported: l.Supported, Changed: llmtest.ChangedLabel(l.Label), Fragment: l.Changed})
	}
	return out
}

// printResearchEval prints the figures, each under its JSON name, then a
// line per question.
func printResearchEval(r *researchEvalReport) {
	fmt.Printf("indexed %s, %s in %.1fs\n", plural(r.Documents, "document", "documents"), plural(r.Chunks, "chunk", "chunks"), r.IndexSeconds)
	for _, note := range r.Notes {
		fmt.Printf("note: %s\n", note)
	}
	s := r.ResearchSummary
	row := func(name, format string, args ...any) {
		fmt.Printf("  %-33s "+format+"\n", append([]any{name}, args...)...)
	}
	fmt.Printf("\nresearch on %s: %d questions\n", s.Name, len(s.Questions))
	row("labels", "%s", s.Labels)
	row("modes", "%s", counts(s.Modes))
	row("report_sentence_precision", "%.4f  (%d stated_sentences of %d cited_sentences: judged by the stand-in's labels and the notes' blocks, not the verifier)",
		s.Precision, s.StatedSentences, s.CitedSentences)
	row("disagreements_reported", "%d of %d planted  (every side stated in the disagreement section with a citation of a block that says it); anywhere in the report %d",
		s.Reported, s.Planted, s.Anywhere)
	row("changed_facts_in_report", "%d of %d changed_facts", s.ChangedReached, s.ChangedFacts)
	row("repeated_facts", "%d  (facts stated by more than one report sentence)", s.Repeated)
	row("calls_per_research", "%.2f", s.CallsPerResearch)
	fmt.Printf("  %-10s %-14s %9s %13s %8s %5s\n", "question", "mode", "precision", "disagreements", "changed", "calls")
	for _, q := range s.Questions {
		p := "n/a"
		if q.CitedSentences > 0 {
			p = fmt.Sprintf("%d/%d", q.StatedSentences, q.CitedSentences)
		}
		fmt.Printf("  %-10s %-14s %9s %13s %8s %5d\n", q.ID, q.Mode, p, fmt.Sprintf("%d/%d", q.Reported, q.Planted),
			fmt.Sprintf("%d/%d", len(q.ChangedReached), q.ChangedFacts), q.Calls)
		for _, m := range q.Missing {
			fmt.Printf("    disagreement not reported: %s\n", m)
		}
		for _, c := range q.ChangedReached {
			fmt.Printf("    changed fact in the report: %s\n", c)
		}
		for _, n := range q.NotStated {
			fmt.Printf("    not stated by its cited blocks: %s\n", n)
		}
		for _, why := range q.Reasons {
			if q.Mode != schemas.ResearchSynthesis || strings.HasPrefix(why, "report_fallback") {
				fmt.Printf("    reason: %s\n", oneLine(why))
			}
		}
	}
}

// cmdEvalResearch runs eval --research over the research sets.
func cmdEvalResearch(ctx context.Context, c common, n neural, paths []string, o researchOptions, dataSet, asJSON bool) error {
	if len(paths) == 0 {
		return errors.New("give the research set: exocortex eval --research --scripted stumbling eval/testdata/research-disagree.json")
	}
	dir := c.data
	o.temp = !dataSet
	if o.temp {
		tmp, err := os.MkdirTemp("", "exocortex-eval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	rep, err := evalResearch(ctx, c, n, dir, paths, o)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(rep)
	}
	printResearchEval(rep)
	return nil
}
