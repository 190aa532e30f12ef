package answer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	// ReasonCorrected: a citation named another block of the same chunk
	// than the one that holds its support, and now names that one.
	ReasonCorrected = "corrected_citation"
	// ReasonUnsupported: a sentence of the model's answer that no block
	// supports was removed from the answer (listed in AnswerDone.Unsupported).
	ReasonUnsupported = "unsupported_sentence"
	// ReasonDeadline: the language model had not answered when the answer's
	// deadline (Config.Deadline) came near; a lower rung answered.
	ReasonDeadline = "deadline"
	// ReasonCut: the model's answer ran past its max_tokens budget and was
	// cut; what it said was verified as it is.
	ReasonCut = "llm_cut"
	// ReasonNotInNotes: the answer says that the notes do not hold the
	// answer (the model abstained, or nothing supported it).
	ReasonNotInNotes = "not_in_notes"
	// ReasonLoop: the model said the same sentences again and again; it
	// was stopped, and the next rung answers unless verified sentences
	// had been shown.
	ReasonLoop = "llm_loop"
	// ReasonSetAside: a cited block addresses an AI assistant ("ignore
	// previous instructions"): set aside, it supported nothing.
	ReasonSetAside = "instruction_set_aside"
	// ReasonQABudget: the extractive model read fewer of the top passages
	// than Config.QAContexts, because the answer's deadline left no time
	// for more at the cost a passage takes on this machine now ("qa_budget:
	// read 1 of 4 passages within 2.1s ...").
	ReasonQABudget = "qa_budget"
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
	// MinRelevance is the share of the question's content words (weighted
	// by rarity among the contexts: see Relevance) that the notes an answer
	// cites must hold for it to count as an answer to this question (default
	// 0.5); below it the answer is not given and the reason says the notes
	// do not answer (not_in_notes).
	MinRelevance float64
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
	// Deadline bounds the whole answer when a language model is configured
	// (default 60 s). The language model runs under it, leaving a tenth of
	// it (at most 5 s) to the lower rungs; when it passes, or the providers
	// fail, the next rung answers (the extractive model, then the passages),
	// never an error. Follow-up questions come after the answer and are not
	// counted.
	Deadline time.Duration
	// LocalDeadline bounds the whole answer when no language model is
	// configured (Router nil; default 5 s). The extractive model reads the
	// top passages one at a time while the time left allows (see
	// extractive), and the passages answer when it read none in time.
	LocalDeadline time.Duration
	// Verify is VerifyStandard (the default) or VerifyStrict: every claim
	// is also judged by the strategic language model role.
	Verify string
	// MinEntailment is the entailment probability a claim needs when an
	// entailment model or the strict judge scores it (default 0.5).
	MinEntailment float64
}

// DefaultDeadline is Config.Deadline's default.
const DefaultDeadline = 60 * time.Second

// DefaultLocalDeadline is Config.LocalDeadline's default: the time an
// answer without a language model is promised in.
const DefaultLocalDeadline = 5 * time.Second

// lowerRungs is the part of the deadline kept for the rungs below the
// language model.
func lowerRungs(deadline time.Duration) time.Duration { return min(deadline/10, 5*time.Second) }

