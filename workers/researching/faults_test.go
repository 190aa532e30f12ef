package researching_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

var (
	invTopics = []string{"ravens", "kettles", "sourdough", "bicycles", "glaciers", "violins"}
	invPlaces = []string{"amber", "birch", "cedar", "dune", "elm", "fjord", "grove", "heath", "island", "juniper"}
)

// topicNotes writes perTopic notes on each of topics, each with two
// sentences of its own.
func topicNotes(topics []string, perTopic int) map[string]string {
	notes := map[string]string{}
	for _, tp := range topics {
		for i := 0; i < perTopic; i++ {
			a, b := invPlaces[i%len(invPlaces)], invPlaces[(i+3)%len(invPlaces)]
			notes[fmt.Sprintf("%s-%d.md", tp, i+1)] = fmt.Sprintf("# %s at %s\n\n"+
				"Observed %s near the %s lake behave calmly in winter weather.\n\n"+
				"Notebook %d records that %s from the %s valley need careful handling.\n", tp, a, tp, a, i+1, tp, b)
		}
	}
	return notes
}

func subQuestions(topics []string) []string {
	var out []string
	for _, tp := range topics {
		out = append(out, "What do my notes say about "+tp+"?")
	}
	return out
}

func TestAFailingFactStepIsRetriedThroughTheBusWhileTheOtherTasksFinish(t *testing.T) {
	topics := invTopics[:3]
	failing := "What do my notes say about kettles?"
	var mu sync.Mutex
	var failedDoc string
	// The failing task's first document reads fine; its second fails with
	// 500s for two deliveries (two attempts each: the router retries once).
	var seen sync.Map
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: subQuestions(topics),
		Fault: func(sub, doc string, before int) *llmtest.Fault {
			if sub != failing {
				return nil
			}
			if _, loaded := seen.LoadOrStore("first", doc); !loaded {
				return nil // the first document reads fine
			}
			if first, _ := seen.Load("first"); first == doc {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if failedDoc == "" {
				failedDoc = doc
			}
			if doc == failedDoc && before < 4 {
				f := llmtest.Fail(http.StatusInternalServerError)
				return &f
			}
			return nil
		}})
	e := newInvEnv(t, topicNotes(topics, 3), pf, 30*time.Second)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	e.request("r-faults", "What do my notes say about ravens, kettles and sourdough?", schemas.ResearchBudget{})

	var order []string
	got := map[string]*schemas.ResearchFinding{}
	for len(got) < 3 {
		for id, f := range e.await(1, 30*time.Second) {
			got[id] = f
			order = append(order, f.Question)
		}
	}
	if order[len(order)-1] != failing {
		t.Errorf("findings came in the order %q; want the failing sub-question's last, the others unhindered", order)
	}
	for _, f := range got {
		if f.Status != schemas.TaskDone || len(f.DocsRead) != 3 || f.LLMCalls != 3 || len(f.Facts) == 0 {
			t.Errorf("%s: status %s, docs %v, calls %d, facts %d; want done, 3 documents, 3 calls", f.Question, f.Status, f.DocsRead, f.LLMCalls, len(f.Facts))
		}
		for _, doc := range f.DocsRead {
			answered, asked := pf.FactStepsOf(f.Question, doc)
			want := 1
			if f.Question == failing && doc == failedDoc {
				want = 5 // four 500s (two deliveries, two attempts each), then the answer
			}
			if answered != 1 || asked != want {
				t.Errorf("%s, document %s: answered %d, asked %d; want answered once, asked %d", f.Question, doc, answered, asked, want)
			}
		}
	}
	if failedDoc == "" {
		t.Fatal("no fact step failed")
	}
}

