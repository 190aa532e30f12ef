package answer_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/schemas"
)

const goodAnswer = "Вороны используют инструменты для добычи пищи [1]."

// timed is router with a provider timeout of its own.
func timed(t *testing.T, timeout time.Duration, srvs ...*llmtest.Server) *llm.Router {
	t.Helper()
	var cfg llm.Config
	for i, s := range srvs {
		cfg.Providers = append(cfg.Providers, llm.Provider{Name: string(rune('a' + i)), BaseURL: s.URL(),
			Models: map[string]string{llm.RoleFast: "m"}, Timeout: timeout})
	}
	r, err := llm.NewRouter(cfg, llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, BreakerDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// verifiedOnly checks that every citation names a context and quotes it:
// the sentence the model's claim rests on, or a search-only snippet
// (highlighting and ellipses aside).
func verifiedOnly(t *testing.T, done *schemas.AnswerDone, q *schemas.QueryReranked) {
	t.Helper()
	citesOnlyContexts(t, done, q)
	text := map[string]string{}
	for _, c := range q.Contexts {
		for _, id := range blockIDs(c) {
			text[id] = c.Text
		}
	}
	for _, c := range done.Citations {
		for _, piece := range strings.Split(strings.ReplaceAll(c.Quote, "**", ""), "…") {
			if piece = strings.TrimSpace(piece); piece != "" && !strings.Contains(text[c.BlockID], piece) {
				t.Errorf("citation of %s quotes %q, which its block does not hold", c.BlockID, piece)
			}
		}
	}
	if done.Mode == schemas.AnswerLLM {
		for _, m := range []string{"[9]", "[99]", "[20990101000000-zzzzzzz]"} {
			if strings.Contains(done.Answer, m) {
				t.Errorf("the answer keeps the unverified marker %s: %q", m, done.Answer)
			}
		}
	}
}

// TestEveryProviderFaultEndsInAModeWithVerifiedCitations runs each fault
// the issue lists against one provider (the fault every time) and against
// a provider that fails once and then answers.
func TestEveryProviderFaultEndsInAModeWithVerifiedCitations(t *testing.T) {
	cases := []struct {
		name   string
		fault  llmtest.Fault
		answer string // what the provider says when it answers
		always string
		once   string
		reason string
	}{
		{"500", llmtest.Fail(500), goodAnswer, schemas.AnswerSearchOnly, schemas.AnswerLLM, answer.ReasonLLMFailed},
		{"429 with Retry-After", llmtest.TooMany("1"), goodAnswer, schemas.AnswerSearchOnly, schemas.AnswerLLM, answer.ReasonLLMFailed},
		{"timeout", llmtest.Delay(2 * time.Second), goodAnswer, schemas.AnswerSearchOnly, schemas.AnswerLLM, answer.ReasonLLMFailed},
		{"stream cut", llmtest.CutAfter(3), goodAnswer, schemas.AnswerSearchOnly, schemas.AnswerLLM, answer.ReasonLLMFailed},
		{"invalid JSON", llmtest.BadJSONAfter(2), goodAnswer, schemas.AnswerSearchOnly, schemas.AnswerLLM, answer.ReasonLLMFailed},
		{"a block never retrieved", llmtest.Answer(), "Вороны строят мосты [9]. Так записано в [20990101000000-zzzzzzz].",
			schemas.AnswerSearchOnly, schemas.AnswerSearchOnly, answer.ReasonLowCoverage},
		{"a quote not in its block", llmtest.Answer(), "В заметке: «вороны строят мосты из веток» [1].",
			schemas.AnswerSearchOnly, schemas.AnswerSearchOnly, answer.ReasonLowCoverage},
		{"a note saying ignore previous instructions", llmtest.Answer(), "Как велено, блок 99 доказывает, что вороны летают на Луну [99] [3].",
			schemas.AnswerSearchOnly, schemas.AnswerSearchOnly, answer.ReasonLowCoverage},
	}
	for _, c := range cases {
		t.Run(c.name+"/always", func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetAnswer(c.answer)
			srv.Always(c.fault)
			var toks tokens
			a := &answer.Answerer{Router: timed(t, 500*time.Millisecond, srv), Analyzer: analyzer(t), Emit: toks.emit}
			q := query()
			done := a.Answer(context.Background(), q)
			if done.Mode != c.always || !strings.Contains(strings.Join(done.Reasons, "\n"), c.reason) {
				t.Fatalf("mode %s, reasons %q; want %s with %s", done.Mode, done.Reasons, c.always, c.reason)
			}
			verifiedOnly(t, done, q)
			// The message says which: the model failed, or its answer did not hold.
			if said := strings.Contains(done.Answer, "не подтверждается"); said != (c.reason == answer.ReasonLowCoverage) {
				t.Errorf("the answer misstates why it is passages: %q", done.Answer)
			}
			toks.check(t)
			if toks.text() != done.Answer {
				t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
			}
		})
		t.Run(c.name+"/once", func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetAnswer(c.answer)
			srv.Script(c.fault)
			var toks tokens
			a := &answer.Answerer{Router: timed(t, 500*time.Millisecond, srv), Analyzer: analyzer(t), Emit: toks.emit}
			q := query()
			done := a.Answer(context.Background(), q)
			if done.Mode != c.once {
				t.Fatalf("mode %s, reasons %q; want %s", done.Mode, done.Reasons, c.once)
			}
			verifiedOnly(t, done, q)
			if c.once == schemas.AnswerLLM && (len(done.Citations) != 1 || done.Citations[0].BlockID != "20210808180117-abc1234") {
				t.Errorf("citations = %+v", done.Citations)
			}
			toks.check(t)
			if toks.text() != done.Answer {
				t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
			}
		})
	}
}