func (c Config) withDefaults() Config {
	if c.MinCoverage == 0 {
		c.MinCoverage = 0.5
	}
	if c.MinConfidence == 0 {
		c.MinConfidence = 0.4
	}
	if c.MinRelevance == 0 {
		c.MinRelevance = 0.5
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
	if c.Deadline <= 0 {
		c.Deadline = DefaultDeadline
	}
	if c.LocalDeadline <= 0 {
		c.LocalDeadline = DefaultLocalDeadline
	}
	if c.MinEntailment == 0 {
		c.MinEntailment = 0.5
	}
	return c
}

// Answerer turns a query's contexts into an answer, down the ladder: the
// language model with verified citations, then the extractive model, then
// the passages themselves. It always returns an answer with a mode.
type Answerer struct {
	Router   *llm.Router // nil: no provider configured
	QA       Extractor   // nil: no extractive model (*models.QA when installed)
	Analyzer *analysis.Analyzer
	Config   Config
	// Emit receives the streamed tokens in order (sequence from 1), a
	// restart marker when a provider failed midway, and a final token.
	Emit func(ctx context.Context, t *schemas.AnswerToken) error
	// Cache, when set, answers a question close to one answered before
	// (mode cache) and keeps the llm and extractive answers.
	Cache *Cache
	// Entailer, when set (the NLI model is installed), must find every
	// claim stated by its block (Config.MinEntailment).
	Entailer Entailer

	// qaCost is the extractive model's cost per token of input as last
	// measured, kept across answers (see extractive), shared by copies of
	// the Answerer made after its first answer; nil until then (cost).
	qaCost *passageCost
}

// costInit guards the creation of Answerer.qaCost.
var costInit sync.Mutex

// cost is the Answerer's measured extractive cost, created on first use.
func (a *Answerer) cost() *passageCost {
	costInit.Lock()
	defer costInit.Unlock()
	if a.qaCost == nil {
		a.qaCost = &passageCost{}
	}
	return a.qaCost
}

// Extractor is the extractive QA model: *models.QA, or a stand-in.
type Extractor interface {
	// Answer returns the best span of each context, in their order; it
	// stops when ctx is done, with ctx's error.
	Answer(ctx context.Context, question string, contexts []string, maxTokens int) ([]models.Span, error)
	// Tokens is how many tokens the model reads for the question and each
	// context: what a run's cost grows with.
	Tokens(question string, contexts []string) []int
}

// deadline is the whole answer's deadline: Config.Deadline with a language
// model, Config.LocalDeadline without (cfg has its defaults).
func (a *Answerer) deadline(cfg Config) time.Duration {
	if a.Router == nil {
		return cfg.LocalDeadline
	}
	return cfg.Deadline
}

// Answer answers rq and then generates its follow-up questions: Respond,
// then FollowUp. Token emission errors end the stream but not the answer.
func (a *Answerer) Answer(ctx context.Context, rq *schemas.QueryReranked) *schemas.AnswerDone {
	done := a.Respond(ctx, rq)
	a.FollowUp(ctx, rq, done)
	return done
}

// Respond answers rq within the deadline, streaming its tokens (the final
// one included), without follow-up questions: deliver the answer, then call
// FollowUp, which also keeps the answer in the cache.
func (a *Answerer) Respond(ctx context.Context, rq *schemas.QueryReranked) *schemas.AnswerDone {
	em := &emitter{emit: a.Emit, queryID: rq.QueryID}
	defer func() { em.send(ctx, &schemas.AnswerToken{Final: true}) }()
	// An answer that may draw on saved research reports is neither taken
	// from the cache nor kept there: the cache serves answers from the notes.
	if a.Cache != nil && len(rq.QueryVector) > 0 && !rq.Options.IncludeReports {
		t := time.Now()
		hit, err := a.Cache.Lookup(ctx, rq.QueryVector, rq.Lang)
		if err == nil && hit != nil {
			out := &schemas.AnswerDone{QueryID: rq.QueryID, Question: rq.Question, Lang: rq.Lang, Mode: schemas.AnswerCache,
				Answer: hit.Answer, Citations: hit.Citations, Confidence: hit.Confidence, FollowUps: hit.FollowUps,
				Reasons:   []string{fmt.Sprintf("cache: answered before as %q (%s); its notes have not changed", hit.Question, hit.Mode)},
				TimingsMS: map[string]float64{"cache": msSince(t)}, StandaloneQuestion: standaloneQuestion(rq)}
			em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
			DateCitations(out.Citations, rq.Contexts)
			return out
		}
	}
	out := a.answer(ctx, rq, em)
	DateCitations(out.Citations, rq.Contexts)
	a.markNewer(ctx, out, em)
	return out
}

// markNewer marks the newer of two cited sources that disagree (MarkNewer)
// in a language model's answer, and ends the answer, streamed and final,
// with the sentences that say which is newer. A cached answer keeps the
// marks and sentences it was kept with.
func (a *Answerer) markNewer(ctx context.Context, out *schemas.AnswerDone, em *emitter) {
	if out.Mode != schemas.AnswerLLM {
		return
	}
	note := MarkNewer(a.Analyzer, out.Citations, out.Lang)
	if note == "" {
		return
	}
	note = "\n\n" + note
	out.Answer += note
	em.send(ctx, &schemas.AnswerToken{Text: note})
}

// FollowUp generates the follow-up questions of done (an answer in mode llm;
// a cached answer brings its own), sets them in done, keeps the answer in
// the cache, and returns the kb.answer.followups event. Best effort: a
// provider failure gives none.
func (a *Answerer) FollowUp(ctx context.Context, rq *schemas.QueryReranked, done *schemas.AnswerDone) *schemas.AnswerFollowUps {
	t := time.Now()
	if done.Mode == schemas.AnswerLLM && a.Router != nil && len(done.FollowUps) == 0 {
		q := done.StandaloneQuestion
		if q == "" {
			q = done.Question
		}
		done.FollowUps = FollowUps(ctx, a.Router, q, done.Answer, done.Lang)
	}
	ev := &schemas.AnswerFollowUps{QueryID: done.QueryID, Lang: done.Lang, FollowUps: done.FollowUps,
		TimingsMS: map[string]float64{"follow_ups": msSince(t)}}
	if done.Mode != schemas.AnswerCache && done.TimingsMS != nil {
		done.TimingsMS["follow_ups"] = ev.TimingsMS["follow_ups"]
	}
	if a.Cache != nil && done.Mode != schemas.AnswerCache && !rq.Options.IncludeReports {
		_ = a.Cache.Put(ctx, rq.QueryVector, done)
	}
	return ev
}

// standaloneQuestion is the question as answered: with a chat history, the
// retrieval's standalone reformulation of it; "" without history.
func standaloneQuestion(rq *schemas.QueryReranked) string {
	if len(rq.History) == 0 {
		return ""
	}
	if q := strings.TrimSpace(rq.Searched); q != "" {
		return q
	}
	return rq.Question
}

func (a *Answerer) answer(ctx context.Context, rq *schemas.QueryReranked, em *emitter) *schemas.AnswerDone {
	cfg := a.Config.withDefaults()
	// The whole answer has a deadline; the language model gets all of it
	// but a reserve for the rungs below, which run under what is left.
	// Without a language model the answer has the shorter local deadline.
	ctx, cancel := context.WithTimeout(ctx, a.deadline(cfg))
	defer cancel()
	out := &schemas.AnswerDone{QueryID: rq.QueryID, Question: rq.Question, Lang: rq.Lang, TimingsMS: map[string]float64{},
		StandaloneQuestion: standaloneQuestion(rq)}
	for k, v := range rq.TimingsMS {
		out.TimingsMS[k] = v
	}
	// How the question crossed languages, or why it could not, is part of
	// why the answer is what it is.
	// So is the scope the retrieve stage read out of a question no door
	// read (schemas.ReasonScopeRead), or could not (ReasonInvalidScope).
	untranslated, badScope := false, ""
	for _, r := range rq.Reasons {
		switch {
		case strings.HasPrefix(r, "translat"):
			out.Reasons = append(out.Reasons, r)
			untranslated = untranslated || strings.HasPrefix(r, "translation_")
		case strings.HasPrefix(r, schemas.ReasonScopeRead+":"):
			out.Reasons = append(out.Reasons, r)
		case strings.HasPrefix(r, schemas.ReasonInvalidScope+":"):
			out.Reasons = append(out.Reasons, r)
			badScope = strings.TrimSpace(strings.TrimPrefix(r, schemas.ReasonInvalidScope+":"))
		}
	}
	if len(rq.Contexts) == 0 && badScope != "" {
		out.Mode = schemas.AnswerSearchOnly
		out.Answer = scopeRefused(rq.Lang, badScope)
		em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
		return out
	}
	if len(rq.Contexts) == 0 {
		out.Mode = schemas.AnswerSearchOnly
		out.Reasons = append(out.Reasons, ReasonNoContexts, ReasonNotInNotes+": retrieval found no passage")
		out.Answer = noNotes(rq.Lang, untranslated)
		em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
		return out
	}
	if a.Router == nil {
		out.Reasons = append(out.Reasons, ReasonNoProvider)
	} else {
		lctx, lcancel := context.WithTimeout(ctx, cfg.Deadline-lowerRungs(cfg.Deadline))
		ok := a.llm(lctx, rq, cfg, em, out)
		lcancel()
		if ok {
			return out
		}
	}
	if a.extractive(ctx, rq, cfg, em, out) {
		return out
	}
	t := time.Now()
	a.searchOnly(rq, cfg, out)
	out.TimingsMS["search_only"] = msSince(t)
	em.restart(ctx)
	em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
	return out
}

// llm asks the router and verifies the answer sentence by sentence as it
// streams (verifiedStream); false means fall back. Once a verified sentence
// was shown the answer is given, so nothing shown is taken back.
func (a *Answerer) llm(ctx context.Context, rq *schemas.QueryReranked, cfg Config, em *emitter, out *schemas.AnswerDone) bool {
	ctxs := rq.Contexts[:min(len(rq.Contexts), cfg.MaxContexts)]
	t := time.Now()
	defer func() { out.TimingsMS["llm"] = msSince(t) }()
	question := rq.Question
	if out.StandaloneQuestion != "" {
		question = out.StandaloneQuestion
	}
	opts := a.verifyOptions(ctx, rq.Lang, cfg)
	forms := questionForms(rq)
	relevant := func(v Verified) (float64, []string) {
		return Relevance(a.Analyzer, forms, citedContexts(v.Citations, ctxs), ctxs)
	}
	st := &verifiedStream{
		verify: func(text string, cites []jsonCitation, isJSON bool) Verified {
			return verifyText(a.Analyzer, text, cites, isJSON, ctxs, opts)
		},
		showable: func(v Verified) bool {
			rel, _ := relevant(v)
			return !v.Abstained && len(v.Citations) > 0 && v.Coverage >= cfg.MinCoverage &&
				cfg.Calibration.Accept(v.Confidence, cfg.MinConfidence) && rel >= cfg.MinRelevance
		},
		send: func(text string) { em.send(ctx, &schemas.AnswerToken{Text: text}) },
	}
	ask := &answerRequest{question: question, asked: rq.Question, lang: rq.Lang, ctxs: ctxs, router: a.Router, cfg: cfg}
	res, stopped, ok := a.askModel(ctx, ask, st, em, cfg, out)
	// The tokens spent count even when the answer falls back to a lower
	// rung: the provider was asked.
	out.Usage = ask.usage
	if !ok {
		return false
	}
	text, cites, isJSON, modelConf := st.finalText(res.Cut || stopped != nil)
	v := verifyText(a.Analyzer, text, cites, isJSON, ctxs, opts)
	v.ModelConfidence = modelConf
	loop := errors.Is(stopped, errLoop) || (res.Cut && v.Repeated >= loopRepeats)
	switch {
	case loop:
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the model said the same sentence again and again (%d repeats) and was stopped", ReasonLoop, v.Repeated))
	case res.Cut:
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the model's answer ran past its budget of %d tokens and was cut; its last, unfinished sentence is left out",
			ReasonCut, a.Router.RoleSettings(ask.role).MaxTokens))
	}
	if st.Shown() == "" && !a.decide(v, loop, relevant, cfg, out) {
		return false
	}
	if st.Shown() != "" {
		a.keepShown(v, cfg, out)
	}
	out.Provider = res.Provider
	out.Confidence = cfg.Calibration.Apply(answerConfidence(v, res.Cut || stopped != nil, loop))
	if !st.show(v.Text) {
		// Not in normal operation: the verified whole does not begin with
		// what was shown (a provider failed midway and another answered).
		em.restart(ctx)
		em.send(ctx, &schemas.AnswerToken{Text: v.Text})
	}
	return true
}

