package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
)

// startScopedEnv runs every stage (no models, no language model: answers
// are search-only) over two folders, each a notebook, of tagged and dated
// notes in English and Russian.
func startScopedEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	sys, err := system.Start(context.Background(), system.Config{DataDir: dir, Listen: "127.0.0.1:-1", NoModels: true, Workers: 2, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	work, home := filepath.Join(t.TempDir(), "Work"), filepath.Join(t.TempDir(), "Home")
	for path, text := range map[string]string{
		filepath.Join(work, "atlas.md"):  "---\ntags: [atlas, budget]\ndate: 2026-03-02\n---\n# Atlas\n\nThe Atlas budget is 40k for the quarter.\n",
		filepath.Join(work, "atlas2.md"): "---\ntags: [atlas]\ndate: 2026-11-10\n---\n# Atlas later\n\nThe Atlas budget was raised to 55k.\n",
		filepath.Join(home, "home.md"):   "---\ntags: [budget]\ndate: 2026-11-20\n---\n# Home\n\nThe home budget for groceries is 600.\n",
		filepath.Join(home, "борщ.md"):   "---\ntags: [рецепт]\ndate: 2025-12-01\n---\n# Борщ\n\nБорщ варят со свёклой и капустой.\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, text)
	}
	gatewaytest.SyncPaths(t, sys.Bus, work, home)
	gatewaytest.WaitIdle(t, sys.Bus)
	bb := gateway.NewBusBackend(sys.Bus, gateway.BusOptions{AskTimeout: 30 * time.Second})
	return &env{sys: sys, dataDir: dir, backend: bb}
}

func TestSearchFacetsAndTheScopeListingOverHTTP(t *testing.T) {
	e := startScopedEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)

	var res gateway.SearchResult
	decodeAs(t, post(t, hs.URL+"/v1/search", `{"query":"budget","k":1,"facets":true}`), http.StatusOK, &res)
	if len(res.Results) != 1 || res.Facets == nil {
		t.Fatalf("search with facets: %+v", res)
	}
	f := res.Facets
	if f.Of != schemas.FacetsOfCandidates || f.Docs != 3 || len(f.Notebooks) != 2 || f.Notebooks[0].Name != "Work" ||
		f.Notebooks[0].Count != 2 || f.Notebooks[1].Name != "Home" || f.Notebooks[1].Count != 1 {
		t.Errorf("facets count the candidates' documents, not the k=1 hit: %+v", f)
	}
	if len(f.Tags) == 0 || f.Tags[0] != (schemas.TagCount{Tag: "atlas", Count: 2}) && f.Tags[0] != (schemas.TagCount{Tag: "budget", Count: 2}) {
		t.Errorf("tags %+v", f.Tags)
	}
	if len(f.Months) != 2 || f.Months[0] != (schemas.MonthCount{Month: "2026-11", Count: 2}) || f.Months[1] != (schemas.MonthCount{Month: "2026-03", Count: 1}) {
		t.Errorf("months %+v", f.Months)
	}
	if res.Results[0].Updated == "" {
		t.Errorf("the hit has no date: %+v", res.Results[0])
	}
	var plain map[string]any
	decodeAs(t, post(t, hs.URL+"/v1/search", `{"query":"budget","k":1}`), http.StatusOK, &plain)
	if _, ok := plain["facets"]; ok {
		t.Errorf("facets without asking: %v", plain["facets"])
	}

	var ru gateway.SearchResult
	decodeAs(t, post(t, hs.URL+"/v1/search", `{"query":"борщ","facets":true}`), http.StatusOK, &ru)
	if ru.Facets == nil || ru.Facets.Docs != 1 || len(ru.Facets.Tags) != 1 || ru.Facets.Tags[0].Tag != "рецепт" ||
		ru.Facets.Notebooks[0].Name != "Home" || ru.Facets.Months[0].Month != "2025-12" {
		t.Errorf("Russian facets %+v", ru.Facets)
	}

	var l schemas.ScopeListing
	decodeAs(t, get(t, hs.URL+"/v1/scopes"), http.StatusOK, &l)
	if l.Docs != 4 || len(l.Notebooks) != 2 || l.Notebooks[0].Count != 2 || l.Notebooks[0].ID == "" || len(l.Tags) != 3 || len(l.Months) != 3 {
		t.Errorf("scopes %+v", l)
	}
}

func TestTheAnswersCitationsCarryTheirNotesDates(t *testing.T) {
	e := startScopedEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)
	resp := post(t, hs.URL+"/v1/ask", `{"question":"What is the home budget for groceries?"}`)
	defer resp.Body.Close()
	var done *schemas.AnswerDone
	readSSE(t, resp.Body, func(ev sseEvent) bool {
		if ev.Name == "done" {
			done = &schemas.AnswerDone{}
			if err := json.Unmarshal([]byte(ev.Data), done); err != nil {
				t.Fatal(err)
			}
			return false
		}
		return true
	})
	if done == nil || len(done.Citations) == 0 {
		t.Fatalf("answer %+v", done)
	}
	for _, c := range done.Citations {
		if c.Title == "Home" && c.Updated != "2026-11-20T00:00:00Z" {
			t.Errorf("citation of Home dated %q", c.Updated)
		}
		if c.Updated == "" {
			t.Errorf("an undated citation %+v", c)
		}
	}
}
