package researching_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/researching"
)

func planTasks(t *testing.T, d researching.PlanDeps, req *schemas.ResearchRequested) []*schemas.ResearchTask {
	t.Helper()
	evs, err := researching.NewPlan(d).Handle(context.Background(), invMsg(t, req))
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var out []*schemas.ResearchTask
	for _, ev := range evs {
		task, ok := ev.(*schemas.ResearchTask)
		if !ok {
			t.Fatalf("plan emitted %T", ev)
		}
		if err := task.Validate(); err != nil {
			t.Errorf("task %s: %v", task.TaskID, err)
		}
		out = append(out, task)
	}
	return out
}

func TestThePlanAsksTheStrategicRoleAndCapsTheSubQuestionsAtTheBudget(t *testing.T) {
	srv := llmtest.New(t)
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{})
	srv.SetResponder(pf.Responder())
	var progress []*schemas.ResearchProgress
	d := researching.PlanDeps{Router: invRouter(t, srv), Progress: func(p *schemas.ResearchProgress) { progress = append(progress, p) }}
	at := time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC)
	tasks := planTasks(t, d, &schemas.ResearchRequested{ResearchID: "r1", Question: "Как работают базы данных в SiYuan?",
		Budget: schemas.ResearchBudget{SubQuestions: 2, WallSeconds: 60}, RequestedAt: at})
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want the budget's 2", len(tasks))
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Body.Model != "strategic-model" || !strings.Contains(reqs[0].Body.Messages[0].Content, "Russian") ||
		!strings.Contains(reqs[0].Body.Messages[0].Content, "2 to 2 sub-questions") || reqs[0].Body.MaxTokens != 1024 {
		t.Fatalf("plan request: %+v", reqs)
	}
	for i, task := range tasks {
		if task.Mode != schemas.ResearchSynthesis || task.Lang != "ru" || task.Of != 2 || task.Index != i || task.Why == "" ||
			!task.Deadline.Equal(at.Add(time.Minute)) || task.Original != "Как работают базы данных в SiYuan?" || task.Budget.DocsPerTask != 8 {
			t.Errorf("task %d: %+v", i, task)
		}
		if !strings.ContainsAny(task.Question, "абвгдежзиклмнопрстуфхцчшщыэюя") {
			t.Errorf("task %d is not in the question's language: %q", i, task.Question)
		}
	}
	if len(progress) != 1 || progress[0].Step != "plan" || progress[0].Tasks != 2 || !strings.Contains(progress[0].Message, tasks[1].Question) {
		t.Errorf("progress %+v", progress)
	}
}

func TestAnUnusablePlanReplyPlansTheQuestionItself(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("I am sorry, I cannot help with that.")
	tasks := planTasks(t, researching.PlanDeps{Router: invRouter(t, srv)},
		&schemas.ResearchRequested{ResearchID: "r2", Question: "What do I know about crows?"})
	if len(tasks) != 1 || tasks[0].Question != "What do I know about crows?" || tasks[0].Mode != schemas.ResearchSynthesis {
		t.Fatalf("tasks %+v; want the question itself", tasks)
	}
	if d := time.Until(tasks[0].Deadline); d < 9*time.Minute || d > 10*time.Minute {
		t.Errorf("deadline in %s; want the default 10 minutes", d)
	}
}