// askModel streams the model's answer into st, asking once more with the
// language rule when its first claim is in another language. stopped is
// why the stream ended early with something to verify (errLoop, or a
// failure after verified sentences were shown); ok is false when there is
// nothing to give (out.Reasons says why). res.Cut also holds a provider's
// own finish at max_tokens.
func (a *Answerer) askModel(ctx context.Context, ask *answerRequest, st *verifiedStream, em *emitter, cfg Config, out *schemas.AnswerDone) (res llm.Result, stopped error, ok bool) {
	res, err := ask.stream(ctx, st, em, "")
	if errors.Is(err, errLanguage) {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the model answered in another language than the question's (%s); asked again", DropLanguage, ask.lang))
		st.reset()
		res, err = ask.stream(ctx, st, em, languageAgain(ask.lang))
	}
	res.Cut = res.Cut || res.FinishReason == llm.FinishLength
	switch {
	case err == nil:
		return res, nil, true
	case errors.Is(err, errLanguage):
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: asked again, the model still answered in another language than the question's (%s)", DropLanguage, ask.lang))
		return res, err, false
	case errors.Is(err, errLoop):
		return res, err, true
	case st.Shown() == "":
		out.Reasons = append(out.Reasons, a.llmFailure(ctx, cfg, res, err))
		return res, err, false
	}
	// What was shown is verified: it stays, as an answer cut short.
	out.Reasons = append(out.Reasons, a.llmFailure(ctx, cfg, res, err)+"; the verified sentences shown before are the answer")
	return res, err, true
}

