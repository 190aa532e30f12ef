package researching_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	rs "github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/researching"
)

// crowNotes: two notes that state one fact alike and one fact the other
// way round.
var crowNotes = map[string]string{
	"crows-a.md": "---\ndate: 2024-03-01\n---\n# Crows and tools\n\nCrows use sticks as tools to reach food in narrow holes.\n\nCrows remember the faces of people who threatened them.\n",
	"crows-b.md": "---\ndate: 2024-06-15\n---\n# Field notes on crows\n\nCrows use sticks as tools to reach food in narrow holes, as the field guide confirms.\n\nCrows do not remember the faces of people who threatened them.\n",
	"kettle.md":  "# Kettle\n\nDescale the kettle with vinegar once a month.\n",
}

func TestFindingsKeepVerifiedFactsAndBothSidesOfAContradictionAndRaiseConfirmedOnes(t *testing.T) {
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
	kept, ok := got["f2"]
	if !ok || kept.Text != second.Text || kept.Certainty != second.Certainty || strings.Join(kept.BlockIDs, ",") != strings.Join(second.BlockIDs, ",") {
		t.Errorf("the contradicted fact f2 (%+v) is not kept as it was: %+v", second, f.Facts)
	}
	if len(kept.ContradictedBy) != 1 {
		t.Fatalf("f2 contradicted by %q; want the second note's fact", kept.ContradictedBy)
	}
	other := got[kept.ContradictedBy[0]]
	if !strings.Contains(other.Text, "do not remember") || len(other.Citations) != 1 || other.Citations[0].DocID == kept.Citations[0].DocID {
		t.Errorf("f2's other side %+v; want the second note's fact on its own block", other)
	}
	if kept.Updated != "2024-03-01T00:00:00Z" || other.Updated != "2024-06-15T00:00:00Z" {
		t.Errorf("f2 dated %q, its other side %q; want each note's front matter date", kept.Updated, other.Updated)
	}
	ds := rs.Disagreements(f.Facts)
	if len(ds) != 1 || ds[0].Older.ID != "f2" || ds[0].Newer.ID != other.ID || !ds[0].Ordered {
		t.Errorf("disagreements %+v; want f2 older than %s", ds, other.ID)
	}
	upd, ok := got["f1"]
	if !ok || upd.Certainty != schemas.CertaintyHigh {
		t.Errorf("f1 = %+v; want its certainty raised from medium to high by the second note", upd)
	}
	if len(upd.Citations) != 2 || upd.Citations[0].DocID == upd.Citations[1].DocID || upd.Updated != "2024-06-15T00:00:00Z" {
		t.Errorf("f1 cites %+v, dated %q; want one block of each note, dated by the later one", upd.Citations, upd.Updated)
	}
	if len(f.Facts) != 3 {
		t.Errorf("facts %+v; want f1, the contradicted f2 and the contradicting fact", f.Facts)
	}
	// Two invented facts (one per note); the contradicted one is kept.
	if f.Dropped != 2 {
		t.Errorf("dropped %d, want 2 (two unsupported); reasons %q", f.Dropped, f.Reasons)
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
	if !strings.Contains(f.Summary, "[1") || len(f.Citations) != 4 {
		t.Errorf("summary %q with %d citations; want a cited summary", f.Summary, len(f.Citations))
	}

	plan := e.progressOf("plan")
	if len(plan) != 1 || plan[0].Tasks != 1 || !strings.Contains(plan[0].Message, sub) {
		t.Errorf("plan progress %+v", plan)
	}
	waitFor(t, func() bool { return len(e.progressOf("task")) >= 3 })
	steps := e.progressOf("task")
	if steps[0].DocsRead != 1 || steps[0].DocsTotal != 2 || steps[1].DocsRead != 2 || !steps[len(steps)-1].Done || steps[len(steps)-1].FactsKept != 3 {
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

var _ = researching.TaskKey
