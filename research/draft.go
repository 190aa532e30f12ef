package research

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// DraftConfig tunes the draft stage (the supervisor).
type DraftConfig struct {
	// MaxTokens bounds the outline the model writes (default 1024).
	MaxTokens int
	// LongPrompt is the estimated prompt size in tokens from which the
	// long_context role is asked instead of strategic (default 6000).
	LongPrompt int
	// Timeout bounds the provider call (default 2 minutes).
	Timeout time.Duration
	// MaxDeliver is the stage's max deliveries: on the last one a failed
	// provider call no longer fails the message (default 3).
	MaxDeliver int
	// CASRetries bounds the compare-and-set attempts on the research's
	// record (default 20).
	CASRetries int
	// Gaps is how many follow-up tasks the outline may ask for, for
	// sub-questions the findings left unanswered (default 2; negative:
	// none). They are researched like the plan's tasks, within what is left
	// of the research's time and provider calls, and the draft waits for
	// them. One round.
	Gaps int
	// ReplyRetries is how many more times an outline that cannot be read is
	// asked for, with the parse error (DefaultReplyRetries, 2; negative:
	// none).
	ReplyRetries int
}

func (c DraftConfig) withDefaults() DraftConfig {
	if c.MaxTokens <= 0 {
		c.MaxTokens = 1024
	}
	if c.LongPrompt <= 0 {
		c.LongPrompt = 6000
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 3
	}
	if c.CASRetries <= 0 {
		c.CASRetries = 20
	}
	if c.Gaps == 0 {
		c.Gaps = DefaultGaps
	}
	return c
}

// Validate reports every problem at once.
func (c DraftConfig) Validate() error {
	var errs []error
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("draft max tokens %d: must not be negative", c.MaxTokens))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("draft timeout %s: must not be negative", c.Timeout))
	}
	if c.MaxDeliver < 0 {
		errs = append(errs, fmt.Errorf("draft max deliver %d: must not be negative", c.MaxDeliver))
	}
	if c.Gaps > MaxGaps {
		errs = append(errs, fmt.Errorf("draft gaps %d: at most %d follow-up tasks", c.Gaps, MaxGaps))
	}
	return errors.Join(errs...)
}

// DefaultGaps is how many follow-up tasks an outline may ask for.
const DefaultGaps = 2

// MaxGaps bounds DraftConfig.Gaps.
const MaxGaps = 5

// DraftDeps are what the draft stage needs.
type DraftDeps struct {
	// Router reaches the language models; nil: no provider (no outline).
	Router *llm.Router
	// State is KB_RESEARCH_STATE. A bus.RevKV (a JetStream bucket) makes
	// two draft workers agree on which of them writes the draft.
	State bus.KV
	// Progress publishes a research step (nil: none).
	Progress func(*schemas.ResearchProgress)
	Config   DraftConfig
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Drafter is the supervisor: it records findings and writes the draft once
// every task of a research has reported.
type Drafter struct {
	d DraftDeps
}

// NewDrafter returns a drafter; it fails when the config is invalid or no
// state is given.
func NewDrafter(d DraftDeps) (*Drafter, error) {
	if err := d.Config.Validate(); err != nil {
		return nil, err
	}
	if d.State == nil {
		return nil, errors.New("draft stage: no research state bucket")
	}
	d.Config = d.Config.withDefaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Drafter{d: d}, nil
}

// draftRecord is the supervisor's record of a research: the tasks whose
// findings are in, and the task whose finding completed it (the one that
// writes the draft, also on redelivery).
type draftRecord struct {
	ResearchID string    `json:"research_id"`
	Of         int       `json:"of"`
	Tasks      []string  `json:"tasks"`
	Closer     string    `json:"closer,omitempty"`
	Started    time.Time `json:"started"`
	// Outlined says the outline step is done (its text, calls and reasons
	// kept), so a redelivered closer asks the model no more.
	Outlined       bool     `json:"outlined,omitempty"`
	Outline        string   `json:"outline,omitempty"`
	OutlineCalls   int      `json:"outline_calls,omitempty"`
	OutlineReasons []string `json:"outline_reasons,omitempty"`
	// Gaps are the follow-up tasks asked for (their questions, task ids
	// g1, g2 ...), GapCloser the finding whose arrival asked for them (it
	// publishes them again when redelivered), GapOf the task count before.
	Gaps      []SubQuestion `json:"gaps,omitempty"`
	GapCloser string        `json:"gap_closer,omitempty"`
	GapOf     int           `json:"gap_of,omitempty"`
}

// keySafe matches a string usable as one token of a KV key.
var keySafe = regexp.MustCompile(`^[A-Za-z0-9_=-]{1,64}$`)

// stateKeyPart is s as one token of a KV key: itself when it is made of letters,
// digits, '_', '=' and '-', else "h" and a hash of it.
func stateKeyPart(s string) string {
	if keySafe.MatchString(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:16])
}

