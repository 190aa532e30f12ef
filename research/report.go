package research

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// ReportConfig tunes the report stage.
type ReportConfig struct {
	// MaxTokens bounds the report the model writes (default 2048).
	MaxTokens int
	// LongPrompt is the estimated prompt size in tokens from which the
	// long_context role is asked instead of strategic (default 6000).
	LongPrompt int
	// Timeout bounds the provider call (default 3 minutes).
	Timeout time.Duration
	// MaxDeliver is the stage's max deliveries: on the last one a failed
	// provider call gives the report built from the facts (default 3).
	MaxDeliver int
	// MaxFacts bounds the facts given to the model (default 120).
	MaxFacts int
	// EvidencePerTheme bounds the passages per theme of an evidence_only
	// report (default 3) and EvidenceThemes its themes (default 8).
	EvidencePerTheme, EvidenceThemes int
	// ReplyRetries is how many more times a report that cannot be read is
	// asked for, with the parse error (DefaultReplyRetries, 2; negative:
	// none).
	ReplyRetries int
}

func (c ReportConfig) withDefaults() ReportConfig {
	if c.MaxTokens <= 0 {
		c.MaxTokens = 2048
	}
	if c.LongPrompt <= 0 {
		c.LongPrompt = 6000
	}
	if c.Timeout <= 0 {
		c.Timeout = 3 * time.Minute
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 3
	}
	if c.MaxFacts <= 0 {
		c.MaxFacts = 120
	}
	if c.EvidencePerTheme <= 0 {
		c.EvidencePerTheme = 3
	}
	if c.EvidenceThemes <= 0 {
		c.EvidenceThemes = 8
	}
	return c
}

