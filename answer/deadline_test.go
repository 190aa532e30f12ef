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

// slowRouter routes fast to srv with a generous per-request timeout and the
// router's default retries, so only the answer's deadline can stop it.
func slowRouter(t *testing.T, srv *llmtest.Server, timeout time.Duration, roles map[string]llm.RoleSettings) *llm.Router {
	t.Helper()
	r, err := llm.NewRouter(llm.Config{Roles: roles, Providers: []llm.Provider{{Name: "a", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleFast: "m"}, Timeout: timeout}}},
		llm.RouterOptions{BackoffBase: 50 * time.Millisecond, BackoffMax: 100 * time.Millisecond, BreakerDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAProviderThatNeverFinishesGivesTheNextRungWithinTheDeadline(t *testing.T) {
	const deadline = 1500 * time.Millisecond
	cases := []struct {
		name  string
		fault llmtest.Fault
		lang  string
		lead  string
	}{
		// One token every 20 ms: the 1024-token budget would take 20 s.
		{"endless stream", llmtest.Forever(20 * time.Millisecond), "ru", "Языковая модель не ответила вовремя"},
		{"endless stream", llmtest.Forever(20 * time.Millisecond), "en", "The language model did not answer in time"},
		// Silent for longer than the deadline, with retries left.
		{"slower than the deadline", llmtest.Delay(10 * time.Second), "en", "The language model did not answer in time"},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.lang, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetAnswer(unfinished)
			srv.Always(c.fault)
			var toks tokens
			a := &answer.Answerer{Router: slowRouter(t, srv, 30*time.Second, nil), Analyzer: analyzer(t), Emit: toks.emit,
				Config: answer.Config{Deadline: deadline}}
			q := query()
			q.Lang = c.lang
			start := time.Now()
			done := a.Answer(context.Background(), q)
			took := time.Since(start)
			if took > deadline+300*time.Millisecond {
				t.Fatalf("answered after %s, deadline %s", took, deadline)
			}
			if done.Mode != schemas.AnswerSearchOnly || len(done.Citations) != 3 {
				t.Fatalf("mode %s with %d citations, want search_only with 3", done.Mode, len(done.Citations))
			}
			reasons := strings.Join(done.Reasons, "\n")
			if !strings.Contains(reasons, answer.ReasonDeadline+": the language model had not answered within 1.5s") ||
				strings.Contains(reasons, answer.ReasonLLMFailed) {
				t.Fatalf("reasons %q", reasons)
			}
			if !strings.HasPrefix(done.Answer, c.lead) {
				t.Fatalf("answer %q does not start with %q", done.Answer, c.lead)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the provider was asked %d times within the deadline", n)
			}
			verifiedOnly(t, done, q)
			toks.check(t)
			if toks.text() != done.Answer {
				t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
			}
		})
	}
}

func TestRetriesOfASlowProviderStopAtTheDeadline(t *testing.T) {
	srv := llmtest.New(t)
	srv.Always(llmtest.Delay(10 * time.Second))
	// Each request times out after 400 ms and is retried twice: 1.2 s and
	// more of attempts, but the answer has 1 s.
	a := &answer.Answerer{Router: slowRouter(t, srv, 400*time.Millisecond, nil), Analyzer: analyzer(t),
		Config: answer.Config{Deadline: time.Second}}
	start := time.Now()
	done := a.Answer(context.Background(), query())
	if took := time.Since(start); took > 1300*time.Millisecond {
		t.Fatalf("answered after %s", took)
	}
	if done.Mode != schemas.AnswerSearchOnly || !strings.Contains(strings.Join(done.Reasons, "\n"), answer.ReasonDeadline) {
		t.Fatalf("mode %s reasons %q", done.Mode, done.Reasons)
	}
	if n := len(srv.Requests()); n < 2 || n > 3 {
		t.Errorf("%d requests", n)
	}
}

// unfinished never ends its sentence, however often it is streamed: a
// provider that never finishes without repeating a sentence.
const unfinished = "Вороны используют инструменты, и "

