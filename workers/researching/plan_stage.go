// Package researching holds the deep-research stages: plan
// (kb.research.requested -> kb.research.task per sub-question), investigate
// (kb.research.task -> kb.research.finding), draft and report.
package researching

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage names.
const (
	StagePlan        = "plan"
	StageInvestigate = "investigate"
)

// Consumer settings of plan and investigate. An investigate task reads up
// to DocsPerTask documents, one provider call each; in-progress acks keep
// its lease, so AckWait is how long a crashed worker's task waits to be
// taken up again.
const (
	PlanAckWait           = 2 * time.Minute
	PlanMaxDeliver        = 3
	InvestigateAckWait    = time.Minute
	InvestigateMaxDeliver = 5
)

// PlanSpecs are the stage specs of plan and investigate, on KB_RESEARCH.
func PlanSpecs() []bus.StageSpec {
	return []bus.StageSpec{
		{Name: StagePlan, Stream: stage.StreamResearch, Filters: []string{schemas.SubjectResearchRequested},
			AckWait: PlanAckWait, MaxDeliver: PlanMaxDeliver},
		{Name: StageInvestigate, Stream: stage.StreamResearch, Filters: []string{schemas.SubjectResearchTask},
			AckWait: InvestigateAckWait, MaxDeliver: InvestigateMaxDeliver},
	}
}

// PlanConfig bounds a plan. Zero fields take the defaults.
type PlanConfig struct {
	// SubQuestions is the most sub-questions planned (5); a request's
	// budget may ask for another number, at most 7.
	SubQuestions int
	// Wall is a research's wall-time budget from its request (10 min); a
	// request's budget may ask for another.
	Wall time.Duration
	// MaxTokens bounds the plan's reply (1024; the strategic role's own
	// default, 256, is too short for seven sub-questions with reasons).
	MaxTokens int
	// MaxDeliver is the plan stage's max deliveries: on the last one a
	// failing provider no longer retries, the plan is built without it.
	MaxDeliver int
	// ReplyRetries is how many more times a plan reply that cannot be read
	// is asked for, with the parse error (research.DefaultReplyRetries, 2;
	// negative: none).
	ReplyRetries int
}

// Defaults of PlanConfig and of the research budget.
const (
	DefaultSubQuestions = 5
	MaxSubQuestions     = 7
	MinSubQuestions     = 3
	DefaultWall         = 10 * time.Minute
	DefaultDocsPerTask  = 8
)

func (c PlanConfig) withDefaults() PlanConfig {
	if c.SubQuestions <= 0 {
		c.SubQuestions = DefaultSubQuestions
	}
	if c.Wall <= 0 {
		c.Wall = DefaultWall
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 1024
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = PlanMaxDeliver
	}
	return c
}

// Validate reports every problem of c.
func (c PlanConfig) Validate() error {
	var errs []error
	if c.SubQuestions < 0 || c.SubQuestions > MaxSubQuestions {
		errs = append(errs, fmt.Errorf("research sub-questions %d: want 1..%d", c.SubQuestions, MaxSubQuestions))
	}
	if c.Wall < 0 {
		errs = append(errs, fmt.Errorf("research wall time %s: want a positive duration", c.Wall))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("research plan max tokens %d: want positive", c.MaxTokens))
	}
	return errors.Join(errs...)
}

// PlanDeps are what the plan stage uses. Router nil: no provider, every
// research is evidence_only.
type PlanDeps struct {
	Router *llm.Router
	// Retriever finds the best documents for a plan built without the
	// model (nil: such a plan is the question itself).
	Retriever *retrieval.Retriever
	Progress  func(*schemas.ResearchProgress)
	Config    PlanConfig
	Now       func() time.Time
}

// Reasons a plan gives.
const (
	ReasonNoLLMProvider = "no_llm_provider"
	ReasonNoLLMAsked    = "no_llm_asked"
	ReasonPlanFailed    = "plan_failed"
	// ReasonPlanFallback: the plan reply could not be read, also when asked
	// again; the plan was built without the model.
	ReasonPlanFallback = "plan_fallback"
)