func draftKey(researchID string) string { return "draft." + stateKeyPart(researchID) }
func findingKey(researchID, taskID string) string {
	return "draft." + stateKeyPart(researchID) + ".finding." + stateKeyPart(taskID)
}

// Record is Next for callers that want the draft only: it stores f and,
// when it is the last of its research's findings, returns the draft;
// otherwise (and when the outline asked for follow-up tasks) nil.
func (dr *Drafter) Record(ctx context.Context, f *schemas.ResearchFinding, lastTry bool) (*schemas.ResearchDraft, error) {
	evs, err := dr.Next(ctx, f, lastTry)
	for _, ev := range evs {
		if d, ok := ev.(*schemas.ResearchDraft); ok {
			return d, err
		}
	}
	return nil, err
}

// Next stores f (idempotently) and, when it is the last of its research's
// findings, outlines the report: the draft, or, when the outline names
// gaps the findings left (and the research has time and calls left), the
// follow-up tasks, whose findings then complete the research again and
// give the draft. lastTry says the message will not be delivered again: a
// failing provider call then leaves the draft without an outline instead
// of failing.
func (dr *Drafter) Next(ctx context.Context, f *schemas.ResearchFinding, lastTry bool) ([]schemas.Event, error) {
	log := zerolog.Ctx(ctx)
	raw, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("draft %s: encode finding %s: %w", f.ResearchID, f.TaskID, err)
	}
	if err := dr.d.State.Put(ctx, findingKey(f.ResearchID, f.TaskID), raw); err != nil {
		return nil, fmt.Errorf("draft %s: record finding %s: %w", f.ResearchID, f.TaskID, err)
	}
	rec, err := dr.addTask(ctx, f)
	if err != nil {
		return nil, err
	}
	log.Info().Str("research_id", f.ResearchID).Str("task_id", f.TaskID).Int("findings", len(rec.Tasks)).
		Int("of", rec.Of).Str("status", f.Status).Msg("finding recorded")
	if rec.GapCloser == f.TaskID && rec.Closer != f.TaskID {
		// Redelivered after asking for follow-up tasks: publish them again
		// (their message ids make the copies no-ops).
		findings, err := dr.findings(ctx, f.ResearchID, rec.Tasks)
		if err != nil {
			return nil, err
		}
		return dr.gapTasks(rec, findings), nil
	}
	if rec.Closer != f.TaskID {
		return nil, nil // not all in yet, or another finding completed it
	}
	findings, err := dr.findings(ctx, f.ResearchID, rec.Tasks)
	if err != nil {
		return nil, err
	}
	if !rec.Outlined {
		o, err := dr.outline(ctx, findings, rec.GapCloser == "", lastTry)
		if err != nil {
			return nil, err
		}
		gaps, why := dr.chooseGaps(o, findings)
		if why != "" {
			o.reasons = append(o.reasons, why)
		}
		rec, err = dr.update(ctx, f.ResearchID, func(r *draftRecord) bool {
			if r.Outlined {
				return false
			}
			r.Outlined, r.Outline, r.OutlineCalls, r.OutlineReasons = true, o.text, o.calls, o.reasons
			if len(gaps) > 0 {
				r.Gaps, r.GapCloser, r.GapOf = gaps, f.TaskID, r.Of
				r.Of += len(gaps)
				r.Closer = ""
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		if rec.GapCloser == f.TaskID && rec.Closer != f.TaskID {
			var qs []string
			for _, g := range rec.Gaps {
				qs = append(qs, g.Question)
			}
			log.Info().Str("research_id", f.ResearchID).Strs("gaps", qs).Msg("follow-up tasks for the outline's gaps")
			dr.progress(&schemas.ResearchProgress{ResearchID: f.ResearchID, Step: "draft", Tasks: rec.Of,
				Message: fmt.Sprintf("%d follow-up tasks for gaps: %s", len(qs), strings.Join(qs, "; "))})
			return dr.gapTasks(rec, findings), nil
		}
		if rec.Closer != f.TaskID {
			return nil, nil
		}
	}
	d := dr.write(findings, rec)
	return []schemas.Event{d}, nil
}

// findings reads the recorded findings of tasks, in their order.
func (dr *Drafter) findings(ctx context.Context, researchID string, tasks []string) ([]schemas.ResearchFinding, error) {
	findings := make([]schemas.ResearchFinding, 0, len(tasks))
	for _, tid := range tasks {
		v, err := dr.d.State.Get(ctx, findingKey(researchID, tid))
		if err != nil {
			return nil, fmt.Errorf("draft %s: read finding %s: %w", researchID, tid, err)
		}
		if v == nil {
			return nil, fmt.Errorf("draft %s: finding %s is recorded but missing from the state", researchID, tid)
		}
		var g schemas.ResearchFinding
		if err := json.Unmarshal(v, &g); err != nil {
			return nil, fmt.Errorf("draft %s: decode finding %s: %w", researchID, tid, err)
		}
		findings = append(findings, g)
	}
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].Index < findings[j].Index })
	return findings, nil
}

