package answer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/schemas"
)

// slowQA stands for the extractive model on a machine where a passage costs
// per (the cost of run n, counted from 0): it answers each passage with its
// first word, trusted, and stops when its context is done, as the real one
// does (ONNX Runtime's terminate flag).
type slowQA struct {
	per func(n int) time.Duration

	mu      sync.Mutex
	runs    int // runs started
	stopped int // runs stopped by their context before they finished
}

func fixedCost(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

func (q *slowQA) Answer(ctx context.Context, question string, contexts []string, maxTokens int) ([]models.Span, error) {
	q.mu.Lock()
	n := q.runs
	q.runs++
	q.mu.Unlock()
	select {
	case <-time.After(q.per(n) * time.Duration(len(contexts))):
	case <-ctx.Done():
		q.mu.Lock()
		q.stopped++
		q.mu.Unlock()
		return nil, ctx.Err()
	}
	out := make([]models.Span, len(contexts))
	for i, c := range contexts {
		end := strings.IndexByte(c, ' ')
		out[i] = models.Span{Context: i, Text: c[:end], Start: 0, End: end, Score: 0.9, NoAnswer: 0.05}
	}
	return out, nil
}

func (q *slowQA) Tokens(question string, contexts []string) []int {
	out := make([]int, len(contexts))
	for i := range out {
		out[i] = 100
	}
	return out
}

func (q *slowQA) counts() (runs, stopped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.runs, q.stopped
}

// fourPassages is query() with a fourth passage: the extractive model reads
// the top four (Config.QAContexts).
func fourPassages(lang string) *schemas.QueryReranked {
	q := query()
	q.Lang = lang
	if lang == "en" {
		q.Question = "What can crows do?"
	}
	q.Contexts = append(q.Contexts, schemas.Context{Passage: schemas.Passage{ChunkID: "c4", DocID: "d4", BlockID: "b4",
		BlockIDs: []string{"b4"}, Text: "Crows remember faces for years."}})
	return q
}

func reasonWith(done *schemas.AnswerDone, prefix string) string {
	for _, r := range done.Reasons {
		if strings.HasPrefix(r, prefix) {
			return r
		}
	}
	return ""
}

func TestTheExtractiveModelReadsThePassagesItHasTimeFor(t *testing.T) {
	const deadline = time.Second // the extractive model has 750 ms of it
	cases := []struct {
		name    string
		per     time.Duration
		lang    string
		mode    string
		budget  string // the qa_budget reason begins so; "" for none
		stopped int    // runs stopped at the end of the budget
		lead    string
	}{
		{"on a quiet machine it reads all four passages and answers from the best", 20 * time.Millisecond, "ru",
			schemas.AnswerExtractive, "", 0, ""},
		{"on a busy machine it reads the two that fit, stops before the third, and answers from them", 300 * time.Millisecond, "en",
			schemas.AnswerExtractive, "qa_budget: read 2 of 4 passages within", 0, ""},
		{"when one passage takes longer than the budget it is stopped and the passages answer, in Russian", 3 * time.Second, "ru",
			schemas.AnswerSearchOnly, "qa_budget: read 0 of 4 passages within", 1,
			"Языковая модель не настроена, а компьютер слишком занят"},
		{"when one passage takes longer than the budget it is stopped and the passages answer, in English", 3 * time.Second, "en",
			schemas.AnswerSearchOnly, "qa_budget: read 0 of 4 passages within", 1,
			"No language model is configured, and the machine is too busy for the local model to read the passages in time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qa := &slowQA{per: fixedCost(c.per)}
			var toks tokens
			a := &answer.Answerer{QA: qa, Analyzer: analyzer(t), Emit: toks.emit, Config: answer.Config{LocalDeadline: deadline}}
			q := fourPassages(c.lang)
			start := time.Now()
			done := a.Answer(context.Background(), q)
			took := time.Since(start)
			if took > deadline+500*time.Millisecond {
				t.Fatalf("answered after %s, deadline %s", took, deadline)
			}
			if done.Mode != c.mode {
				t.Fatalf("mode %s, want %s; reasons %q", done.Mode, c.mode, done.Reasons)
			}
			got := reasonWith(done, answer.ReasonQABudget)
			if c.budget == "" && got != "" || c.budget != "" && !strings.HasPrefix(got, c.budget) {
				t.Errorf("budget reason %q, want one beginning %q", got, c.budget)
			}
			if c.budget != "" && !strings.Contains(got, "the answer's deadline is 1s") {
				t.Errorf("budget reason %q does not name the deadline", got)
			}
			if c.stopped > 0 && !strings.Contains(got, "one passage takes over 7") {
				t.Errorf("budget reason %q does not say that a passage was stopped after the budget of about 750ms", got)
			}
			if _, stopped := qa.counts(); stopped != c.stopped {
				t.Errorf("%d runs stopped at the end of the budget, want %d", stopped, c.stopped)
			}
			if c.lead != "" && !strings.HasPrefix(done.Answer, c.lead) {
				t.Errorf("answer %q does not begin %q", done.Answer, c.lead)
			}
			if done.Mode == schemas.AnswerSearchOnly && len(done.Citations) != 3 {
				t.Errorf("%d passages shown, want 3", len(done.Citations))
			}
			if !strings.Contains(strings.Join(done.Reasons, "\n"), answer.ReasonNoProvider) {
				t.Errorf("reasons %q do not say that no provider is configured", done.Reasons)
			}
			if _, ok := done.TimingsMS["qa"]; !ok {
				t.Errorf("timings %v without qa", done.TimingsMS)
			}
			toks.check(t)
			if toks.text() != done.Answer {
				t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
			}
		})
	}
}

