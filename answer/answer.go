package answer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// Reasons an answer carries.
const (
	ReasonNoContexts  = "no_contexts"     // retrieval found nothing
	ReasonNoProvider  = "no_llm_provider" // no language model is configured
	ReasonLLMFailed   = "llm_failed"      // every provider failed
	ReasonLowCoverage = "low_coverage"    // too few sentences kept a verified citation
	ReasonNoQA        = "no_qa_model"     // no extractive model is installed
	ReasonLowQA       = "low_agreement"   // the extractive model found no span it trusts
	ReasonDropped     = "dropped_citation"
	// ReasonNotInNotes: the answer says that the notes do not hold the
	// answer (the model abstained, or nothing supported it).
	ReasonNotInNotes = "not_in_notes"
)

// Config tunes the answer.
type Config struct {
	// MinCoverage is the share of the answer's claims (sentences with
	// content words, abstentions aside) that must keep a verified citation
	// for the LLM's answer to be given (default 0.5).
	MinCoverage float64
	// MinConfidence is the answer confidence (Verified.Confidence) below
	// which the LLM's answer is not given, when Calibration is nil (default
	// 0.4). Calibration, fitted by `eval --answers --calibrate`, maps the
	// raw confidence to a probability (AnswerDone.Confidence) and decides
	// with its own threshold instead.
	MinConfidence float64
	Calibration   *Calibration
	// QACalibration does the same for the extractive model's span score
	// (nil: the score is kept and QAThreshold decides).
	QACalibration *Calibration
	// MaxContexts is how many contexts go into the prompt (default 8) and
	// SearchOnly how many passages a search-only answer shows (default 3).
	MaxContexts, SearchOnly int
	// QAContexts is how many top contexts the extractive model reads
	// (default 4) and QAThreshold the span probability it must reach, above
	// its no-answer probability too (default 0.2).
	QAContexts  int
	QAThreshold float64
	// LongPrompt is the estimated prompt size, in tokens, from which the
	// answer asks the long_context role instead of fast (default 6000;
	// without a long_context provider it stays with fast).
	LongPrompt int
}

func (c Config) withDefaults() Config {
	if c.MinCoverage == 0 {
		c.MinCoverage = 0.5
	}
	if c.MinConfidence == 0 {
		c.MinConfidence = 0.4
	}
	if c.MaxContexts == 0 {
		c.MaxContexts = 8
	}
	if c.SearchOnly == 0 {
		c.SearchOnly = 3
	}
	if c.QAContexts == 0 {
		c.QAContexts = 4
	}
	if c.QAThreshold == 0 {
		c.QAThreshold = 0.2
	}
	if c.LongPrompt == 0 {
		c.LongPrompt = 6000
	}
	return c
}

// Answerer turns a query's contexts into an answer, down the ladder: the
// language model with verified citations, then the extractive model, then
// the passages themselves. It always returns an answer with a mode.
type Answerer struct {
	Router   *llm.Router // nil: no provider configured
	QA       *models.QA  // nil: no extractive model
	Analyzer *analysis.Analyzer
	Config   Config
	// Emit receives the streamed tokens in order (sequence from 1), a
	// restart marker when a provider failed midway, and a final token.
	Emit func(ctx context.Context, t *schemas.AnswerToken) error
	// Cache, when set, answers a question close to one answered before
	// (mode cache) and keeps the llm and extractive answers.
	Cache *Cache
}

// Answer answers rq. Token emission errors end the stream but not the answer.
func (a *Answerer) Answer(ctx context.Context, rq *schemas.QueryReranked) *schemas.AnswerDone {
	em := &emitter{emit: a.Emit, queryID: rq.QueryID}
	defer func() { em.send(ctx, &schemas.AnswerToken{Final: true}) }()
	if a.Cache != nil && len(rq.QueryVector) > 0 {
		t := time.Now()
		hit, err := a.Cache.Lookup(ctx, rq.QueryVector, rq.Lang)
		if err == nil && hit != nil {
			out := &schemas.AnswerDone{QueryID: rq.QueryID, Question: rq.Question, Lang: rq.Lang, Mode: schemas.AnswerCache,
				Answer: hit.Answer, Citations: hit.Citations, Confidence: hit.Confidence, FollowUps: hit.FollowUps,
				Reasons:   []string{fmt.Sprintf("cache: answered before as %q (%s); its notes have not changed", hit.Question, hit.Mode)},
				TimingsMS: map[string]float64{"cache": msSince(t)}}
			em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
			return out
		}
	}
	out := a.answer(ctx, rq, em)
	if a.Cache != nil {
		_ = a.Cache.Put(ctx, rq.QueryVector, out)
	}
	return out
}