// addTask adds f's task to the research's record and names f's task the
// closer when it completes the set.
func (dr *Drafter) addTask(ctx context.Context, f *schemas.ResearchFinding) (draftRecord, error) {
	return dr.updateWith(ctx, f.ResearchID, func(rec *draftRecord, fresh bool) bool {
		changed := fresh
		if fresh {
			rec.Of, rec.Started = f.Of, dr.d.Now().UTC()
		}
		if !slices.Contains(rec.Tasks, f.TaskID) {
			rec.Tasks = append(rec.Tasks, f.TaskID)
			sort.Strings(rec.Tasks)
			changed = true
		}
		if rec.Closer == "" && len(rec.Tasks) >= rec.Of {
			rec.Closer = f.TaskID
			changed = true
		}
		return changed
	})
}

// update changes an existing record with change (false: no change).
func (dr *Drafter) update(ctx context.Context, researchID string, change func(*draftRecord) bool) (draftRecord, error) {
	return dr.updateWith(ctx, researchID, func(rec *draftRecord, _ bool) bool { return change(rec) })
}

// updateWith reads the research's record, changes it and writes it back,
// with compare-and-set when the state has revisions.
func (dr *Drafter) updateWith(ctx context.Context, researchID string, change func(rec *draftRecord, fresh bool) bool) (draftRecord, error) {
	key := draftKey(researchID)
	apply := func(cur []byte) (draftRecord, bool, error) {
		rec := draftRecord{ResearchID: researchID}
		if cur != nil {
			if err := json.Unmarshal(cur, &rec); err != nil {
				return rec, false, fmt.Errorf("draft %s: decode record: %w", researchID, err)
			}
		}
		return rec, change(&rec, cur == nil), nil
	}
	rkv, ok := dr.d.State.(bus.RevKV)
	if !ok {
		cur, err := dr.d.State.Get(ctx, key)
		if err != nil {
			return draftRecord{}, fmt.Errorf("draft %s: read record: %w", researchID, err)
		}
		rec, changed, err := apply(cur)
		if err != nil || !changed {
			return rec, err
		}
		raw, _ := json.Marshal(rec)
		if err := dr.d.State.Put(ctx, key, raw); err != nil {
			return rec, fmt.Errorf("draft %s: write record: %w", researchID, err)
		}
		return rec, nil
	}
	for range dr.d.Config.CASRetries {
		cur, rev, err := rkv.GetRev(ctx, key)
		if err != nil {
			return draftRecord{}, fmt.Errorf("draft %s: read record: %w", researchID, err)
		}
		rec, changed, err := apply(cur)
		if err != nil || !changed {
			return rec, err
		}
		raw, _ := json.Marshal(rec)
		ok, err := rkv.PutIf(ctx, key, raw, rev)
		if err != nil {
			return rec, fmt.Errorf("draft %s: write record: %w", researchID, err)
		}
		if ok {
			return rec, nil
		}
	}
	return draftRecord{}, fmt.Errorf("draft %s: record changed under %d attempts to write it", researchID, dr.d.Config.CASRetries)
}

