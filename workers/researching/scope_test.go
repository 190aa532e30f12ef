package researching_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// scopedCrowNotes: the field notes are tagged, a rumour about crows is not.
var scopedCrowNotes = map[string]string{
	"field/crows-a.md": "---\ntags: [birds]\ndate: 2024-03-01\n---\n# Крауки и орудия\n\nCrows use sticks as tools to reach food in narrow holes.\n",
	"field/crows-b.md": "---\ntags: [birds/corvids]\ndate: 2024-06-15\n---\n# Field notes on crows\n\nCrows use sticks as tools, as the field guide confirms.\n",
	"gossip/crows.md":  "---\ntags: [rumour]\n---\n# Вороны\n\nCrows use sticks as tools and count to a hundred, a neighbour said.\n",
}

// TestResearchPlansAndInvestigatesWithinItsScope: a research request with a
// tag scope hands the scope to every task, and each task reads only the
// notes in it (the rumour matches the question as well, and is not read).
func TestResearchPlansAndInvestigatesWithinItsScope(t *testing.T) {
	const sub = "How do crows use tools?"
	for _, tc := range []struct {
		name  string
		scope *schemas.Scope
		want  []string // titles of the notes read
	}{
		{"without a scope every crow note is read", nil, []string{"Field notes on crows", "Вороны", "Крауки и орудия"}},
		{"a tag scope reads only the tagged notes", &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"birds"}}}, []string{"Field notes on crows", "Крауки и орудия"}},
		{"an excluded folder leaves the gossip out", &schemas.Scope{Exclude: schemas.ScopeSet{Paths: []string{"gossip"}}}, []string{"Field notes on crows", "Крауки и орудия"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf := llmtest.NewPlanFacts(llmtest.PlanFactsOptions{SubQuestions: []string{sub}})
			e := newInvEnv(t, scopedCrowNotes, pf, 30*time.Second)
			e.runPlan()
			e.runInvestigate(context.Background(), e.b, e.investigateDeps(e.b), 1)
			req := &schemas.ResearchRequested{ResearchID: "r-scope", Question: "What do my notes say about crows and tools?",
				Scope: tc.scope, RequestedAt: time.Now().UTC()}
			if _, err := e.b.Publish(context.Background(), req, "trace-scope"); err != nil {
				t.Fatal(err)
			}
			f := e.await(1, 30*time.Second)["t1"]
			if f == nil || f.Status != schemas.TaskDone {
				t.Fatalf("finding %+v", f)
			}
			titles := map[string]bool{}
			for _, x := range f.Facts {
				for _, c := range x.Citations {
					titles[c.Title] = true
				}
			}
			var got []string
			for ti := range titles {
				got = append(got, ti)
			}
			sort.Strings(got)
			if len(f.DocsRead) != len(tc.want) || !slices.Equal(got, tc.want) {
				t.Fatalf("read %d notes, cited %v; want %v", len(f.DocsRead), got, tc.want)
			}
		})
	}
}
