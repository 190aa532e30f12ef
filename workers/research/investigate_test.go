package research_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	research "github.com/exocortex/exocortex/workers/research"
)

// crowNotes: two notes that state one fact alike and one fact the other
// way round.
var crowNotes = map[string]string{
	"crows-a.md": "# Crows and tools\n\nCrows use sticks as tools to reach food in narrow holes.\n\nCrows remember the faces of people who threatened them.\n",
	"crows-b.md": "# Field notes on crows\n\nCrows use sticks as tools to reach food in narrow holes, as the field guide confirms.\n\nCrows do not remember the faces of people who threatened them.\n",
	"kettle.md":  "# Kettle\n\nDescale the kettle with vinegar once a month.\n",
}

func TestFindingsKeepOnlyVerifiedFactsDropContradictedOnesAndRaiseConfirmedOnes(t *testing.T) {
	const sub = "How do crows use tools and what do crows remember?"
	pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: []string{sub}, Invent: true, Prose: true})
	e := newInvEnv(t, crowNotes, pf, 30*time.Second)
	e.runPlan()
	d := e.investigateDeps(e.b)
	var mu sync.Mutex
	afterFirst := map[string]schemas.Fact{}
	d.AfterDocument = func(task *schemas.ResearchTask, done int) error {
		if done == 1 {
			mu.Lock()
			for _, f := range e.checkpointFacts(task.ResearchID, task.TaskID) {
				afterFirst[f.ID] = f
			}
			mu.Unlock()
		}
		return nil
	}
	e.runInvestigate(context.Background(), e.b, d, 1)
	e.request("r-crows", "What have I learned about crows?", schemas.ResearchBudget{})

	f := e.await(1, 30*time.Second)["t1"]
	if f == nil {
		t.Fatal("no finding for t1")
	}
	if f.Status != schemas.TaskDone || f.Question != sub || f.Of != 1 {
		t.Fatalf("finding: status %q, question %q, of %d", f.Status, f.Question, f.Of)
	}
	if len(f.DocsRead) != 2 || f.LLMCalls != 2 || pf.FactSteps() != 2 {
		t.Fatalf("read %v with %d calls (the fake answered %d fact steps); want the two crow notes, one call each", f.DocsRead, f.LLMCalls, pf.FactSteps())
	}
	mu.Lock()
	defer mu.Unlock()
	first, ok1 := afterFirst["f1"]
	second, ok2 := afterFirst["f2"]
	if !ok1 || !ok2 || first.Certainty != schemas.CertaintyMedium {
		t.Fatalf("after the first note: %+v; want f1 (medium) and f2", afterFirst)
	}
	got := map[string]schemas.Fact{}
	for _, x := range f.Facts {
		got[x.ID] = x
	}
	if _, ok := got["f2"]; ok {
		t.Errorf("the contradicted fact f2 (%q) is still there: %+v", second.Text, f.Facts)
	}
	upd, ok := got["f1"]
	if !ok || upd.Certainty != schemas.CertaintyHigh {
		t.Errorf("f1 = %+v; want its certainty raised from medium to high by the second note", upd)
	}
	if len(upd.Citations) != 2 || upd.Citations[0].DocID == upd.Citations[1].DocID {
		t.Errorf("f1 cites %+v; want one block of each note", upd.Citations)
	}
	if len(f.Facts) != 2 {
		t.Errorf("facts %+v; want f1 and the contradicting fact", f.Facts)
	}
	// Two invented facts (one per note) and the contradicted one.
	if f.Dropped != 3 {
		t.Errorf("dropped %d, want 3 (two unsupported, one contradicted); reasons %q", f.Dropped, f.Reasons)
	}
	for _, x := range f.Facts {
		if strings.Contains(x.Text, "moon") {
			t.Errorf("an unsupported fact was kept: %+v", x)
		}
		if len(x.Citations) == 0 || len(x.Citations) != len(x.BlockIDs) {
			t.Errorf("fact %s: blocks %v, citations %d", x.ID, x.BlockIDs, len(x.Citations))
		}
		for _, c := range x.Citations {
			bt := strings.ToLower(e.blockText(c.ChunkID, c.BlockID))
			claim := strings.ToLower(strings.TrimRight(x.Text, "."))
			if i := strings.Index(claim, ", as the"); i > 0 {
				claim = claim[:i]
			}
			if !strings.Contains(bt, strings.TrimPrefix(claim, "crows ")) || c.Quote == "" || c.Link == "" && c.Title == "" {
				t.Errorf("fact %s %q cites block %s %q, which does not hold it", x.ID, x.Text, c.BlockID, bt)
			}
		}
	}
	if !strings.Contains(f.Summary, "[1") || len(f.Citations) != 3 {
		t.Errorf("summary %q with %d citations; want a cited summary", f.Summary, len(f.Citations))
	}

	plan := e.progressOf("plan")
	if len(plan) != 1 || plan[0].Tasks != 1 || !strings.Contains(plan[0].Message, sub) {
		t.Errorf("plan progress %+v", plan)
	}
	waitFor(t, func() bool { return len(e.progressOf("task")) >= 3 })
	steps := e.progressOf("task")
	if steps[0].DocsRead != 1 || steps[0].DocsTotal != 2 || steps[1].DocsRead != 2 || !steps[len(steps)-1].Done || steps[len(steps)-1].FactsKept != 2 {
		var s []string
		for _, p := range steps {
			s = append(s, fmt.Sprintf("%+v", *p))
		}
		t.Errorf("task progress:\n%s", strings.Join(s, "\n"))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 5s")
}

var _ = research.TaskKey