func TestALoopingModelIsStoppedAndTheNextRungAnswers(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer(goodAnswer + " ")
	srv.Always(llmtest.Forever(0))
	roles := map[string]llm.RoleSettings{llm.RoleFast: {MaxTokens: 400}}
	var toks tokens
	a := &answer.Answerer{Router: slowRouter(t, srv, 30*time.Second, roles), Analyzer: analyzer(t), Emit: toks.emit,
		Config: answer.Config{Deadline: 5 * time.Second}}
	start := time.Now()
	done := a.Answer(context.Background(), query())
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %s", took)
	}
	reasons := strings.Join(done.Reasons, "\n")
	if !strings.Contains(reasons, answer.ReasonLoop) || strings.Contains(reasons, answer.ReasonDeadline) {
		t.Fatalf("reasons %q", reasons)
	}
	if done.Mode != schemas.AnswerSearchOnly {
		t.Fatalf("mode %s, want search_only: a loop is no answer; answer %q", done.Mode, done.Answer)
	}
	toks.check(t)
	for _, tok := range toks.got {
		if tok.Restart {
			t.Errorf("a restart: the client saw the loop's sentence before it was withdrawn")
		}
	}
	if toks.text() != done.Answer {
		t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
	}
}

func TestAnAnswerCutAtItsBudgetLosesItsUnfinishedSentenceAndSomeConfidence(t *testing.T) {
	whole := "Вороны используют инструменты для добычи пищи [1]. Они живут стаями [1]."
	full := llmtest.New(t)
	full.SetAnswer(whole)
	cut := llmtest.New(t)
	cut.SetAnswer(whole + " Они строят гнёзда из проволоки и стекла [1].")
	cut.Always(llmtest.Forever(0))
	roles := map[string]llm.RoleSettings{llm.RoleFast: {MaxTokens: len(llmtest.Tokens(whole)) + 3}}
	ask := func(srv *llmtest.Server) (*schemas.AnswerDone, *tokens) {
		var toks tokens
		a := &answer.Answerer{Router: slowRouter(t, srv, 30*time.Second, roles), Analyzer: analyzer(t), Emit: toks.emit}
		return a.Answer(context.Background(), query()), &toks
	}
	want, _ := ask(full)
	done, toks := ask(cut)
	if done.Mode != schemas.AnswerLLM || done.Answer != want.Answer {
		t.Fatalf("mode %s, answer %q; want llm %q", done.Mode, done.Answer, want.Answer)
	}
	if !strings.Contains(strings.Join(done.Reasons, "\n"), answer.ReasonCut) || done.Confidence >= want.Confidence {
		t.Errorf("confidence %v (uncut %v), reasons %q", done.Confidence, want.Confidence, done.Reasons)
	}
	toks.check(t)
	if toks.text() != done.Answer {
		t.Errorf("the client shows %q, the answer is %q", toks.text(), done.Answer)
	}
}