// researchOf gathers what the findings say about their research.
func researchOf(findings []schemas.ResearchFinding) (question, language, mode string) {
	for _, f := range findings {
		if question == "" && f.Original != "" {
			question = f.Original
		}
		if language == "" && f.Lang != "" {
			language = f.Lang
		}
		if f.Mode == schemas.ResearchEvidenceOnly {
			mode = schemas.ResearchEvidenceOnly
		}
	}
	if question == "" && len(findings) > 0 {
		question = findings[0].Question
	}
	if language == "" {
		language = lang.DetectLang(question)
	}
	if mode == "" {
		mode = schemas.ResearchSynthesis
	}
	return question, language, mode
}

// outlined is the outline step's result.
type outlined struct {
	text    string
	outline Outline
	calls   int
	reasons []string
}

// outline asks the model for the report's outline (with gaps when
// withGaps): nothing without a provider, in evidence_only mode or without
// facts (the reasons say so). An outline that cannot be read is asked for
// again with the parse error; when it still cannot be read its text is
// kept as it is, without gaps (draft_unusable). A provider failure is an
// error unless lastTry (then draft_failed).
func (dr *Drafter) outline(ctx context.Context, findings []schemas.ResearchFinding, withGaps, lastTry bool) (outlined, error) {
	log := zerolog.Ctx(ctx)
	var o outlined
	question, lang, mode := researchOf(findings)
	rid := findings[0].ResearchID
	facts := 0
	for _, f := range findings {
		facts += len(f.Facts)
	}
	switch {
	case mode == schemas.ResearchEvidenceOnly:
		// The findings are the best passages: no synthesis to outline.
		return o, nil
	case dr.d.Router == nil:
		o.reasons = append(o.reasons, "no_llm_provider: the draft stage has no language model provider; no outline was written")
		return o, nil
	case facts == 0:
		o.reasons = append(o.reasons, "no_facts: the sub-questions found no verified facts; no outline was written")
		return o, nil
	}
	msgs := DraftPrompt(question, lang, findings)
	if n := dr.d.Config.Gaps; withGaps && n > 0 {
		msgs[0].Content += fmt.Sprintf(` If a part of the question is not answered by the facts, add "gaps": up to %d sub-questions, in %s, `+
			`that the notes might still answer (each {"question": "...", "why": "..."}); leave "gaps" empty when the facts answer the question.`,
			n, reportLanguage(lang))
	}
	role := llm.RoleStrategic
	if promptTokens(msgs) >= dr.d.Config.LongPrompt {
		role = llm.RoleLongContext
	}
	t := time.Now()
	var provider string
	res, calls, err := AskStructured(ctx, Ask{What: "outline", Messages: msgs, Retries: dr.d.Config.ReplyRetries,
		Call: func(ctx context.Context, msgs []llm.Message) (llm.Result, error) {
			cctx, cancel := context.WithTimeout(ctx, dr.d.Config.Timeout)
			defer cancel()
			res, err := dr.d.Router.Stream(cctx, llm.Request{Role: role, Messages: msgs, MaxTokens: dr.d.Config.MaxTokens}, nil)
			if errors.Is(err, llm.ErrNoProvider) && role != llm.RoleStrategic {
				res, err = dr.d.Router.Stream(cctx, llm.Request{Role: llm.RoleStrategic, Messages: msgs, MaxTokens: dr.d.Config.MaxTokens}, nil)
			}
			provider = res.Provider
			return res, err
		},
		Parse: func(text string) error {
			var err error
			o.outline, err = ParseOutline(text)
			return err
		},
		Allow: func(calls int) bool { return dr.callsLeft(findings, calls) > 1 },
	})
	o.calls = calls
	switch {
	case err != nil && !IsReplyError(err):
		if !lastTry {
			return o, fmt.Errorf("draft %s: outline from the provider: %w", rid, err)
		}
		o.reasons = append(o.reasons, fmt.Sprintf("draft_failed: %v", err))
		log.Warn().Err(err).Str("research_id", rid).Msg("draft outline failed for good; the report is written without it")
	case err != nil:
		o.text = strings.TrimSpace(res.Text)
		o.outline = Outline{}
		o.reasons = append(o.reasons, fmt.Sprintf("draft_unusable: %v; its text is given to the report as it is, no follow-up tasks", err))
		log.Warn().Err(err).Str("research_id", rid).Msg("draft outline unreadable; kept as text")
	default:
		o.text = strings.TrimSpace(res.Text)
		log.Info().Str("research_id", rid).Str("provider", provider).Dur("took", time.Since(t)).Int("calls", calls).
			Int("chars", len(o.text)).Int("gaps", len(o.outline.Gaps)).Msg("draft outline written")
	}
	return o, nil
}