func TestTheCostOfAPassageIsRememberedAcrossAnswers(t *testing.T) {
	qa := &slowQA{per: fixedCost(400 * time.Millisecond)}
	a := &answer.Answerer{QA: qa, Analyzer: analyzer(t), Config: answer.Config{LocalDeadline: time.Second}}
	// 750 ms of budget: one passage of 400 ms, and not a second.
	done := a.Answer(context.Background(), fourPassages("en"))
	if r := reasonWith(done, answer.ReasonQABudget); done.Mode != schemas.AnswerExtractive || !strings.HasPrefix(r, "qa_budget: read 1 of 4") {
		t.Fatalf("mode %s, budget reason %q", done.Mode, r)
	}
	runs, _ := qa.counts()

	// With 190 ms of budget the passage measured at 400 ms is not started:
	// the passages answer at once, saying what a passage costs now.
	a.Config.LocalDeadline = 250 * time.Millisecond
	start := time.Now()
	done = a.Answer(context.Background(), fourPassages("ru"))
	took := time.Since(start)
	if now, _ := qa.counts(); now != runs {
		t.Errorf("%d runs started with a budget the last measured cost does not fit", now-runs)
	}
	r := reasonWith(done, answer.ReasonQABudget)
	if done.Mode != schemas.AnswerSearchOnly || took > 150*time.Millisecond ||
		!strings.HasPrefix(r, "qa_budget: read 0 of 4") || !strings.Contains(r, "about 4") || !strings.Contains(r, "ms a passage on this machine now") {
		t.Errorf("mode %s after %s, budget reason %q", done.Mode, took, r)
	}

	// Skipped, the estimate relaxes, so a machine busy a while ago is
	// measured again: the next answer tries a passage.
	done = a.Answer(context.Background(), fourPassages("ru"))
	if now, stopped := qa.counts(); now != runs+1 || stopped != 1 || done.Mode != schemas.AnswerSearchOnly {
		t.Errorf("%d runs, %d stopped after the estimate relaxed, mode %s", now-runs, stopped, done.Mode)
	}
}

func TestAMachineThatGetsBusierMidAnswerReadsFewerPassages(t *testing.T) {
	// The first passage costs 100 ms, the next ones 500 ms: the second is
	// read (the estimate said 100 ms), and the third, measured at 500 ms,
	// is not started with 150 ms left.
	qa := &slowQA{per: func(n int) time.Duration {
		if n == 0 {
			return 100 * time.Millisecond
		}
		return 500 * time.Millisecond
	}}
	a := &answer.Answerer{QA: qa, Analyzer: analyzer(t), Config: answer.Config{LocalDeadline: time.Second}}
	done := a.Answer(context.Background(), fourPassages("ru"))
	runs, stopped := qa.counts()
	if r := reasonWith(done, answer.ReasonQABudget); done.Mode != schemas.AnswerExtractive || runs != 2 || stopped != 0 ||
		!strings.HasPrefix(r, "qa_budget: read 2 of 4") {
		t.Fatalf("mode %s, %d runs (%d stopped), budget reason %q", done.Mode, runs, stopped, r)
	}
}

func TestWithoutAProviderTheAnswerHasTheLocalDeadline(t *testing.T) {
	cases := []struct {
		name     string
		cfg      answer.Config
		deadline time.Duration
	}{
		{"a local deadline of its own, whatever the language model's", answer.Config{Deadline: 30 * time.Second, LocalDeadline: 1500 * time.Millisecond},
			1500 * time.Millisecond},
		{"the default: 5 s, not the language model's 60 s", answer.Config{}, answer.DefaultLocalDeadline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qa := &slowQA{per: fixedCost(time.Hour)} // never finishes on its own
			a := &answer.Answerer{QA: qa, Analyzer: analyzer(t), Config: c.cfg}
			start := time.Now()
			done := a.Answer(context.Background(), fourPassages("en"))
			took := time.Since(start)
			if took > c.deadline+500*time.Millisecond || took < c.deadline/2 {
				t.Fatalf("answered after %s, deadline %s", took, c.deadline)
			}
			if r := reasonWith(done, answer.ReasonQABudget); done.Mode != schemas.AnswerSearchOnly ||
				!strings.Contains(r, "the answer's deadline is "+c.deadline.String()) {
				t.Errorf("mode %s, budget reason %q", done.Mode, r)
			}
		})
	}
}

func TestAfterABusySpellAQuietMachineReadsEveryPassageAgain(t *testing.T) {
	// The first passage ever costs 3 s (the machine is busy), the next ones
	// 20 ms (it is quiet again).
	qa := &slowQA{per: func(n int) time.Duration {
		if n == 0 {
			return 3 * time.Second
		}
		return 20 * time.Millisecond
	}}
	a := &answer.Answerer{QA: qa, Analyzer: analyzer(t), Config: answer.Config{LocalDeadline: 400 * time.Millisecond}}
	start := time.Now()
	done := a.Answer(context.Background(), fourPassages("en"))
	if took := time.Since(start); done.Mode != schemas.AnswerSearchOnly || took > 900*time.Millisecond ||
		!strings.HasPrefix(reasonWith(done, answer.ReasonQABudget), "qa_budget: read 0 of 4") {
		t.Fatalf("busy: mode %s after %s, reasons %q", done.Mode, took, done.Reasons)
	}
	// The passage stopped at 300 ms is tried again, found quick, and the
	// three after it are read too.
	done = a.Answer(context.Background(), fourPassages("en"))
	if runs, stopped := qa.counts(); done.Mode != schemas.AnswerExtractive || runs != 5 || stopped != 1 ||
		reasonWith(done, answer.ReasonQABudget) != "" {
		t.Fatalf("quiet again: mode %s, %d runs (%d stopped), reasons %q", done.Mode, runs, stopped, done.Reasons)
	}
}