// decide accepts a verified answer of which nothing was shown yet; false
// means fall back (out.Reasons says why).
func (a *Answerer) decide(v Verified, loop bool, relevant func(Verified) (float64, []string), cfg Config, out *schemas.AnswerDone) bool {
	if loop {
		return false // a loop is no answer: the next rung answers
	}
	if v.WrongLanguage > 0 && v.Supported == 0 {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the model's answer is not in the question's language", DropLanguage))
		return false
	}
	rel, missing := relevant(v)
	if !a.accept(v, cfg, out) {
		return false
	}
	if !v.Abstained && rel < cfg.MinRelevance {
		// Supported, but not an answer to this question: the notes were
		// quoted about something else.
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: the model's answer does not address the question: the notes it cites hold %.0f%% of what the question asks about (not: %s)",
			ReasonNotInNotes, 100*rel, strings.Join(missing, ", ")))
		out.Mode, out.Answer, out.Citations, out.Unsupported, out.Confidence = "", "", nil, nil, 0
		return false
	}
	return true
}

// keepShown gives the answer whose verified beginning the client already
// has, whatever the rest turned out to be, with the reasons.
func (a *Answerer) keepShown(v Verified, cfg Config, out *schemas.AnswerDone) {
	if !a.accept(v, cfg, out) {
		out.Reasons = append(out.Reasons, "shown_verified: the sentences shown were verified as they came and are kept")
	}
	out.Mode, out.Answer, out.Citations, out.Unsupported = schemas.AnswerLLM, v.Text, v.Citations, v.Unsupported
}