func (a *Answerer) answer(ctx context.Context, rq *schemas.QueryReranked, em *emitter) *schemas.AnswerDone {
	cfg := a.Config.withDefaults()
	out := &schemas.AnswerDone{QueryID: rq.QueryID, Question: rq.Question, Lang: rq.Lang, TimingsMS: map[string]float64{}}
	for k, v := range rq.TimingsMS {
		out.TimingsMS[k] = v
	}
	if len(rq.Contexts) == 0 {
		out.Mode, out.Reasons = schemas.AnswerSearchOnly, []string{ReasonNoContexts}
		out.Answer = noNotes(rq.Lang)
		em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
		return out
	}
	if a.Router == nil {
		out.Reasons = append(out.Reasons, ReasonNoProvider)
	} else if a.llm(ctx, rq, cfg, em, out) {
		return out
	}
	if a.extractive(ctx, rq, cfg, em, out) {
		return out
	}
	a.searchOnly(rq, cfg, out)
	em.restart(ctx)
	em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
	return out
}

// llm asks the router and verifies the answer; false means fall back.
func (a *Answerer) llm(ctx context.Context, rq *schemas.QueryReranked, cfg Config, em *emitter, out *schemas.AnswerDone) bool {
	ctxs := rq.Contexts[:min(len(rq.Contexts), cfg.MaxContexts)]
	t := time.Now()
	msgs := Prompt(rq.Question, rq.Lang, ctxs)
	req := llm.Request{Role: llm.RoleFast, Messages: msgs, OnRestart: func(string) { em.restart(ctx) }}
	if estimateTokens(msgs) >= cfg.LongPrompt {
		req.Role = llm.RoleLongContext
	}
	send := func(tok string) error { em.send(ctx, &schemas.AnswerToken{Text: tok}); return nil }
	res, err := a.Router.Stream(ctx, req, send)
	if errors.Is(err, llm.ErrNoProvider) && req.Role != llm.RoleFast {
		req.Role = llm.RoleFast
		res, err = a.Router.Stream(ctx, req, send)
	}
	out.TimingsMS["llm"] = msSince(t)
	if err != nil {
		out.Reasons = append(out.Reasons, ReasonLLMFailed+": "+err.Error())
		return false
	}
	v := Verify(a.Analyzer, res.Text, ctxs)
	for _, d := range v.Dropped {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: [%s] %s", ReasonDropped, d.Marker, d.Reason))
	}
	if len(v.Citations) == 0 || !cfg.Calibration.Accept(v.Coverage, cfg.MinCoverage) {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: %.0f%% of the answer's sentences are supported by the notes", ReasonLowCoverage, 100*v.Coverage))
		return false
	}
	out.Mode, out.Answer, out.Citations, out.Confidence, out.Provider = schemas.AnswerLLM, v.Text, v.Citations, v.Coverage, res.Provider
	t = time.Now()
	out.FollowUps = FollowUps(ctx, a.Router, rq.Question, v.Text, rq.Lang)
	out.TimingsMS["follow_ups"] = msSince(t)
	if v.Text != res.Text {
		// The streamed text had citations that did not survive: the client
		// gets the verified text in full.
		em.restart(ctx)
		em.send(ctx, &schemas.AnswerToken{Text: v.Text})
	}
	return true
}

// extractive finds the best span in the top contexts; false means fall back.
func (a *Answerer) extractive(ctx context.Context, rq *schemas.QueryReranked, cfg Config, em *emitter, out *schemas.AnswerDone) bool {
	if a.QA == nil {
		out.Reasons = append(out.Reasons, ReasonNoQA)
		return false
	}
	ctxs := rq.Contexts[:min(len(rq.Contexts), cfg.QAContexts)]
	texts := make([]string, len(ctxs))
	for i, c := range ctxs {
		texts[i] = c.Text
	}
	t := time.Now()
	spans, err := a.QA.Answer(ctx, rq.Question, texts, 30)
	out.TimingsMS["qa"] = msSince(t)
	if err != nil {
		out.Reasons = append(out.Reasons, "qa_failed: "+err.Error())
		return false
	}
	best := -1
	for i, s := range spans {
		if s.Text != "" && cfg.QACalibration.Accept(s.Score, cfg.QAThreshold) && s.Score > s.NoAnswer && (best < 0 || s.Score > spans[best].Score) {
			best = i
		}
	}
	if best < 0 {
		out.Reasons = append(out.Reasons, ReasonLowQA+": no span above the extractive model's threshold")
		return false
	}
	s, c := spans[best], ctxs[best]
	out.Mode, out.Answer, out.Confidence = schemas.AnswerExtractive, s.Text, s.Score
	out.Citations = []schemas.Citation{citation(c, sentenceAround(c.Text, s.Start, s.End))}
	em.restart(ctx)
	em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
	return true
}

