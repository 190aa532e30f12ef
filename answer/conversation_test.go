package answer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// roles gives each role its own fake provider, so each has its own answer.
func roles(t *testing.T, fast, strategic *llmtest.Server) *llm.Router {
	t.Helper()
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{
		{Name: "fast", BaseURL: fast.URL(), Models: map[string]string{llm.RoleFast: "f"}},
		{Name: "strategic", BaseURL: strategic.URL(), Models: map[string]string{llm.RoleStrategic: "s"}},
	}}, llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAnLLMAnswerComesWithFollowUpQuestions(t *testing.T) {
	fast, strategic := llmtest.New(t), llmtest.New(t)
	fast.SetAnswer("Вороны используют инструменты для добычи пищи [1].")
	strategic.SetAnswer("1. Где живут вороны?\n2. Чем питаются вороны?\n- Насколько умны вороны?\n")
	a := &answer.Answerer{Router: roles(t, fast, strategic), Analyzer: analyzer(t)}
	done := a.Answer(context.Background(), query())
	if done.Mode != schemas.AnswerLLM || len(done.FollowUps) != 3 || done.FollowUps[0] != "Где живут вороны?" {
		t.Fatalf("answer %s, follow-ups %q", done.Mode, done.FollowUps)
	}
	// The strategic provider saw the question and the verified answer.
	req := strategic.Requests()[0].Body.Messages[1].Content
	if !strings.Contains(req, "Что умеют вороны?") || !strings.Contains(req, "[1]") {
		t.Errorf("follow-up request = %q", req)
	}
}

func TestAFollowUpQuestionIsReformulatedFromTheHistory(t *testing.T) {
	fast, strategic := llmtest.New(t), llmtest.New(t)
	strategic.SetAnswer("«где живут вороны»")
	r := roles(t, fast, strategic)
	ctx := context.Background()
	hist := []schemas.Turn{{Role: "user", Text: "Что умеют вороны?"}, {Role: "assistant", Text: "Они используют инструменты."}}
	q, err := answer.Reformulate(ctx, r, "а где они живут?", hist)
	if err != nil || q != "где живут вороны" {
		t.Fatalf("reformulated %q, %v", q, err)
	}
	if q, err := answer.Reformulate(ctx, r, "где живут вороны?", nil); err != nil || q != "где живут вороны?" || len(strategic.Requests()) != 1 {
		t.Errorf("without history: %q, %v (%d requests)", q, err, len(strategic.Requests()))
	}
	strategic.Always(llmtest.Fail(500))
	if q, err := answer.Reformulate(ctx, r, "а где они живут?", hist); err == nil || q != "а где они живут?" {
		t.Errorf("a failing provider: %q, %v; want the question itself and the error", q, err)
	}
}

func TestALongPromptGoesToTheLongContextModel(t *testing.T) {
	fast, long := llmtest.New(t), llmtest.New(t)
	for _, s := range []*llmtest.Server{fast, long} {
		s.SetAnswer("Вороны используют инструменты для добычи пищи [1].")
	}
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{
		{Name: "fast", BaseURL: fast.URL(), Models: map[string]string{llm.RoleFast: "f"}},
		{Name: "long", BaseURL: long.URL(), Models: map[string]string{llm.RoleLongContext: "l"}},
	}}, llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a := &answer.Answerer{Router: r, Analyzer: analyzer(t), Config: answer.Config{LongPrompt: 800}}
	q := query()
	if done := a.Answer(context.Background(), q); done.Mode != schemas.AnswerLLM || done.Provider != "fast" {
		t.Fatalf("a short prompt: %+v", done)
	}
	q.Contexts[1].Text += strings.Repeat(" Помидорам нужно солнце и вода.", 200)
	if done := a.Answer(context.Background(), q); done.Mode != schemas.AnswerLLM || done.Provider != "long" {
		t.Fatalf("a long prompt: %+v", done)
	}
	// Without a long_context provider, a long prompt stays with fast.
	only, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{
		{Name: "fast", BaseURL: fast.URL(), Models: map[string]string{llm.RoleFast: "f"}}}}, llm.RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Router = only
	if done := a.Answer(context.Background(), q); done.Mode != schemas.AnswerLLM || done.Provider != "fast" {
		t.Fatalf("a long prompt without a long_context model: %+v", done)
	}
}
