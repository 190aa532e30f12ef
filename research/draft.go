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
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/retrieval"
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
	return errors.Join(errs...)
}

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

// Record stores f (idempotently) and, when it is the last of its
// research's findings, returns the draft; otherwise nil. lastTry says the
// message will not be delivered again: a failing provider call then leaves
// the draft without an outline instead of failing.
func (dr *Drafter) Record(ctx context.Context, f *schemas.ResearchFinding, lastTry bool) (*schemas.ResearchDraft, error) {
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
	if rec.Closer != f.TaskID {
		return nil, nil // not all in yet, or another finding completed it
	}
	findings := make([]schemas.ResearchFinding, 0, len(rec.Tasks))
	for _, tid := range rec.Tasks {
		v, err := dr.d.State.Get(ctx, findingKey(f.ResearchID, tid))
		if err != nil {
			return nil, fmt.Errorf("draft %s: read finding %s: %w", f.ResearchID, tid, err)
		}
		if v == nil {
			return nil, fmt.Errorf("draft %s: finding %s is recorded but missing from the state", f.ResearchID, tid)
		}
		var g schemas.ResearchFinding
		if err := json.Unmarshal(v, &g); err != nil {
			return nil, fmt.Errorf("draft %s: decode finding %s: %w", f.ResearchID, tid, err)
		}
		findings = append(findings, g)
	}
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].Index < findings[j].Index })
	return dr.write(ctx, findings, rec.Started, lastTry)
}

// addTask adds f's task to the research's record with compare-and-set when
// the state has revisions, and names f's task the closer when it completes
// the set.
func (dr *Drafter) addTask(ctx context.Context, f *schemas.ResearchFinding) (draftRecord, error) {
	key := draftKey(f.ResearchID)
	update := func(cur []byte) (draftRecord, bool, error) {
		rec := draftRecord{ResearchID: f.ResearchID, Of: f.Of, Started: dr.d.Now().UTC()}
		if cur != nil {
			if err := json.Unmarshal(cur, &rec); err != nil {
				return rec, false, fmt.Errorf("draft %s: decode record: %w", f.ResearchID, err)
			}
		}
		changed := cur == nil
		if !slices.Contains(rec.Tasks, f.TaskID) {
			rec.Tasks = append(rec.Tasks, f.TaskID)
			sort.Strings(rec.Tasks)
			changed = true
		}
		if rec.Closer == "" && len(rec.Tasks) >= rec.Of {
			rec.Closer = f.TaskID
			changed = true
		}
		return rec, changed, nil
	}
	rkv, ok := dr.d.State.(bus.RevKV)
	if !ok {
		cur, err := dr.d.State.Get(ctx, key)
		if err != nil {
			return draftRecord{}, fmt.Errorf("draft %s: read record: %w", f.ResearchID, err)
		}
		rec, changed, err := update(cur)
		if err != nil || !changed {
			return rec, err
		}
		raw, _ := json.Marshal(rec)
		if err := dr.d.State.Put(ctx, key, raw); err != nil {
			return rec, fmt.Errorf("draft %s: write record: %w", f.ResearchID, err)
		}
		return rec, nil
	}
	for range dr.d.Config.CASRetries {
		cur, rev, err := rkv.GetRev(ctx, key)
		if err != nil {
			return draftRecord{}, fmt.Errorf("draft %s: read record: %w", f.ResearchID, err)
		}
		rec, changed, err := update(cur)
		if err != nil || !changed {
			return rec, err
		}
		raw, _ := json.Marshal(rec)
		ok, err := rkv.PutIf(ctx, key, raw, rev)
		if err != nil {
			return rec, fmt.Errorf("draft %s: write record: %w", f.ResearchID, err)
		}
		if ok {
			return rec, nil
		}
	}
	return draftRecord{}, fmt.Errorf("draft %s: record changed under %d attempts to write it", f.ResearchID, dr.d.Config.CASRetries)
}

// researchOf gathers what the findings say about their research.
func researchOf(findings []schemas.ResearchFinding) (question, lang, mode string) {
	for _, f := range findings {
		if question == "" && f.Original != "" {
			question = f.Original
		}
		if lang == "" && f.Lang != "" {
			lang = f.Lang
		}
		if f.Mode == schemas.ResearchEvidenceOnly {
			mode = schemas.ResearchEvidenceOnly
		}
	}
	if question == "" && len(findings) > 0 {
		question = findings[0].Question
	}
	if lang == "" {
		lang = retrieval.QuestionLang(question)
	}
	if mode == "" {
		mode = schemas.ResearchSynthesis
	}
	return question, lang, mode
}

func (dr *Drafter) write(ctx context.Context, findings []schemas.ResearchFinding, started time.Time, lastTry bool) (*schemas.ResearchDraft, error) {
	log := zerolog.Ctx(ctx)
	question, lang, mode := researchOf(findings)
	d := &schemas.ResearchDraft{
		Envelope:   schemas.Envelope{Type: schemas.TypeResearchDraftV1, Time: dr.d.Now().UTC()},
		ResearchID: findings[0].ResearchID, Question: question, Lang: lang, Mode: mode,
		Findings: findings, Started: started,
	}
	d.ID = d.MsgID()
	facts := 0
	for _, f := range findings {
		d.LLMCalls += f.LLMCalls
		facts += len(f.Facts)
		if f.Status != schemas.TaskDone && f.Status != "" {
			d.Reasons = append(d.Reasons, fmt.Sprintf("task_%s: %q", f.Status, f.Question))
		}
	}
	msg := fmt.Sprintf("draft from %d findings (%d facts)", len(findings), facts)
	switch {
	case mode == schemas.ResearchEvidenceOnly:
		// The findings are the best passages: no synthesis to outline.
	case dr.d.Router == nil:
		d.Reasons = append(d.Reasons, "no_llm_provider: the draft stage has no language model provider; no outline was written")
	case facts == 0:
		d.Reasons = append(d.Reasons, "no_facts: the sub-questions found no verified facts; no outline was written")
	default:
		msgs := DraftPrompt(question, lang, findings)
		role := llm.RoleStrategic
		if promptTokens(msgs) >= dr.d.Config.LongPrompt {
			role = llm.RoleLongContext
		}
		cctx, cancel := context.WithTimeout(ctx, dr.d.Config.Timeout)
		t := time.Now()
		res, err := dr.d.Router.Stream(cctx, llm.Request{Role: role, Messages: msgs, MaxTokens: dr.d.Config.MaxTokens}, nil)
		if errors.Is(err, llm.ErrNoProvider) && role != llm.RoleStrategic {
			res, err = dr.d.Router.Stream(cctx, llm.Request{Role: llm.RoleStrategic, Messages: msgs, MaxTokens: dr.d.Config.MaxTokens}, nil)
		}
		cancel()
		d.LLMCalls++
		if err != nil {
			if !lastTry {
				return nil, fmt.Errorf("draft %s: outline from the provider: %w", d.ResearchID, err)
			}
			d.Reasons = append(d.Reasons, fmt.Sprintf("draft_failed: %v", err))
			log.Warn().Err(err).Str("research_id", d.ResearchID).Msg("draft outline failed for good; the report is written without it")
		} else {
			d.Draft = strings.TrimSpace(res.Text)
			log.Info().Str("research_id", d.ResearchID).Str("provider", res.Provider).Dur("took", time.Since(t)).
				Int("chars", len(d.Draft)).Msg("draft outline written")
		}
	}
	dr.progress(&schemas.ResearchProgress{ResearchID: d.ResearchID, Step: "draft", Message: msg})
	return d, nil
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