// searchOnly shows the best passages with highlighted snippets.
func (a *Answerer) searchOnly(rq *schemas.QueryReranked, cfg Config, out *schemas.AnswerDone) {
	q := a.Analyzer.Query(rq.Question)
	var b strings.Builder
	b.WriteString(searchOnlyLead(rq.Lang, out.Reasons))
	for i, c := range rq.Contexts[:min(len(rq.Contexts), cfg.SearchOnly)] {
		snip := a.Analyzer.Snippet(analysis.PlainText(c.Text), q, analysis.SnippetOptions{Tokens: 40, MarkStart: "**", MarkEnd: "**", Ellipsis: "…"})
		fmt.Fprintf(&b, "\n%d. %s — %s [%d]", i+1, strings.Join(c.SectionPath, " > "), strings.Join(strings.Fields(snip), " "), i+1)
		out.Citations = append(out.Citations, citation(c, snip))
	}
	out.Mode, out.Answer, out.Confidence = schemas.AnswerSearchOnly, b.String(), 0
}

func citation(c schemas.Context, quote string) schemas.Citation {
	return schemas.Citation{BlockID: c.BlockID, ChunkID: c.ChunkID, DocID: c.DocID, Title: c.Title,
		SectionPath: c.SectionPath, Quote: quote, Link: Link(c.BlockID, c.Path)}
}

// sentenceAround returns the sentence of text that holds [start, end).
func sentenceAround(text string, start, end int) string {
	pos := 0
	for _, s := range splitSentences(text) {
		if start >= pos && end <= pos+len(s) {
			return strings.TrimSpace(s)
		}
		pos += len(s)
	}
	return text[start:end]
}

func isRussian(lang string) bool { return lang == "ru" }

func noNotes(lang string) string {
	if isRussian(lang) {
		return "В заметках не нашлось ничего по этому вопросу."
	}
	return "Nothing in your notes matches this question."
}

// searchOnlyLead says why the answer is passages: the model's answer was
// not supported by the notes, or no model could answer.
func searchOnlyLead(lang string, reasons []string) string {
	unsupported := false
	for _, r := range reasons {
		unsupported = unsupported || strings.HasPrefix(r, ReasonLowCoverage)
	}
	switch {
	case unsupported && isRussian(lang):
		return "Ответ языковой модели не подтверждается заметками, поэтому вот самые подходящие места из них:"
	case unsupported:
		return "The language model's answer is not supported by your notes, so here are the most relevant passages:"
	case isRussian(lang):
		return "Языковая модель недоступна, поэтому вот самые подходящие места из заметок:"
	}
	return "No language model could answer, so here are the most relevant passages from your notes:"
}

// estimateTokens is a prompt's size in tokens, roughly: four characters
// each (the providers' tokenizers are unknown here).
func estimateTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Content)
	}
	return n / 4
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// emitter numbers the tokens of one answer.
type emitter struct {
	emit    func(ctx context.Context, t *schemas.AnswerToken) error
	queryID string
	seq     int
	sent    bool // text went out since the last restart
	failed  bool
}

func (e *emitter) send(ctx context.Context, t *schemas.AnswerToken) {
	if e.emit == nil || e.failed {
		return
	}
	e.seq++
	t.QueryID, t.Seq = e.queryID, e.seq
	if t.Text != "" {
		e.sent = true
	}
	if err := e.emit(ctx, t); err != nil {
		e.failed = true
	}
}

// restart tells the client to drop what it has, if it has anything.
func (e *emitter) restart(ctx context.Context) {
	if e.sent {
		e.send(ctx, &schemas.AnswerToken{Restart: true})
		e.sent = false
	}
}