// Validate reports every problem at once.
func (c ReportConfig) Validate() error {
	var errs []error
	for name, v := range map[string]int{"max tokens": c.MaxTokens, "max deliver": c.MaxDeliver, "max facts": c.MaxFacts,
		"evidence per theme": c.EvidencePerTheme, "evidence themes": c.EvidenceThemes} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("report %s %d: must not be negative", name, v))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("report timeout %s: must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

// BlockSource gives the text of blocks by id, each as a context holding
// that block alone (the index's chunks cut at their block spans: see
// StoreBlocks). Blocks it does not know are left out.
type BlockSource interface {
	Blocks(ctx context.Context, ids []string) (map[string]schemas.Context, error)
}

// ReportDeps are what the report stage needs.
type ReportDeps struct {
	// Router reaches the language models; nil: no provider.
	Router *llm.Router
	// Analyzer is the text analysis of the citation verifier.
	Analyzer *analysis.Analyzer
	// Blocks gives the cited blocks' text from the index; nil: the quotes
	// the facts' citations carry stand for their blocks.
	Blocks BlockSource
	// Reports is KB_RESEARCH_REPORTS: the finished report is stored there
	// under its research id before it is published.
	Reports bus.KV
	// Progress publishes a research step (nil: none).
	Progress func(*schemas.ResearchProgress)
	Config   ReportConfig
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Reporter writes the final report of a research from its draft.
type Reporter struct {
	d ReportDeps
}

// NewReporter returns a reporter; it fails when the config is invalid or
// the analyzer or the reports bucket is missing.
func NewReporter(d ReportDeps) (*Reporter, error) {
	errs := []error{d.Config.Validate()}
	if d.Analyzer == nil {
		errs = append(errs, errors.New("report stage: no analyzer for the citation verifier"))
	}
	if d.Reports == nil {
		errs = append(errs, errors.New("report stage: no reports bucket"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Config = d.Config.withDefaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Reporter{d: d}, nil
}

// Write builds, verifies, stores and returns the report of a research. A
// report already stored for the research is returned as it is (a
// redelivered draft asks no model again). lastTry says the message will not
// be delivered again: a failing provider call then gives the report built
// from the facts instead of an error.
func (r *Reporter) Write(ctx context.Context, d *schemas.ResearchDraft, lastTry bool) (*schemas.ResearchReport, error) {
	if old, err := LoadReport(ctx, r.d.Reports, d.ResearchID); err != nil {
		return nil, fmt.Errorf("report %s: %w", d.ResearchID, err)
	} else if old != nil {
		zerolog.Ctx(ctx).Info().Str("research_id", d.ResearchID).Msg("report already stored; published again as it is")
		r.progress(&schemas.ResearchProgress{ResearchID: d.ResearchID, Step: "report", Done: true,
			Message: fmt.Sprintf("report: %d sections, %d sources", len(old.Sections), len(old.Sources))})
		return old, nil
	}
	rep, err := r.Build(ctx, d, lastTry)
	if err != nil {
		return nil, err
	}
	if err := SaveReport(ctx, r.d.Reports, rep); err != nil {
		if lastTry {
			r.progress(&schemas.ResearchProgress{ResearchID: d.ResearchID, Step: "failed",
				Message: fmt.Sprintf("the report could not be stored: %v", err), Done: true})
		}
		return nil, fmt.Errorf("report %s: %w", d.ResearchID, err)
	}
	r.progress(&schemas.ResearchProgress{ResearchID: d.ResearchID, Step: "report", Done: true,
		Message: fmt.Sprintf("report: %d sections, %d sources", len(rep.Sections), len(rep.Sources))})
	return rep, nil
}

// Build makes the report without storing it.
func (r *Reporter) Build(ctx context.Context, d *schemas.ResearchDraft, lastTry bool) (*schemas.ResearchReport, error) {
	rep := r.newReport(d)
	facts := numberFacts(d.Findings)
	blocks, err := r.blocks(ctx, facts)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", d.ResearchID, err)
	}
	b := &builder{a: r.d.Analyzer, blocks: blocks, lang: rep.Lang, rep: rep}

	if rep.Mode == schemas.ResearchEvidenceOnly {
		// Why no synthesis comes first, in the report's words.
		reasons := []string{"no_llm_provider: " + noSynthesisWhy("en", r.d.Router == nil)}
		for _, reason := range rep.Reasons {
			if !strings.HasPrefix(reason, "no_llm_provider: ") {
				reasons = append(reasons, reason)
			}
		}
		rep.Reasons = reasons
		b.evidence(d, facts, r.d.Config)
		return b.finish(r.d.Now()), nil
	}

	facts = b.verifyFacts(facts)
	b.conflicts = disagreementPairs(facts)
	if len(facts) > r.d.Config.MaxFacts {
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("facts_cut: %d facts, the model was given the first %d and those that disagree", len(facts), r.d.Config.MaxFacts))
		facts = cutFacts(facts, r.d.Config.MaxFacts, b.conflicts)
	}
	if len(facts) == 0 {
		if r.evidenceFallback(b, d) {
			return b.finish(r.d.Now()), nil
		}
		rep.Reasons = append(rep.Reasons, "no_facts: the research found no verified facts in the notes")
		rep.Title = fmt.Sprintf(reportText(rep.Lang, "title"), oneLine(d.Question))
		return b.finish(r.d.Now()), nil
	}
	if r.d.Router == nil {
		rep.Reasons = append(rep.Reasons, "no_llm_provider: the report stage has no language model provider; the report lists the verified facts")
		b.factsReport(d, facts)
		return b.finish(r.d.Now()), nil
	}
	return r.synthesize(ctx, b, d, facts, lastTry)
}

// newReport starts the report of d: its header, the documents read and
// the findings' and the draft's reasons.
func (r *Reporter) newReport(d *schemas.ResearchDraft) *schemas.ResearchReport {
	lang := d.Lang
	if lang != "ru" {
		lang = "en"
	}
	rep := &schemas.ResearchReport{
		Envelope:   schemas.Envelope{Type: schemas.TypeResearchReportV1, Time: r.d.Now().UTC()},
		ResearchID: d.ResearchID, Question: d.Question, Lang: lang, Mode: d.Mode,
		Tasks: len(d.Findings), LLMCalls: d.LLMCalls, Started: d.Started,
	}
	rep.ID = rep.MsgID()
	if rep.Mode == "" {
		rep.Mode = schemas.ResearchSynthesis
	}
	docs := map[string]bool{}
	for _, f := range d.Findings {
		for _, doc := range f.DocsRead {
			docs[doc] = true
		}
		for _, reason := range f.Reasons {
			rep.Reasons = appendOnce(rep.Reasons, reason)
		}
	}
	rep.DocsRead = len(docs)
	for _, reason := range d.Reasons {
		rep.Reasons = appendOnce(rep.Reasons, reason)
	}
	return rep
}

// synthesize has the model write the report from the verified facts; an
// unusable reply, or a provider failure on the last try, gives the facts
// report instead.
func (r *Reporter) synthesize(ctx context.Context, b *builder, d *schemas.ResearchDraft, facts []numberedFact, lastTry bool) (*schemas.ResearchReport, error) {
	rep := b.rep
	draft := b.checkDraft(d.Draft, facts)
	msgs := reportPrompt(d.Question, rep.Lang, draft, d.Findings, facts, b.conflicts)
	t := time.Now()
	reply, res, calls, err := r.askReport(ctx, d, msgs, rep.LLMCalls)
	rep.LLMCalls += calls
	log := zerolog.Ctx(ctx)
	if err != nil && !IsReplyError(err) {
		if !lastTry {
			return nil, fmt.Errorf("report %s: from the provider: %w", d.ResearchID, err)
		}
		log.Warn().Err(err).Str("research_id", d.ResearchID).Msg("report failed for good at the provider; built from the facts")
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("report_fallback: the model's report failed (%v); the report lists the verified facts", err))
		b.factsReport(d, facts)
		return b.finish(r.d.Now()), nil
	}
	log.Info().Str("research_id", d.ResearchID).Str("provider", res.Provider).Dur("took", time.Since(t)).Int("calls", calls).
		Int("chars", len(res.Text)).Msg("report written by the model")
	ok := err == nil
	if ok {
		b.synthesis(reply, facts)
	}
	if !ok || b.kept == 0 {
		why := fmt.Sprintf("it is not the JSON report asked for (%v)", err)
		if ok {
			why = "none of its sentences is supported by the facts' blocks"
		}
		rep.Reasons = append(rep.Reasons, "report_fallback: the model's report was unusable: "+why+"; the report lists the verified facts")
		b.reset()
		b.factsReport(d, facts)
	}
	return b.finish(r.d.Now()), nil
}

// askReport asks the model for the report (the long-context role for a
// long prompt, the strategic one where none is set), within the research's
// calls (used so far: used), asking again for a reply that does not parse.
func (r *Reporter) askReport(ctx context.Context, d *schemas.ResearchDraft, msgs []llm.Message, used int) (reportReply, llm.Result, int, error) {
	role := llm.RoleStrategic
	if promptTokens(msgs) >= r.d.Config.LongPrompt {
		role = llm.RoleLongContext
	}
	request := func(role string, msgs []llm.Message) llm.Request {
		req := llm.Request{Role: role, Messages: msgs, MaxTokens: r.d.Config.MaxTokens}
		if r.d.Router.Structured(role) {
			req.JSONSchema = ReportSchema()
		}
		return req
	}
	var reply reportReply
	res, calls, err := AskStructured(ctx, Ask{What: "report", Messages: msgs, Retries: r.d.Config.ReplyRetries,
		Call: func(ctx context.Context, msgs []llm.Message) (llm.Result, error) {
			cctx, cancel := context.WithTimeout(ctx, r.d.Config.Timeout)
			defer cancel()
			res, err := r.d.Router.Stream(cctx, request(role, msgs), nil)
			if errors.Is(err, llm.ErrNoProvider) && role != llm.RoleStrategic {
				res, err = r.d.Router.Stream(cctx, request(llm.RoleStrategic, msgs), nil)
			}
			return res, err
		},
		Parse: func(text string) error {
			var err error
			reply, err = parseReport(text)
			return err
		},
		Allow: func(calls int) bool {
			return d.Findings == nil || callsLeft(d, used+calls) > 0
		},
	})
	return reply, res, calls, err
}

func (r *Reporter) progress(p *schemas.ResearchProgress) {
	if r.d.Progress == nil {
		return
	}
	p.Type, p.Time = schemas.TypeResearchProgressV1, r.d.Now().UTC()
	p.ID = p.MsgID()
	r.d.Progress(p)
}

// blocks are the contexts of every block the facts rest on: from the
// index when there is one, else each fact citation's quote as its block's
// text.
func (r *Reporter) blocks(ctx context.Context, facts []numberedFact) (map[string]schemas.Context, error) {
	out := map[string]schemas.Context{}
	var ids []string
	for _, nf := range facts {
		for _, id := range nf.Fact.BlockIDs {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if r.d.Blocks != nil && len(ids) > 0 {
		got, err := r.d.Blocks.Blocks(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("read the cited blocks: %w", err)
		}
		for id, c := range got {
			out[id] = c
		}
	}
	for _, nf := range facts {
		for _, c := range nf.Fact.Citations {
			if c.BlockID == "" {
				continue
			}
			cur, ok := out[c.BlockID]
			if !ok {
				if c.Quote == "" {
					continue
				}
				out[c.BlockID] = blockContext(c.BlockID, c, c.Quote)
				continue
			}
			// The index's context lacks nothing but may lack the title
			// of a document whose structure has not arrived.
			if cur.Title == "" {
				cur.Title = c.Title
			}
			if len(cur.SectionPath) == 0 {
				cur.SectionPath = c.SectionPath
			}
			out[c.BlockID] = cur
		}
	}
	return out, nil
}

// blockContext is a context holding one block's text.
func blockContext(id string, c schemas.Citation, text string) schemas.Context {
	return schemas.Context{Passage: schemas.Passage{ChunkID: c.ChunkID, DocID: c.DocID, Title: c.Title, SectionPath: c.SectionPath,
		BlockID: id, BlockIDs: []string{id}, BlockSpans: []schemas.BlockSpan{{ID: id, Start: 0, End: len(text)}}, Text: text,
		Path: linkPath(c.Link)}}
}

// linkPath turns a file:// link back into the path answer.Link makes it from.
func linkPath(link string) string {
	if p, ok := strings.CutPrefix(link, "file://"); ok {
		return p
	}
	return ""
}

// cutFacts keeps the first max facts and, beyond them, those of a
// disagreement: the model is given both sides of every pair.
func cutFacts(facts []numberedFact, max int, cs []conflict) []numberedFact {
	keep := map[string]bool{}
	for _, c := range cs {
		keep[c.Old.ID], keep[c.New.ID] = true, true
	}
	out := slices.Clone(facts[:max])
	for _, nf := range facts[max:] {
		if keep[nf.ID] {
			out = append(out, nf)
		}
	}
	return out
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// reportReply is the model's JSON report.
type reportReply struct {
	Title         string          `json:"title"`
	Summary       []replySentence `json:"summary"`
	Sections      []replySection  `json:"sections"`
	Disagreements []replySentence `json:"disagreements"`
	Conclusion    []replySentence `json:"conclusion"`
}

type replySection struct {
	Title     string          `json:"title"`
	Sentences []replySentence `json:"sentences"`
}

// replySentence is {"text", "facts"}; a bare string is a sentence citing
// nothing, and facts may be numbers.
type replySentence struct {
	Text  string
	Facts []string
}

func (s *replySentence) UnmarshalJSON(b []byte) error {
	var str string
	if json.Unmarshal(b, &str) == nil {
		s.Text = str
		return nil
	}
	var obj struct {
		Text  string            `json:"text"`
		Facts []json.RawMessage `json:"facts"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	s.Text = obj.Text
	for _, f := range obj.Facts {
		var id string
		if json.Unmarshal(f, &id) != nil {
			id = string(f)
		}
		s.Facts = append(s.Facts, id)
	}
	return nil
}

// parseReportReply reads the model's JSON, also in code fences, with text
// around it or otherwise repaired (parseReport).
func parseReportReply(text string) (reportReply, bool) {
	rep, err := parseReport(text)
	return rep, err == nil
}

// factMarker matches fact ids written into a sentence: [F1], [F1, F3], (F2).
var factMarker = regexp.MustCompile(`\s*[\[(]\s*[Ff]\d+(?:\s*[,;]\s*[Ff]?\d+)*\s*[\])]`)

// factID normalises a fact id as the model wrote it: "F3", "f3", "3", 3.
func factID(s string) string {
	s = strings.TrimSpace(strings.Trim(strings.TrimSpace(s), `"[]()`))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "F"), "f")
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return "F" + strconv.Itoa(n)
	}
	return ""
}

// cleanSentence takes the fact markers out of a sentence and returns them
// with its text.
func cleanSentence(s replySentence) (string, []string) {
	ids := slices.Clone(s.Facts)
	for _, m := range factMarker.FindAllString(s.Text, -1) {
		for _, part := range strings.FieldsFunc(m, func(r rune) bool {
			return r == ',' || r == ';' || r == '[' || r == ']' || r == '(' || r == ')' || r == ' '
		}) {
			ids = append(ids, part)
		}
	}
	text := oneLine(factMarker.ReplaceAllString(s.Text, ""))
	var out []string
	for _, id := range ids {
		if n := factID(id); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return text, out
}