// NewPlan returns the plan stage's handler: a request becomes one task per
// sub-question (the strategic role plans 3-7 in the question's language,
// at most the budget's number), each with the research's deadline. Without
// a provider, or when the request asks for no language model, the question
// itself is the one task, mode evidence_only. A reply that cannot be read
// is repaired (research.ParsePlanReply), else asked for again with the
// parse error (ReplyRetries more times, each counted in the tasks'
// PlanCalls); when it still cannot be read the plan is built without the
// model (the question and the headings of the best documents, reason
// plan_fallback). A provider failure is retried through the bus, and on
// the last delivery the plan is built without the model too (plan_failed).
func NewPlan(d PlanDeps) bus.Handler {
	p := &planner{d: d, cfg: d.Config.withDefaults(), now: d.Now}
	if p.now == nil {
		p.now = time.Now
	}
	return bus.HandlerFunc(p.handle)
}

// planner is the plan stage's handler.
type planner struct {
	d   PlanDeps
	cfg PlanConfig
	now func() time.Time
}

// thePlan is what a research is planned as: its sub-questions, whether the
// model writes the report, and why the plan is not the model's (or "").
type thePlan struct {
	subs   []research.SubQuestion
	mode   string
	reason string
	calls  int // provider calls the plan took
}

func (p *planner) handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	req, err := bus.Decode[*schemas.ResearchRequested](m)
	if err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, bus.Permanent(fmt.Errorf("research request: %w", err))
	}
	log := zerolog.Ctx(ctx).With().Str("research_id", req.ResearchID).Logger()
	language := req.Lang
	if language == "" {
		language = lang.DetectLang(req.Question)
	}
	n, wall, budget := p.budget(req)
	started := req.RequestedAt
	if started.IsZero() {
		started = req.Time
	}
	if started.IsZero() {
		started = p.now()
	}
	plan, err := p.plan(ctx, m, req, language, n, budget)
	if err != nil {
		return nil, err
	}
	if plan.reason != "" && plan.mode == schemas.ResearchSynthesis {
		log.Warn().Str("reason", plan.reason).Int("calls", plan.calls).Msg("research planned without the model's plan")
	}
	deadline := started.Add(wall)
	out := make([]schemas.Event, 0, len(plan.subs))
	var lines []string
	for i, s := range plan.subs {
		t := &schemas.ResearchTask{ResearchID: req.ResearchID, TaskID: "t" + strconv.Itoa(i+1), Index: i, Of: len(plan.subs),
			Question: s.Question, Why: s.Why, Lang: language, Mode: plan.mode, Budget: budget, Deadline: deadline, Original: req.Question,
			IncludeReports: req.IncludeReports, Scope: req.Scope, PlanCalls: plan.calls}
		if plan.mode == schemas.ResearchSynthesis {
			t.PlanReason = plan.reason
		}
		t.Envelope.TraceID = m.TraceID
		out = append(out, t)
		lines = append(lines, fmt.Sprintf("%d. %s", i+1, s.Question))
	}
	msg := "planned " + strconv.Itoa(len(plan.subs)) + " sub-questions:\n" + strings.Join(lines, "\n")
	if plan.reason != "" {
		msg += "\n(" + plan.reason + ")"
	}
	if p.d.Progress != nil {
		pr := &schemas.ResearchProgress{ResearchID: req.ResearchID, Step: "plan", Tasks: len(plan.subs), Message: msg}
		pr.Envelope.TraceID = m.TraceID
		p.d.Progress(pr)
	}
	log.Info().Str("mode", plan.mode).Int("tasks", len(plan.subs)).Msg("research planned")
	return out, nil
}

// budget is the request's budget with the stage's defaults filled in, and
// the number of sub-questions and the wall time it allows.
func (p *planner) budget(req *schemas.ResearchRequested) (int, time.Duration, schemas.ResearchBudget) {
	n := p.cfg.SubQuestions
	if req.Budget.SubQuestions > 0 {
		n = min(req.Budget.SubQuestions, MaxSubQuestions)
	}
	wall := p.cfg.Wall
	if req.Budget.WallSeconds > 0 {
		wall = time.Duration(req.Budget.WallSeconds) * time.Second
	}
	budget := req.Budget
	if budget.SubQuestions == 0 {
		budget.SubQuestions = n
	}
	if budget.DocsPerTask == 0 {
		budget.DocsPerTask = DefaultDocsPerTask
	}
	if budget.WallSeconds == 0 {
		budget.WallSeconds = int(wall / time.Second)
	}
	return n, wall, budget
}

