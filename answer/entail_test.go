package answer_test

import (
	"context"
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

// entailer scores by a rule: the claims holding a word are not entailed.
type entailer struct {
	not   string
	calls int
}

func (e *entailer) Entail(_ context.Context, premise, hypothesis string) (float64, error) {
	e.calls++
	if strings.Contains(hypothesis, e.not) {
		return 0.1, nil
	}
	return 0.9, nil
}

func TestAnEntailmentModelMustFindEveryClaimStatedByItsBlock(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("В заметке: «вороны используют инструменты для добычи пищи» [1]. В заметке: «они живут стаями» [1].")
	for _, tc := range []struct {
		name string
		not  string
		text string
		mode string
	}{
		{"entailed claims are kept", "никогда", "В заметке: «вороны используют инструменты для добычи пищи» [1]. В заметке: «они живут стаями» [1].", schemas.AnswerLLM},
		{"a claim the model does not find stated is removed", "стаями", "В заметке: «вороны используют инструменты для добычи пищи» [1].", schemas.AnswerLLM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &entailer{not: tc.not}
			a := &answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t), Entailer: e}
			done := a.Answer(context.Background(), query())
			if done.Mode != tc.mode || done.Answer != tc.text || e.calls == 0 {
				t.Fatalf("mode %s answer %q (%d entailment calls), reasons %q", done.Mode, done.Answer, e.calls, done.Reasons)
			}
			if tc.not == "стаями" && !strings.Contains(strings.Join(done.Reasons, "\n"), answer.DropNotEntailed) {
				t.Errorf("reasons %q do not say not_entailed", done.Reasons)
			}
		})
	}
}

// The generated model of the real signature runs through the same path:
// a threshold no probability reaches removes every claim, none keeps them.
func TestTheGeneratedNLIModelRunsTheEntailmentPath(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NLI: true, NoReranker: true, NoQA: true})
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	nli, ok := models.InstalledNLI(dir, m, models.Options{}, time.Minute)
	if !ok {
		t.Fatal("the generated NLI model is not installed")
	}
	defer nli.Close()
	srv := llmtest.New(t)
	srv.SetAnswer("В заметке: «вороны используют инструменты для добычи пищи» [1].")
	for _, tc := range []struct {
		min  float64
		mode string
	}{{1e-9, schemas.AnswerLLM}, {1.01, schemas.AnswerSearchOnly}} {
		a := &answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t), Entailer: answer.NLIEntailer{Model: nli},
			Config: answer.Config{MinEntailment: tc.min}}
		done := a.Answer(context.Background(), query())
		if done.Mode != tc.mode {
			t.Errorf("threshold %v: mode %s, want %s; reasons %q", tc.min, done.Mode, tc.mode, done.Reasons)
		}
	}
	if loaded, _ := nli.Loaded(); !loaded {
		t.Error("the model was never loaded")
	}
}

// Strict verification asks the strategic role about every claim.
func TestStrictVerificationAsksTheStrategicRoleAboutEachClaim(t *testing.T) {
	fast, judge := llmtest.New(t), llmtest.New(t)
	fast.SetAnswer("В заметке: «вороны используют инструменты для добычи пищи» [1]. В заметке: «они живут стаями» [1].")
	judge.SetResponder(func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
		claim := body.Messages[len(body.Messages)-1].Content
		claim = claim[strings.Index(claim, "<claim>"):]
		if strings.Contains(claim, "стаями") {
			return "UNSUPPORTED", nil, true
		}
		return "SUPPORTED", nil, true
	})
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{
		{Name: "fast", BaseURL: fast.URL(), Models: map[string]string{llm.RoleFast: "f"}},
		{Name: "judge", BaseURL: judge.URL(), Models: map[string]string{llm.RoleStrategic: "j"}},
	}}, llm.RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := &answer.Answerer{Router: r, Analyzer: analyzer(t), Config: answer.Config{Verify: answer.VerifyStrict}}
	done := a.Answer(context.Background(), query())
	if done.Mode != schemas.AnswerLLM || done.Answer != "В заметке: «вороны используют инструменты для добычи пищи» [1]." {
		t.Fatalf("mode %s answer %q reasons %q", done.Mode, done.Answer, done.Reasons)
	}
	if n := len(judge.Requests()); n < 2 {
		t.Errorf("the judge was asked %d times, want once per claim", n)
	}
	// Without strict, the judge is not asked.
	before := len(judge.Requests())
	(&answer.Answerer{Router: r, Analyzer: analyzer(t)}).Respond(context.Background(), query())
	if len(judge.Requests()) != before {
		t.Error("standard verification asked the judge")
	}
}