func TestWithTheExtractiveModelAnEndlessProviderGivesASpanWithinTheDeadline(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true})
	m, err := models.ManifestFor(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := m.Spec(models.RoleQA)
	qa, err := models.OpenQA(dir, spec, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	srv := llmtest.New(t)
	srv.SetAnswer(unfinished)
	srv.Always(llmtest.Forever(20 * time.Millisecond))
	const deadline = 2 * time.Second
	a := &answer.Answerer{Router: slowRouter(t, srv, 30*time.Second, nil), QA: qa, Analyzer: analyzer(t),
		Config: answer.Config{Deadline: deadline, QAThreshold: 1e-6}}
	start := time.Now()
	done := a.Answer(context.Background(), query())
	if took := time.Since(start); took > deadline+300*time.Millisecond {
		t.Fatalf("answered after %s", took)
	}
	if done.Mode != schemas.AnswerExtractive || len(done.Citations) != 1 || !strings.Contains(strings.Join(done.Reasons, "\n"), answer.ReasonDeadline) {
		t.Fatalf("mode %s reasons %q", done.Mode, done.Reasons)
	}
}

// conversationRouter: fast answers from srv, strategic (follow-ups) from ideas.
func conversationRouter(t *testing.T, srv, ideas *llmtest.Server) *llm.Router {
	t.Helper()
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{
		{Name: "answers", BaseURL: srv.URL(), Models: map[string]string{llm.RoleFast: "m"}, Timeout: 5 * time.Second},
		{Name: "ideas", BaseURL: ideas.URL(), Models: map[string]string{llm.RoleStrategic: "s"}, Timeout: 5 * time.Second},
	}}, llm.RouterOptions{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTheStandaloneQuestionIsAnsweredAndShownInDone(t *testing.T) {
	srv, ideas := llmtest.New(t), llmtest.New(t)
	srv.SetAnswer(goodAnswer)
	a := &answer.Answerer{Router: conversationRouter(t, srv, ideas), Analyzer: analyzer(t)}
	q := query()
	q.Question = "А что они умеют?"
	q.Searched = "Что умеют вороны?"
	q.History = []schemas.Turn{{Role: "user", Text: "Расскажи про воронов"}, {Role: "assistant", Text: "Вороны — умные птицы."}}
	done := a.Respond(context.Background(), q)
	if done.StandaloneQuestion != "Что умеют вороны?" || done.Question != "А что они умеют?" || done.Mode != schemas.AnswerLLM {
		t.Fatalf("question %q standalone %q mode %s", done.Question, done.StandaloneQuestion, done.Mode)
	}
	user := srv.Requests()[0].Body.Messages[1].Content
	if !strings.HasSuffix(user, "Question: Что умеют вороны?") || !strings.Contains(user, "«А что они умеют?»") {
		t.Fatalf("prompt %q", user)
	}

	// Without history the question is answered as asked, and done says nothing more.
	q = query()
	q.Searched = "вороны умеют"
	done = a.Respond(context.Background(), q)
	if done.StandaloneQuestion != "" {
		t.Fatalf("standalone %q without history", done.StandaloneQuestion)
	}
	if user := srv.Requests()[1].Body.Messages[1].Content; !strings.HasSuffix(user, "Question: Что умеют вороны?") || strings.Contains(user, "«") {
		t.Fatalf("prompt %q", user)
	}
}

func TestFollowUpsComeAfterTheAnswerInTheirOwnEvent(t *testing.T) {
	srv, ideas := llmtest.New(t), llmtest.New(t)
	srv.SetAnswer(goodAnswer)
	ideas.SetAnswer("Где живут вороны?\nЧем питаются вороны?\nСколько живут вороны?")
	a := &answer.Answerer{Router: conversationRouter(t, srv, ideas), Analyzer: analyzer(t)}
	q := query()
	q.Searched = "Что умеют вороны?"
	q.History = []schemas.Turn{{Role: "user", Text: "Расскажи про воронов"}}
	done := a.Respond(context.Background(), q)
	if done.Mode != schemas.AnswerLLM || len(done.FollowUps) != 0 || len(ideas.Requests()) != 0 {
		t.Fatalf("Respond asked for follow-ups: mode %s follow-ups %q, %d strategic requests", done.Mode, done.FollowUps, len(ideas.Requests()))
	}
	ev := a.FollowUp(context.Background(), q, done)
	if ev.QueryID != "q1" || ev.Lang != "ru" || len(ev.FollowUps) != 3 || ev.FollowUps[0] != "Где живут вороны?" || len(done.FollowUps) != 3 {
		t.Fatalf("event %+v, done follow-ups %q", ev, done.FollowUps)
	}
	// They follow the question as answered, in its language.
	req := ideas.Requests()[0].Body
	if !strings.Contains(req.Messages[1].Content, "Question: Что умеют вороны?") || !strings.Contains(req.Messages[0].Content, "Russian") {
		t.Fatalf("follow-up request %+v", req.Messages)
	}

	// A lower mode has none, and asks for none.
	srv.Always(llmtest.Fail(500))
	done = a.Respond(context.Background(), query())
	if ev := a.FollowUp(context.Background(), query(), done); done.Mode != schemas.AnswerSearchOnly || ev.FollowUps != nil || len(ideas.Requests()) != 1 {
		t.Fatalf("mode %s follow-ups %q", done.Mode, ev.FollowUps)
	}
}