func TestWithoutAProviderOrWhenAskedThePlanIsTheQuestionItselfEvidenceOnly(t *testing.T) {
	srv := llmtest.New(t)
	for _, tc := range []struct {
		name string
		d    researching.PlanDeps
		req  schemas.ResearchRequested
	}{
		{"no provider", researching.PlanDeps{}, schemas.ResearchRequested{ResearchID: "r3", Question: "What about crows?"}},
		{"no_llm asked", researching.PlanDeps{Router: invRouter(t, srv)}, schemas.ResearchRequested{ResearchID: "r4", Question: "What about crows?", NoLLM: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := planTasks(t, tc.d, &tc.req)
			if len(tasks) != 1 || tasks[0].Question != tc.req.Question || tasks[0].Mode != schemas.ResearchEvidenceOnly {
				t.Fatalf("tasks %+v", tasks)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the provider got %d requests; want none", n)
	}
}

func TestEvidenceOnlyTasksKeepTheBestPassagesWithCitationsAndSayWhy(t *testing.T) {
	e := newInvEnv(t, crowNotes, nil, 30*time.Second)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	e.request("r-evidence", "What do crows remember?", schemas.ResearchBudget{})
	f := e.await(1, 30*time.Second)["t1"]
	if f.Status != schemas.TaskDone || f.LLMCalls != 0 || len(f.DocsRead) != 2 || len(f.Facts) != 2 {
		t.Fatalf("finding: %s, %d calls, docs %v, facts %+v", f.Status, f.LLMCalls, f.DocsRead, f.Facts)
	}
	if !strings.HasPrefix(strings.Join(f.Reasons, "\n"), "no_llm_provider: ") {
		t.Errorf("reasons %q; want no_llm_provider first", f.Reasons)
	}
	for _, x := range f.Facts {
		if x.Certainty != "" || len(x.BlockIDs) != 1 || len(x.Citations) != 1 || x.Citations[0].BlockID != x.BlockIDs[0] {
			t.Errorf("fact %+v", x)
			continue
		}
		bt := e.blockText(x.Citations[0].ChunkID, x.BlockIDs[0])
		if !strings.Contains(bt, "remember the faces") || !strings.Contains(bt, strings.Trim(x.Text, "…")) || x.Citations[0].Quote != x.Text {
			t.Errorf("fact %q cites block %q; want the block that matches the question, quoted", x.Text, bt)
		}
	}
}

func TestATaskStopsWithStatusBudgetWhenItsShareOfProviderCallsIsSpent(t *testing.T) {
	topics := invTopics[:2]
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: subQuestions(topics)})
	e := newInvEnv(t, topicNotes(topics, 3), pf, 30*time.Second)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	// 3 calls kept for plan, draft and report; 4 shared by 2 tasks.
	e.request("r-budget", "What do my notes say about ravens and kettles?", schemas.ResearchBudget{LLMCalls: 7})
	for _, f := range e.await(2, 30*time.Second) {
		if f.Status != schemas.TaskBudget || f.LLMCalls != 2 || len(f.DocsRead) != 2 ||
			!strings.Contains(strings.Join(f.Reasons, "\n"), "llm_call_budget: ") {
			t.Errorf("%s: %s, %d calls, docs %v, reasons %q; want budget after 2 calls", f.Question, f.Status, f.LLMCalls, f.DocsRead, f.Reasons)
		}
	}
}

func TestATaskPastTheResearchsDeadlineReadsNothingMore(t *testing.T) {
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: subQuestions(invTopics[:1])})
	e := newInvEnv(t, topicNotes(invTopics[:1], 3), pf, 30*time.Second)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	req := &schemas.ResearchRequested{ResearchID: "r-late", Question: "What do my notes say about ravens?",
		Budget: schemas.ResearchBudget{WallSeconds: 1}, RequestedAt: time.Now().Add(-time.Hour)}
	if _, err := e.b.Publish(context.Background(), req, "trace-late"); err != nil {
		t.Fatal(err)
	}
	f := e.await(1, 30*time.Second)["t1"]
	if f.Status != schemas.TaskBudget || len(f.DocsRead) != 0 || pf.FactSteps() != 0 || !strings.Contains(strings.Join(f.Reasons, "\n"), "wall_budget: ") {
		t.Errorf("finding %s, docs %v, fact steps %d, reasons %q; want budget before any document", f.Status, f.DocsRead, pf.FactSteps(), f.Reasons)
	}
}

func TestAProviderWithStructuredOutputIsAskedForThePlanSchema(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetResponder(llmtest.PlanFactsResponder(llmtest.PlanFactsOptions{}))
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(), StructuredOutput: "json_schema",
		Models: map[string]string{llm.RoleStrategic: "strategic-model"}}}}, llm.RouterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := planTasks(t, researching.PlanDeps{Router: r}, &schemas.ResearchRequested{ResearchID: "r5", Question: "What do I know about crows?"})
	reqs := srv.Requests()
	if len(tasks) != 3 || len(reqs) != 1 || reqs[0].Body.ResponseFormat == nil || reqs[0].Body.ResponseFormat.JSONSchema == nil ||
		reqs[0].Body.ResponseFormat.JSONSchema.Name != "research_plan" {
		t.Fatalf("%d tasks; requests %+v", len(tasks), reqs)
	}
}