// llmFailure says why the language model gave no (whole) answer.
func (a *Answerer) llmFailure(ctx context.Context, cfg Config, res llm.Result, err error) string {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return fmt.Sprintf("%s: the language model had not answered within %s (%s)", ReasonDeadline, cfg.Deadline, failureSummary(res, err))
	}
	return ReasonLLMFailed + ": " + failureSummary(res, err)
}

// answerRequest asks the router for one answer.
type answerRequest struct {
	question, asked, lang string
	ctxs                  []schemas.Context
	router                *llm.Router
	cfg                   Config
	role                  string
	// usage is what the providers reported for the requests so far.
	usage *schemas.Usage
}

// stream streams the answer into st; extra is a rule added to the prompt
// (the language, when asked again).
func (q *answerRequest) stream(ctx context.Context, st *verifiedStream, em *emitter, extra string) (llm.Result, error) {
	msgs := withAskedQuestion(Prompt(q.question, q.lang, q.ctxs), q.asked, q.question)
	q.role = llm.RoleFast
	if estimateTokens(msgs) >= q.cfg.LongPrompt {
		q.role = llm.RoleLongContext
	}
	request := func(role string) llm.Request {
		req := llm.Request{Role: role, Messages: msgs, OnRestart: func(string) {
			if st.Shown() != "" {
				em.restart(ctx)
			}
			st.reset()
		}}
		if q.router.Structured(role) {
			req.Messages, req.JSONSchema = withAskedQuestion(JSONPrompt(q.question, q.lang, q.ctxs), q.asked, q.question), AnswerSchema()
		}
		if extra != "" {
			req.Messages = withRule(req.Messages, extra)
		}
		return req
	}
	res, err := q.router.Stream(ctx, request(q.role), st.write)
	if errors.Is(err, llm.ErrNoProvider) && q.role != llm.RoleFast {
		q.role = llm.RoleFast
		res, err = q.router.Stream(ctx, request(q.role), st.write)
	}
	if u := res.Usage; u != nil {
		q.usage = q.usage.Add(&schemas.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens})
	}
	if st.stopped != nil {
		return res, st.stopped
	}
	return res, err
}

// languageAgain is the rule added when the model answered in another
// language than the question's.
func languageAgain(lang string) string {
	return fmt.Sprintf("Your previous reply was not in %s. Reply only in %s: every sentence in %s; quote the notes in their own language inside «».",
		language(lang), language(lang), language(lang))
}