// spent counts the provider calls of the findings and their plan.
func spent(findings []schemas.ResearchFinding) int {
	plan, n := 0, 0
	for _, f := range findings {
		n += f.LLMCalls
		plan = max(plan, f.PlanCalls)
	}
	return plan + n
}

// budgetOf is the research's budget and deadline, from its findings.
func budgetOf(findings []schemas.ResearchFinding) (schemas.ResearchBudget, time.Time) {
	for _, f := range findings {
		if f.Budget != (schemas.ResearchBudget{}) || !f.Deadline.IsZero() {
			return f.Budget, f.Deadline
		}
	}
	return schemas.ResearchBudget{}, time.Time{}
}

// callsLeft is how many provider calls the research has left after the
// findings' and extra more (a large number without a budget).
func (dr *Drafter) callsLeft(findings []schemas.ResearchFinding, extra int) int {
	b, _ := budgetOf(findings)
	if b.LLMCalls <= 0 {
		return 1 << 30
	}
	return b.LLMCalls - spent(findings) - extra
}

// chooseGaps picks the outline's gaps to research again: new questions
// only, at most Gaps, while the research has time and, beside a call for
// the report, a call for each; why says what was left out and why.
func (dr *Drafter) chooseGaps(o outlined, findings []schemas.ResearchFinding) ([]SubQuestion, string) {
	if dr.d.Config.Gaps <= 0 || len(o.outline.Gaps) == 0 {
		return nil, ""
	}
	seen := map[string]bool{}
	for _, f := range findings {
		seen[strings.ToLower(strings.TrimRight(strings.TrimSpace(f.Question), "?.! "))] = true
	}
	var gaps []SubQuestion
	for _, g := range o.outline.Gaps {
		k := strings.ToLower(strings.TrimRight(strings.TrimSpace(g.Question), "?.! "))
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		gaps = append(gaps, g)
	}
	if len(gaps) > dr.d.Config.Gaps {
		gaps = gaps[:dr.d.Config.Gaps]
	}
	if len(gaps) == 0 {
		return nil, ""
	}
	_, deadline := budgetOf(findings)
	if !deadline.IsZero() && !dr.d.Now().Before(deadline) {
		return nil, fmt.Sprintf("gaps_skipped: %d follow-up questions, but the research's time ran out", len(gaps))
	}
	left := dr.callsLeft(findings, o.calls) - 1 // a call for the report
	if left < len(gaps) {
		n := len(gaps)
		gaps = gaps[:max(0, left)]
		if len(gaps) == 0 {
			return nil, fmt.Sprintf("gaps_skipped: %d follow-up questions, but the research's provider calls are spent", n)
		}
	}
	return gaps, ""
}

