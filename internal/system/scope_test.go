package system_test

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// TestAScopedSearchThroughTheBusKeepsToItsScope ingests two Markdown
// folders (notebooks "work" and "home") of Russian and English notes with
// tags and dates in their front matter, and searches through the bus
// (kb.query.submitted -> retrieve -> rerank) with a scope of each kind.
func TestAScopedSearchThroughTheBusKeepsToItsScope(t *testing.T) {
	ctx := context.Background()
	sys := start(t, t.TempDir())
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	writeFile(t, filepath.Join(work, "atlas", "budget.md"), "---\ntags: [work/atlas]\ndate: 2024-03-10\n---\n# Atlas budget\n\nThe Atlas budget is 40k for the quarter.\n")
	writeFile(t, filepath.Join(work, "atlas", "plan.md"), "---\ntags: [work]\ndate: 2024-02-01\n---\n# План\n\nБюджет проекта Атлас утверждён на квартал.\n")
	writeFile(t, filepath.Join(home, "recipes", "borsch.md"), "---\ntags: [recipe]\ndate: 2024-03-31\n---\n# Борщ\n\nБюджет на борщ: свёкла, капуста, картофель.\n")
	writeFile(t, filepath.Join(home, "diary", "budget.md"), "---\ndate: 2023-12-01\n---\n# Holidays\n\nFamily budget for the winter holidays.\n")
	syncPaths(t, sys.Bus, work, home)
	waitIdle(t, sys.Bus)

	cl := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second})
	for i, tc := range []struct {
		name  string
		scope *schemas.Scope
		want  []string // file names of the notes found
	}{
		{"no scope finds every note", nil, []string{"borsch.md", "budget.md", "budget.md", "plan.md"}},
		{"a notebook keeps its folder", &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"home"}}}, []string{"borsch.md", "budget.md"}},
		{"a tag keeps its nested tags", &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"work"}}}, []string{"budget.md", "plan.md"}},
		{"a date range keeps March", &schemas.Scope{Since: "2024-03-01", Until: "2024-03-31"}, []string{"borsch.md", "budget.md"}},
		{"an excluded language keeps the Russian notes", &schemas.Scope{Exclude: schemas.ScopeSet{Langs: []string{"en"}}}, []string{"borsch.md", "plan.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr, err := cl.Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "scope" + string(rune('a'+i)), Question: "budget бюджет",
				Options: schemas.QueryOptions{Scope: tc.scope, Expand: -1}}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			seen := map[string]bool{}
			for _, c := range rr.Contexts {
				if !seen[c.DocID] {
					seen[c.DocID] = true
					got = append(got, filepath.Base(c.Path))
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("notes %v, want %v (reasons %v)", got, tc.want, rr.Reasons)
			}
		})
	}
	rr, err := cl.Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "scope-none", Question: "budget",
		Options: schemas.QueryOptions{Scope: &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Nowhere"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contexts) != 0 || !slices.ContainsFunc(rr.Reasons, func(r string) bool { return strings.HasPrefix(r, retrieval.ReasonScopeEmpty+":") }) {
		t.Fatalf("a scope of no note: %d contexts, reasons %v; want none and scope_empty", len(rr.Contexts), rr.Reasons)
	}
}