// plan asks the model for up to n sub-questions, or plans without it: the
// question and the headings of the best documents, or the question alone.
// A provider failure before the last delivery is returned, to be retried.
func (p *planner) plan(ctx context.Context, m *bus.Msg, req *schemas.ResearchRequested, lang string, n int, budget schemas.ResearchBudget) (thePlan, error) {
	plan := thePlan{mode: schemas.ResearchSynthesis}
	switch {
	case p.d.Router == nil:
		plan.mode, plan.reason = schemas.ResearchEvidenceOnly, ReasonNoLLMProvider+": no language-model provider is configured"
	case req.NoLLM:
		plan.mode, plan.reason = schemas.ResearchEvidenceOnly, ReasonNoLLMAsked+": the request asked for no language model"
	default:
		var err error
		_, plan.calls, err = research.AskStructured(ctx, research.Ask{What: "plan",
			Messages: research.PlanMessages(req.Question, lang, min(MinSubQuestions, n), n),
			Call: func(ctx context.Context, msgs []llm.Message) (llm.Result, error) {
				return p.d.Router.Stream(ctx, llm.Request{Role: llm.RoleStrategic, MaxTokens: p.cfg.MaxTokens,
					Messages: msgs, JSONSchema: research.PlanSchema()}, nil)
			},
			Parse: func(text string) error {
				var err error
				plan.subs, err = research.ParsePlanReply(text, n)
				return err
			},
			Retries: p.cfg.ReplyRetries,
			// Keep a call each for the draft and the report.
			Allow: func(calls int) bool { return budget.LLMCalls <= 0 || calls < budget.LLMCalls-2 },
		})
		switch {
		case err != nil && !research.IsReplyError(err) && m.Delivered < uint64(p.cfg.MaxDeliver):
			return thePlan{}, fmt.Errorf("plan research %s: %w", req.ResearchID, err)
		case err != nil && research.IsReplyError(err):
			plan.reason = ReasonPlanFallback + ": " + err.Error()
		case err != nil:
			plan.reason = ReasonPlanFailed + ": " + err.Error()
		}
	}
	if len(plan.subs) == 0 && plan.mode == schemas.ResearchSynthesis {
		plan.subs = fallbackPlan(ctx, p.d.Retriever, req, lang, n)
		if plan.reason != "" {
			plan.reason += fmt.Sprintf("; planned without the model: the question and %d headings of the best documents", len(plan.subs)-1)
		}
	}
	if len(plan.subs) == 0 {
		plan.subs = []research.SubQuestion{{Question: req.Question}}
	}
	return plan, nil
}

// fallbackPlan is a plan built without the model: the question itself,
// then one sub-question per distinct heading of the best documents for it
// ("<heading>: <question>", in order of their best passage), n in all.
// Without a retriever, or when retrieval fails, it is the question alone.
func fallbackPlan(ctx context.Context, r *retrieval.Retriever, req *schemas.ResearchRequested, lang string, n int) []research.SubQuestion {
	question := req.Question
	out := []research.SubQuestion{{Question: question, Why: fallbackWhy(lang, "")}}
	if r == nil || n <= 1 {
		return out
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "plan-fallback", Question: question, Lang: lang, Options: schemas.QueryOptions{K: 4 * n,
		IncludeReports: req.IncludeReports, Scope: req.Scope}}}
	rq, err := r.Retrieve(ctx, q)
	var rr *schemas.QueryReranked
	if err == nil {
		rr, err = r.Rerank(ctx, rq)
	}
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("plan without the model: retrieval failed; the question itself is the plan")
		return out
	}
	seen := map[string]bool{strings.ToLower(strings.TrimRight(question, "?.! ")): true}
	for _, doc := range research.GroupDocuments(rr.Contexts, 4*n) {
		for _, c := range doc.Contexts {
			h := strings.TrimSpace(c.Title)
			if k := len(c.SectionPath); k > 0 && strings.TrimSpace(c.SectionPath[k-1]) != "" {
				h = strings.TrimSpace(c.SectionPath[k-1])
			}
			h = strings.Trim(h, "#*_ ")
			key := strings.ToLower(h)
			if len([]rune(h)) < 3 || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, research.SubQuestion{Question: h + ": " + question, Why: fallbackWhy(lang, doc.Title)})
			if len(out) >= n {
				return out
			}
		}
	}
	return out
}

func fallbackWhy(lang, title string) string {
	switch {
	case lang == "ru" && title == "":
		return "Сам вопрос (план составлен без модели)."
	case lang == "ru":
		return "Подтема заметки «" + title + "», одной из лучших по вопросу (план составлен без модели)."
	case title == "":
		return "The question itself (planned without the model)."
	}
	return "A sub-topic of \"" + title + "\", one of the best notes for the question (planned without the model)."
}