// gapTasks are the follow-up tasks of rec's gaps: g1, g2 ... after the
// plan's tasks, each with the research's deadline and budget and its share
// of the calls left.
func (dr *Drafter) gapTasks(rec draftRecord, findings []schemas.ResearchFinding) []schemas.Event {
	question, lang, _ := researchOf(findings)
	budget, deadline := budgetOf(findings)
	plan := 0
	var trace string
	for _, f := range findings {
		plan = max(plan, f.PlanCalls)
		if trace == "" {
			trace = f.TraceID
		}
	}
	share := 0
	if budget.LLMCalls > 0 {
		// What the first round left, less the outline and the report.
		var first []schemas.ResearchFinding
		for _, f := range findings {
			if !f.Gap {
				first = append(first, f)
			}
		}
		share = max(1, (dr.callsLeft(first, rec.OutlineCalls)-1)/len(rec.Gaps))
	}
	var out []schemas.Event
	for i, g := range rec.Gaps {
		t := &schemas.ResearchTask{ResearchID: rec.ResearchID, TaskID: "g" + strconv.Itoa(i+1), Index: rec.GapOf + i, Of: rec.GapOf + len(rec.Gaps),
			Question: g.Question, Why: g.Why, Lang: lang, Mode: schemas.ResearchSynthesis, Budget: budget, Deadline: deadline,
			Original: question, PlanCalls: plan, Gap: true, Calls: share}
		t.Envelope.TraceID = trace
		out = append(out, t)
	}
	return out
}

// write is the draft of the findings with the recorded outline.
func (dr *Drafter) write(findings []schemas.ResearchFinding, rec draftRecord) *schemas.ResearchDraft {
	question, lang, mode := researchOf(findings)
	d := &schemas.ResearchDraft{
		Envelope:   schemas.Envelope{Type: schemas.TypeResearchDraftV1, Time: dr.d.Now().UTC()},
		ResearchID: findings[0].ResearchID, Question: question, Lang: lang, Mode: mode,
		Findings: findings, Started: rec.Started, Draft: rec.Outline,
	}
	d.ID = d.MsgID()
	facts := 0
	d.LLMCalls = spent(findings) + rec.OutlineCalls
	for _, f := range findings {
		facts += len(f.Facts)
		if f.Status != schemas.TaskDone && f.Status != "" {
			d.Reasons = append(d.Reasons, fmt.Sprintf("task_%s: %q", f.Status, f.Question))
		}
	}
	d.Reasons = append(d.Reasons, rec.OutlineReasons...)
	if len(rec.Gaps) > 0 {
		var qs []string
		for _, g := range rec.Gaps {
			qs = append(qs, fmt.Sprintf("%q", g.Question))
		}
		d.Reasons = append(d.Reasons, fmt.Sprintf("gaps_researched: the outline named %d gaps, researched again: %s", len(qs), strings.Join(qs, ", ")))
	}
	dr.progress(&schemas.ResearchProgress{ResearchID: d.ResearchID, Step: "draft",
		Message: fmt.Sprintf("draft from %d findings (%d facts)", len(findings), facts)})
	return d
}

func (dr *Drafter) progress(p *schemas.ResearchProgress) {
	if dr.d.Progress == nil {
		return
	}
	p.Type, p.Time = schemas.TypeResearchProgressV1, dr.d.Now().UTC()
	p.ID = p.MsgID()
	dr.d.Progress(p)
}

// promptTokens is a rough token count of a prompt (4 bytes a token).
func promptTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n / 4
}