// withRule appends a rule to the system message.
func withRule(msgs []llm.Message, rule string) []llm.Message {
	out := append([]llm.Message(nil), msgs...)
	if len(out) > 0 && out[0].Role == "system" {
		out[0].Content += "\n- " + rule
	}
	return out
}

// accept decides whether the verified answer is given, and fills out if so;
// either way out.Reasons says what verification dropped or corrected.
func (a *Answerer) accept(v Verified, cfg Config, out *schemas.AnswerDone) bool {
	for _, d := range v.Dropped {
		r := fmt.Sprintf("%s: [%s] %s", ReasonDropped, d.Marker, d.Reason)
		if d.Detail != "" {
			r += ": " + d.Detail
		}
		out.Reasons = append(out.Reasons, r)
	}
	for _, s := range v.SetAside {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: block %s addresses an AI assistant (%q): it is a note's text, not an instruction, and supports nothing",
			ReasonSetAside, s.BlockID, s.Phrase))
	}
	for _, c := range v.Corrected {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: %s -> %s", ReasonCorrected, c.From, c.To))
	}
	if v.Abstained {
		// The model says the notes do not answer: that is the answer.
		out.Mode, out.Answer, out.Confidence = schemas.AnswerLLM, v.Text, 0
		out.Reasons = append(out.Reasons, ReasonNotInNotes+": the language model found no answer in the notes")
		return true
	}
	if len(v.Citations) == 0 || v.Coverage < cfg.MinCoverage || !cfg.Calibration.Accept(v.Confidence, cfg.MinConfidence) {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: %d of the answer's %d claims are supported by the notes (confidence %.2f)",
			ReasonLowCoverage, v.Supported, v.Claims, cfg.Calibration.Apply(v.Confidence)))
		return false
	}
	for _, u := range v.Unsupported {
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: %s: %q", ReasonUnsupported, u.Reason, u.Text))
	}
	out.Mode, out.Answer, out.Citations, out.Unsupported = schemas.AnswerLLM, v.Text, v.Citations, v.Unsupported
	out.Confidence = cfg.Calibration.Apply(v.Confidence)
	return true
}

