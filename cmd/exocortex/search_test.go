package main_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models/modeltest"
)

// searchHit is one result of search --json, with what these tests check.
type searchHit struct {
	Title       string   `json:"title"`
	SectionPath []string `json:"section_path"`
	DocID       string   `json:"doc_id"`
	ChunkID     string   `json:"chunk_id"`
	Snippet     string   `json:"snippet"`
	Score       float64  `json:"score"`
	Source      string   `json:"source"`
	Lexical     *struct {
		Rank  int     `json:"rank"`
		Score float64 `json:"score"`
	} `json:"lexical"`
}

func searchJSON(t *testing.T, data string, args ...string) []searchHit {
	t.Helper()
	out := mustExo(t, append([]string{"search", "--data", data, "--json"}, args...)...)
	var res struct {
		Results []searchHit `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search --json %v: %v\n%s", args, err, out)
	}
	return res.Results
}

func TestCLISearchExpandFollowsWikilinksToWholeNotes(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "kettle.md"), "# Kettle\n\nDescale the kettle once a month, see [[Citric acid]].\n")
	write(t, filepath.Join(vault, "Citric acid.md"), "# Citric acid\n\nA weak organic acid found in lemons.\n")
	mustExo(t, "ingest", vault, "--data", data)

	plain := searchJSON(t, data, "descale")
	if len(plain) != 1 || plain[0].Title != "Kettle" {
		t.Fatalf("search descale without --expand: %+v", plain)
	}
	hits := searchJSON(t, data, "--expand", "descale")
	var linked *searchHit
	for i := range hits {
		if hits[i].Title == "Citric acid" {
			linked = &hits[i]
		}
	}
	if linked == nil {
		t.Fatalf("search --expand descale: the note the hit links to ([[Citric acid]]) is missing: %+v", hits)
	}
	if linked.Source != "graph:ref" || !strings.Contains(linked.Snippet, "lemons") {
		t.Errorf("linked note's result: %+v, want source graph:ref and its text", *linked)
	}

	// An answer's contexts get the linked note too (here the search-only
	// answer cites its contexts).
	var done struct {
		Mode      string `json:"mode"`
		Citations []struct {
			Title string `json:"title"`
			DocID string `json:"doc_id"`
		} `json:"citations"`
	}
	out := mustExo(t, "ask", "how do I descale?", "--data", data, "--no-models", "--json")
	if err := json.Unmarshal([]byte(out), &done); err != nil {
		t.Fatalf("ask --json: %v\n%s", err, out)
	}
	cited := false
	for _, c := range done.Citations {
		cited = cited || c.DocID == linked.DocID
	}
	if done.Mode != "search_only" || !cited {
		t.Errorf("ask: mode %s, citations %+v: want the linked note %s among the contexts", done.Mode, done.Citations, linked.DocID)
	}
}

func TestCLISearchFindsNotesByFrontMatterTagsAndAliases(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "garden.md"), "---\ntags: [permaculture, \"#compost\"]\naliases:\n  - Veg patch\n---\n# Garden\n\nTomatoes need full sun.\n")
	write(t, filepath.Join(vault, "kitchen.md"), "---\ntags: баня\n---\n# Kitchen\n\nBread rises overnight.\n")
	mustExo(t, "ingest", vault, "--data", data)
	for q, want := range map[string]string{"permaculture": "Garden", "compost": "Garden", "patch": "Garden", "бани": "Kitchen"} {
		hits := searchJSON(t, data, q)
		if len(hits) == 0 || hits[0].Title != want {
			t.Errorf("search %q: %+v, want the note %q (its tag or alias)", q, hits, want)
		}
	}
}

func TestCLISearchShowsTheBM25ScoreInLexicalMode(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar. Honey keeps for years.\n")
	write(t, filepath.Join(vault, "b.md"), "# Tea\n\nA spoon of honey in tea.\n\nGreen tea, black tea and herbal tea.\n")
	mustExo(t, "ingest", vault, "--data", data)
	hits := searchJSON(t, data, "honey")
	if len(hits) < 2 {
		t.Fatalf("search honey: %+v", hits)
	}
	for i, h := range hits {
		rrf := 1 / (60 + float64(i+1))
		if h.Lexical == nil || h.Score != h.Lexical.Score || math.Abs(h.Score-rrf) < 1e-9 || h.Score <= 0 || h.Source != "lexical" {
			t.Errorf("hit %d: score %v, source %q, lexical %+v: want the BM25 score (not 1/(60+rank) = %v)", i+1, h.Score, h.Source, h.Lexical, rrf)
		}
	}
	if hits[0].Score <= hits[1].Score {
		t.Errorf("BM25 scores not decreasing: %v then %v", hits[0].Score, hits[1].Score)
	}
	out := mustExo(t, "search", "honey", "--data", data)
	if !strings.Contains(out, "bm25") {
		t.Errorf("search output does not say the score is BM25:\n%s", out)
	}
}

func TestCLISearchSectionPathDoesNotRepeatTheTitle(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	// A long first section, so that "## Pests" starts a chunk of its own.
	sun := strings.Repeat("Tomatoes need full sun and deep watering every few days in summer. ", 25)
	write(t, filepath.Join(vault, "veg", "tomatoes.md"), "# Tomatoes\n\n"+sun+"\n\n## Pests\n\nAphids hide under the leaves.\n")
	mustExo(t, "ingest", vault, "--data", data)
	hits := searchJSON(t, data, "aphids")
	if len(hits) == 0 {
		t.Fatal("search aphids: no hits")
	}
	if got := strings.Join(hits[0].SectionPath, " > "); hits[0].Title != "Tomatoes" || got != "veg > Tomatoes > Pests" {
		t.Errorf("title %q, section path %q, want %q", hits[0].Title, got, "veg > Tomatoes > Pests")
	}
	out := mustExo(t, "search", "aphids", "--data", data)
	if strings.Contains(out, "Tomatoes > Tomatoes") || !strings.Contains(out, "veg > Tomatoes > Pests") {
		t.Errorf("search output:\n%s", out)
	}
}

func TestCLISearchSnippetsArePlainText(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "pests.md"), "# Pests\n\n## Aphids\n\n"+
		"Use **neem oil** and `soap` against [aphids](https://example.com/aphids), ask [[Ladybirds|ladybirds]] for help.\n\n"+
		"- spray _weekly_\n- check ~~daily~~ leaves\n\n> keep **calm**\n")
	write(t, filepath.Join(vault, "Ladybirds.md"), "# Ladybirds\n\nThey eat aphids.\n")
	mustExo(t, "ingest", vault, "--data", data)
	for _, args := range [][]string{{"neem aphids weekly"}, {"--json", "neem aphids weekly"}} {
		out := mustExo(t, append([]string{"search", "--data", data}, args...)...)
		var snippet string
		if args[0] == "--json" {
			var res struct{ Results []searchHit }
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) == 0 {
				t.Fatalf("search --json: %v\n%s", err, out)
			}
			snippet = res.Results[0].Snippet
		} else {
			lines := strings.Split(out, "\n")
			if len(lines) < 3 {
				t.Fatalf("search output:\n%s", out)
			}
			snippet = lines[2]
		}
		for _, bad := range []string{"**", "`", "](", "[[", "https://", "#", "- spray", "_weekly_", "~~", "> keep"} {
			if strings.Contains(snippet, bad) {
				t.Errorf("search %v: snippet %q holds Markdown %q", args, snippet, bad)
			}
		}
		for _, want := range []string{"[neem]", "[aphids]", "[weekly]", "oil", "soap", "ladybirds"} {
			if !strings.Contains(snippet, want) {
				t.Errorf("search %v: snippet %q lacks %q", args, snippet, want)
			}
		}
	}
}

func TestCLISearchSaysWhatEachModesScoreIs(t *testing.T) {
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n\n## Owls\n\nOwls hunt at night.\n")
	write(t, filepath.Join(vault, "garden.md"), "# Garden\n\nTomatoes need sun and water.\n")
	mustExo(t, "ingest", vault, "--data", data, "--models", modelsDir, "--quiet")
	for _, tc := range []struct{ mode, source, note string }{
		{"lexical", "lexical", "(bm25 "},
		{"vector", "vector", "(cosine "},
		{"hybrid", "fused", "(rrf "},
		{"rerank", "rerank", "(cross-encoder "},
	} {
		hits := searchJSON(t, data, "crows tools", "--mode", tc.mode, "--models", modelsDir)
		if len(hits) == 0 || hits[0].Source != tc.source {
			t.Errorf("search --mode %s: %+v, want source %s", tc.mode, hits, tc.source)
		}
		out := mustExo(t, "search", "crows tools", "--mode", tc.mode, "--data", data, "--models", modelsDir)
		if !strings.Contains(out, tc.note) || tc.mode == "hybrid" && !strings.Contains(out, ": bm25 #1 ") {
			t.Errorf("search --mode %s output does not name its score %q:\n%s", tc.mode, tc.note, out)
		}
	}
}