func TestATaskThatFailsForGoodEndsWithAFailedFindingAndItsFactsSoFar(t *testing.T) {
	topics := invTopics[:2]
	failing := "What do my notes say about kettles?"
	var n sync.Map
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: subQuestions(topics),
		Fault: func(sub, doc string, before int) *llmtest.Fault {
			if sub != failing {
				return nil
			}
			if first, loaded := n.LoadOrStore("first", doc); !loaded || first == doc {
				return nil
			}
			f := llmtest.Fail(http.StatusServiceUnavailable)
			return &f
		}})
	e := newInvEnv(t, topicNotes(topics, 3), pf, 30*time.Second)
	e.runPlan()
	e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
	e.request("r-fail", "What do my notes say about ravens and kettles?", schemas.ResearchBudget{})
	got := e.await(2, 30*time.Second)
	for _, f := range got {
		if f.Question != failing {
			if f.Status != schemas.TaskDone {
				t.Errorf("%s: %s", f.Question, f.Status)
			}
			continue
		}
		if f.Status != schemas.TaskFailed || len(f.DocsRead) != 1 || len(f.Facts) == 0 || f.LLMCalls != 1 {
			t.Errorf("failing task: status %s, docs %v, facts %d, calls %d; want failed with the first document's facts", f.Status, f.DocsRead, len(f.Facts), f.LLMCalls)
		}
		if !strings.Contains(strings.Join(f.Reasons, "\n"), "task_failed: after 5 deliveries") || !strings.Contains(strings.Join(f.Reasons, "\n"), "status 503") {
			t.Errorf("reasons %q; want the failure named", f.Reasons)
		}
	}
	dead, err := e.b.DeadLetters(context.Background(), "investigate")
	if err != nil || len(dead) != 0 {
		t.Errorf("dead letters %d (%v); a failed task ends with a finding, not a dead letter", len(dead), err)
	}
}

var errKilled = errors.New("worker killed")

// killedRun runs one research of one sub-question over 8 notes; with kill,
// the first investigate worker dies after 3 documents (its connection
// closed, its message unacked) and a second one takes the task over. It
// returns the finding, the provider's request count and the documents done
// when the second worker first checkpointed.
func killedRun(t *testing.T, kill bool) (*schemas.ResearchFinding, *llmtest.PlanFacts, int, int) {
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: []string{"What do my notes say about glaciers?"}})
	e := newInvEnv(t, topicNotes([]string{"glaciers"}, 8), pf, 2*time.Second)
	e.runPlan()
	resumedAt := 0
	var mu sync.Mutex
	if kill {
		first := bustest.Connect(t, e.b)
		d := e.investigateDeps(first)
		d.AfterDocument = func(task *schemas.ResearchTask, done int) error {
			if done == 3 {
				first.NC.Close() // the process dies: no ack, no nak
				return errKilled
			}
			return nil
		}
		e.runInvestigate(context.Background(), first, d, 1)
		e.request("r-glaciers", "What do my notes say about glaciers?", schemas.ResearchBudget{})
		waitFor(t, func() bool { return first.NC.IsClosed() })
	}
	second := bustest.Connect(t, e.b)
	d := e.investigateDeps(second)
	d.AfterDocument = func(task *schemas.ResearchTask, done int) error {
		mu.Lock()
		if resumedAt == 0 {
			resumedAt = done
		}
		mu.Unlock()
		return nil
	}
	e.runInvestigate(context.Background(), second, d, 1)
	if !kill {
		e.request("r-glaciers", "What do my notes say about glaciers?", schemas.ResearchBudget{})
	}
	f := e.await(1, 30*time.Second)["t1"]
	mu.Lock()
	defer mu.Unlock()
	return f, pf, len(e.srv.Requests()), resumedAt
}

func TestAKilledInvestigateWorkerResumesAtTheNextDocumentWithTheSameProviderCalls(t *testing.T) {
	clean, _, cleanCalls, _ := killedRun(t, false)
	f, pf, calls, resumedAt := killedRun(t, true)
	if clean.Status != schemas.TaskDone || len(clean.DocsRead) != 8 {
		t.Fatalf("clean run: %s with %d documents", clean.Status, len(clean.DocsRead))
	}
	if f.Status != schemas.TaskDone || len(f.DocsRead) != 8 {
		t.Fatalf("killed run: %s with %d documents %v", f.Status, len(f.DocsRead), f.DocsRead)
	}
	if resumedAt != 4 {
		t.Errorf("the second worker's first document was the %dth; want the 4th", resumedAt)
	}
	if calls != cleanCalls || calls != 9 {
		t.Errorf("provider calls: killed run %d, clean run %d; want the same (1 plan + 8 fact steps)", calls, cleanCalls)
	}
	for _, doc := range f.DocsRead {
		if answered, asked := pf.FactStepsOf(f.Question, doc); answered != 1 || asked != 1 {
			t.Errorf("document %s: answered %d, asked %d; want once", doc, answered, asked)
		}
	}
	if f.LLMCalls != 8 || len(f.Facts) != len(clean.Facts) {
		t.Errorf("killed run: %d calls, %d facts; clean run: %d calls, %d facts", f.LLMCalls, len(f.Facts), clean.LLMCalls, len(clean.Facts))
	}
}