// extractive finds the best span in the top contexts; false means fall back.
// It reads them one at a time in rank order within its budget (qaBudget):
// the time left before the answer's deadline less a reserve for the
// passages. Before each passage it predicts the passage's cost from its
// tokens and the cost per token last measured (in this answer, or else the
// moving estimate kept across answers), and stops when the passage would
// not finish in time; a run still going at the end of the budget is stopped
// (the model's run stops with its context). The first passage is read
// unless its predicted cost is over twice the budget, so the machine is
// measured as it is now. It answers from the passages it read; when it
// read fewer than it meant to, a qa_budget reason says how many and in how
// long.
func (a *Answerer) extractive(ctx context.Context, rq *schemas.QueryReranked, cfg Config, em *emitter, out *schemas.AnswerDone) bool {
	if a.QA == nil || isNilQA(a.QA) {
		out.Reasons = append(out.Reasons, ReasonNoQA)
		return false
	}
	ctxs := rq.Contexts[:min(len(rq.Contexts), cfg.QAContexts)]
	texts := make([]string, len(ctxs))
	for i, c := range ctxs {
		texts[i] = c.Text
	}
	t := time.Now()
	defer func() { out.TimingsMS["qa"] = msSince(t) }()
	budget := qaBudget(ctx, t, a.cost().stopLatency())
	bctx, cancel := context.WithDeadline(ctx, t.Add(budget))
	defer cancel()
	lengths := a.QA.Tokens(rq.Question, texts)
	read, ok := a.readPassages(bctx, rq.Question, texts, lengths, t, budget, out)
	if read.relax {
		// Relaxed after the reason is written: a machine busy a
		// while ago is measured again before long.
		defer a.cost().relax()
	}
	if !ok {
		return false
	}
	spans := read.spans
	if len(spans) < len(texts) {
		out.Reasons = append(out.Reasons, a.budgetReason(len(spans), len(texts), time.Since(t), a.cost().estimate(meanInt(lengths), read.lastPerToken), read.stopped, cfg))
	}
	if len(spans) == 0 {
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
	out.Mode, out.Answer, out.Confidence = schemas.AnswerExtractive, s.Text, cfg.QACalibration.Apply(s.Score)
	cite := citation(c, sentenceAround(c.Text, s.Start, s.End))
	if b := blockAt(c, s.Start, s.End); b != c.BlockID {
		cite.BlockID, cite.Link = b, Link(b, c.Path)
	}
	out.Citations = []schemas.Citation{cite}
	em.restart(ctx)
	em.send(ctx, &schemas.AnswerToken{Text: out.Answer})
	return true
}

// passagesRead is what the extractive model read within its budget.
type passagesRead struct {
	spans        []models.Span // one per passage read, in order
	lastPerToken float64       // this answer's last measured cost per token
	stopped      time.Duration // a passage stopped unfinished after this long
	relax        bool          // the first passage was not read: relax the cost model
}

// readPassages reads the passages one by one while the next is predicted to
// finish within the budget that began at t. It reports false, with a
// qa_failed reason in out, when the model failed.
func (a *Answerer) readPassages(bctx context.Context, question string, texts []string, lengths []int, t time.Time, budget time.Duration, out *schemas.AnswerDone) (passagesRead, bool) {
	var r passagesRead
	for i := range texts {
		est := a.cost().estimate(lengths[i], r.lastPerToken)
		left := budget - time.Since(t)
		if left <= 0 || i > 0 && est > left {
			break
		}
		// The first passage is read unless it would clearly not finish
		// (twice the budget): reading it measures the machine as it is now.
		if i == 0 && est > 2*left {
			r.relax = true
			break
		}
		t0 := time.Now()
		got, err := a.QA.Answer(bctx, question, texts[i:i+1], 30)
		took := time.Since(t0)
		if err != nil && bctx.Err() != nil {
			// Stopped at the end of the budget: it costs more than this,
			// and it took this long to stop.
			a.cost().stoppedAt(took, lengths[i])
			a.cost().lateBy(max(0, time.Since(t)-budget))
			r.stopped = took
			break
		}
		if err != nil {
			out.Reasons = append(out.Reasons, "qa_failed: "+err.Error())
			return r, false
		}
		if len(got) != 1 {
			out.Reasons = append(out.Reasons, fmt.Sprintf("qa_failed: the extractive model gave %d spans for one passage", len(got)))
			return r, false
		}
		r.lastPerToken = a.cost().observe(took, lengths[i])
		r.spans = append(r.spans, got[0])
	}
	return r, true
}

// searchOnly shows the best passages with highlighted snippets.
func (a *Answerer) searchOnly(rq *schemas.QueryReranked, cfg Config, out *schemas.AnswerDone) {
	q := a.Analyzer.Query(rq.Question)
	forms := questionForms(rq)
	var b strings.Builder
	b.WriteString(searchOnlyLead(rq.Lang, out.Reasons))
	for i, c := range rq.Contexts[:min(len(rq.Contexts), cfg.SearchOnly)] {
		snip := a.Analyzer.Snippet(analysis.PlainText(c.Text), q, analysis.SnippetOptions{Tokens: 40, MarkStart: "**", MarkEnd: "**", Ellipsis: "…"})
		fmt.Fprintf(&b, "\n%d. %s — %s [%d]", i+1, strings.Join(c.SectionPath, " > "), strings.Join(strings.Fields(snip), " "), i+1)
		cit := citation(c, snip)
		if id := a.matchingBlock(c, forms); id != "" && id != cit.BlockID {
			cit.BlockID, cit.Link = id, Link(id, c.Path)
		}
		cit.Number = i + 1
		out.Citations = append(out.Citations, cit)
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

func noNotes(lang string, untranslated bool) string {
	switch {
	case untranslated && isRussian(lang):
		return "В заметках не нашлось ничего по этому вопросу. Заметки на другом языке, а перевести вопрос не удалось: настройте языковую модель или установите многоязычную модель эмбеддингов."
	case untranslated:
		return "Nothing in your notes matches this question. Your notes are in another language and the question could not be translated: configure a language model, or install a multilingual embedding model."
	case isRussian(lang):
		return "В заметках не нашлось ничего по этому вопросу."
	}
	return "Nothing in your notes matches this question."
}

// scopeRefused is the answer to a question whose scope the retrieve stage
// could not read or keep: nothing was searched; why says what to fix.
func scopeRefused(lang, why string) string {
	if isRussian(lang) {
		return "Не удалось прочитать рамки поиска в вопросе, поэтому ничего не искалось: " + why
	}
	return "The question's scope could not be read, so nothing was searched: " + why
}

// searchOnlyLead says why the answer is passages, as it happened: the
// deadline passed, no language model could answer (and why), the model
// looped or kept to another language, the model said the notes do not
// answer it, the verifier rejected the model's answer, no model is
// configured and the extractive model had no time to read the passages, or
// no model is configured.
func searchOnlyLead(lang string, reasons []string) string {
	for _, l := range searchOnlyLeads {
		for _, r := range reasons {
			if r != l.reason && !strings.HasPrefix(r, l.reason+":") {
				continue
			}
			lead := l.en
			if isRussian(lang) {
				lead = l.ru
			}
			if strings.Contains(lead, "%s") {
				return fmt.Sprintf(lead, strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(r, l.reason), ":")))
			}
			return lead
		}
	}
	if isRussian(lang) {
		return "Языковая модель не настроена, поэтому вот самые подходящие места из заметок:"
	}
	return "No language model is configured, so here are the most relevant passages from your notes:"
}

// searchOnlyLeads are the passages' lead lines by the first reason found, in
// this order; %s is what the reason says after its code.
var searchOnlyLeads = []struct{ reason, ru, en string }{
	{ReasonDeadline,
		"Языковая модель не ответила вовремя, поэтому вот самые подходящие места из заметок:",
		"The language model did not answer in time, so here are the most relevant passages from your notes:"},
	{ReasonLLMFailed,
		"Ни одна языковая модель не смогла ответить: %s. Вот самые подходящие места из заметок:",
		"No language model could answer: %s. Here are the most relevant passages from your notes:"},
	{ReasonLoop,
		"Языковая модель повторяла одно и то же, поэтому вот самые подходящие места из заметок:",
		"The language model kept repeating itself, so here are the most relevant passages from your notes:"},
	{DropLanguage,
		"Языковая модель ответила не на языке вопроса, поэтому вот самые подходящие места из заметок:",
		"The language model did not answer in the question's language, so here are the most relevant passages from your notes:"},
	{ReasonNotInNotes,
		"Похоже, в заметках нет ответа на этот вопрос. Вот самые близкие к нему места:",
		"Your notes do not seem to answer this question. Here are the closest passages:"},
	{ReasonLowCoverage,
		"Ответ модели не подтверждается заметками, поэтому вот самые подходящие места из них:",
		"The model's answer is not supported by your notes, so here are the most relevant passages:"},
	{ReasonQABudget,
		"Языковая модель не настроена, а компьютер слишком занят, чтобы локальная модель успела прочитать найденные места, поэтому вот самые подходящие из них:",
		"No language model is configured, and the machine is too busy for the local model to read the passages in time, so here are the most relevant ones from your notes:"},
}

// failureSummary says briefly why the language model gave no answer: the
// last error of each provider tried (without response bodies), or the
// router's error.
func failureSummary(res llm.Result, err error) string {
	var parts []string
	seen := map[string]int{}
	for _, at := range res.Attempts {
		if at.Err == "" {
			continue
		}
		msg := at.Err
		if i := strings.Index(msg, `: body "`); i >= 0 {
			msg = msg[:i]
		}
		msg = strings.TrimPrefix(msg, "llm provider "+at.Provider+": ")
		if msg == context.DeadlineExceeded.Error() {
			msg = fmt.Sprintf("stopped at the deadline after %d tokens", at.Tokens)
		}
		line := at.Provider + ": " + msg
		if i, ok := seen[at.Provider]; ok {
			parts[i] = line
			continue
		}
		seen[at.Provider] = len(parts)
		parts = append(parts, line)
	}
	if len(parts) == 0 {
		msg := err.Error()
		if i := strings.Index(msg, `: body "`); i >= 0 {
			msg = msg[:i]
		}
		return strings.TrimPrefix(msg, "llm: ")
	}
	return strings.Join(parts, "; ")
}

// withAskedQuestion shows the question as the user asked it beside the
// standalone one the prompt ends with, when they differ.
func withAskedQuestion(msgs []llm.Message, asked, standalone string) []llm.Message {
	if asked == standalone || len(msgs) == 0 {
		return msgs
	}
	last := &msgs[len(msgs)-1]
	last.Content = "The user asked, in a conversation: «" + asked + "». It is rewritten below as a standalone question; answer that.\n\n" + last.Content
	return msgs
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
