package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// facetVault writes two folders, each a notebook, of tagged and dated
// notes in English and Russian, and ingests them into data.
func facetVault(t *testing.T, data string) {
	t.Helper()
	root := t.TempDir()
	work, home := filepath.Join(root, "Work"), filepath.Join(root, "Home")
	write(t, filepath.Join(work, "atlas.md"), "---\ntags: [atlas, budget]\ndate: 2026-03-02\n---\n# Atlas\n\nThe Atlas budget is 40k for the quarter.\n")
	write(t, filepath.Join(work, "atlas2.md"), "---\ntags: [atlas]\ndate: 2026-11-10\n---\n# Atlas later\n\nThe Atlas budget was raised to 55k.\n")
	write(t, filepath.Join(home, "home.md"), "---\ntags: [budget]\ndate: 2026-11-20\n---\n# Home\n\nThe home budget for groceries is 600.\n")
	write(t, filepath.Join(home, "борщ.md"), "---\ntags: [рецепт]\ndate: 2025-12-01\n---\n# Борщ\n\nБорщ варят со свёклой и капустой.\n")
	mustExo(t, "ingest", work, "--data", data)
	mustExo(t, "ingest", home, "--data", data)
}

func TestCLISearchFacetsCountTheCandidatesAfterTheHits(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	facetVault(t, data)

	out := mustExo(t, "search", "--data", data, "--no-models", "--facets", "--k", "1", "budget")
	for _, want := range []string{"facets of 3 candidate documents:", "notebooks: Work 2, Home 1\n", "tags: atlas 2, budget 2\n",
		"months: 2026-11 2, 2026-03 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("search --facets lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, " 1. "), strings.Index(out, "notebooks:"); i < 0 || j < i {
		t.Errorf("the facets come after the hits:\n%s", out)
	}
	if plain := mustExo(t, "search", "--data", data, "--no-models", "budget"); strings.Contains(plain, "notebooks:") {
		t.Errorf("facets without --facets:\n%s", plain)
	}

	raw := mustExo(t, "search", "--data", data, "--no-models", "--facets", "--json", "борщ")
	var res struct {
		Facets struct {
			Of        string `json:"of"`
			Docs      int    `json:"docs"`
			Notebooks []struct {
				ID, Name string
				Count    int
			} `json:"notebooks"`
			Tags []struct {
				Tag   string `json:"tag"`
				Count int    `json:"count"`
			} `json:"tags"`
			Months []struct {
				Month string `json:"month"`
				Count int    `json:"count"`
			} `json:"months"`
		} `json:"facets"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("search --facets --json: %v\n%s", err, raw)
	}
	f := res.Facets
	if f.Of != "candidates" || f.Docs != 1 || len(f.Notebooks) != 1 || f.Notebooks[0].Name != "Home" || !strings.HasSuffix(f.Notebooks[0].ID, "Home") ||
		len(f.Tags) != 1 || f.Tags[0].Tag != "рецепт" || len(f.Months) != 1 || f.Months[0].Month != "2025-12" {
		t.Errorf("Russian facets in --json: %+v", f)
	}
}

func TestCLIAskShowsEachCitationsDate(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	facetVault(t, data)
	out := mustExo(t, "ask", "What is the home budget for groceries?", "--data", data, "--no-models")
	if !strings.Contains(out, "(2026-11-20)  block ") {
		t.Errorf("ask does not date the citation of the Home note:\n%s", out)
	}
	raw := mustExo(t, "ask", "Как варят борщ?", "--data", data, "--no-models", "--json")
	var done struct {
		Citations []struct {
			Title   string `json:"title"`
			Updated string `json:"updated"`
		} `json:"citations"`
	}
	if err := json.Unmarshal([]byte(raw), &done); err != nil {
		t.Fatalf("ask --json: %v\n%s", err, raw)
	}
	if len(done.Citations) == 0 || done.Citations[0].Updated != "2025-12-01T00:00:00Z" {
		t.Errorf("ask --json citations %+v", done.Citations)
	}
}