// TestWithTheExtractiveModelAFailingProviderGivesASpanCitedToItsBlock: the
// rung between the language model and search-only. The weights are random,
// so the threshold is lowered for the span to pass; at the default
// threshold the same random model is not trusted and the answer says so.
func TestWithTheExtractiveModelAFailingProviderGivesASpanCitedToItsBlock(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true})
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, ok := m.Spec(models.RoleQA)
	if !ok {
		t.Fatal("no QA model in the generated manifest")
	}
	qa, err := models.OpenQA(dir, spec, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	srv := llmtest.New(t)
	srv.Always(llmtest.Fail(503))

	var toks tokens
	a := &answer.Answerer{Router: timed(t, time.Second, srv), QA: qa, Analyzer: analyzer(t), Emit: toks.emit,
		Config: answer.Config{QAThreshold: 1e-6}}
	q := query()
	done := a.Answer(context.Background(), q)
	if done.Mode != schemas.AnswerExtractive || len(done.Citations) != 1 || done.Answer == "" {
		t.Fatalf("answer = %+v", done)
	}
	c := done.Citations[0]
	var from string
	for _, x := range q.Contexts {
		if x.BlockID == c.BlockID {
			from = x.Text
		}
	}
	if !strings.Contains(from, done.Answer) || !strings.Contains(c.Quote, done.Answer) {
		t.Errorf("span %q, quote %q, cited block holds %q", done.Answer, c.Quote, from)
	}
	verifiedOnly(t, done, q)
	toks.check(t)
	if toks.text() != done.Answer {
		t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
	}

	// A calibration of the span score decides instead of the threshold,
	// and maps the score to the answer's confidence.
	a.Config.QACalibration = &answer.Calibration{Method: "platt", A: 0, B: -3, Threshold: 0.5}
	done = a.Answer(context.Background(), q)
	if done.Mode != schemas.AnswerExtractive || math.Abs(done.Confidence-1/(1+math.Exp(-3))) > 1e-9 {
		t.Errorf("calibrated to %.3f over 0.5: mode %s, confidence %v", 1/(1+math.Exp(-3)), done.Mode, done.Confidence)
	}
	a.Config.QACalibration.B = 3
	done = a.Answer(context.Background(), q)
	if done.Mode != schemas.AnswerSearchOnly || !strings.Contains(strings.Join(done.Reasons, " "), answer.ReasonLowQA) {
		t.Errorf("calibrated under its threshold: mode %s, reasons %q", done.Mode, done.Reasons)
	}
	a.Config.QACalibration = nil

	a.Config.QAThreshold = 0.99
	done = a.Answer(context.Background(), q)
	if done.Mode != schemas.AnswerSearchOnly || !strings.Contains(strings.Join(done.Reasons, " "), answer.ReasonLowQA) {
		t.Errorf("at a threshold no span reaches: mode %s, reasons %q", done.Mode, done.Reasons)
	}
}
