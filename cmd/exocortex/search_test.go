package main_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/modeltest"

	_ "modernc.org/sqlite"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// dataFiles lists every file and folder under dir with its size,
// modification time and mode.
func dataFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fmt.Sprintf("%d bytes, %s, %s", fi.Size(), fi.Mode(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFiles reports every file created, removed or changed between two
// listings of dataFiles.
func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, a := range after {
		if b, ok := before[p]; !ok {
			t.Errorf("%s created %s (%s)", what, p, a)
		} else if a != b {
			t.Errorf("%s changed %s: %s, was %s", what, p, a, b)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s removed %s", what, p)
		}
	}
}

// TestCLISearchWithNothingRunningReadsTheDataDirectoryAndWritesNothing:
// with no system running, search opens the index, the lexical snapshot and
// the vectors read-only and loads its models in this process, without NATS
// or stages: it answers in every mode as the in-process pipeline did
// (EXOCORTEX_LOCAL_PIPELINE=1), and creates or changes nothing in the data
// directory, the models under it included.
func TestCLISearchWithNothingRunningReadsTheDataDirectoryAndWritesNothing(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	modeltest.Dir(t, modeltest.Options{NoQA: true, Into: filepath.Join(data, "models")})
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n\n## Owls\n\nOwls hunt at night.\n")
	write(t, filepath.Join(vault, "птицы.md"), "# Птицы\n\nВороны используют инструменты для добычи пищи.\n\n## Совы\n\nСовы охотятся ночью.\n")
	write(t, filepath.Join(vault, "garden.md"), "# Garden\n\nTomatoes need sun and water. See [[Birds]].\n")
	mustExo(t, "ingest", vault, "--data", data, "--quiet")
	for _, name := range []string{"exocortex.db-wal", "exocortex.db-shm"} {
		if _, err := os.Stat(filepath.Join(data, name)); err == nil {
			t.Errorf("ingest left %s: the index was not closed cleanly (its writer closes last)", name)
		}
	}
	before := dataFiles(t, data)

	type result struct {
		Mode    string   `json:"mode"`
		Reasons []string `json:"reasons"`
		Results []struct {
			ChunkID string  `json:"chunk_id"`
			Score   float64 `json:"score"`
			Source  string  `json:"source"`
		} `json:"results"`
	}
	cases := []struct {
		name string
		args []string
		mode string
	}{
		{"lexical", []string{"crows tools", "--mode", "lexical"}, "lexical"},
		{"vector", []string{"crows tools", "--mode", "vector"}, "vector"},
		{"hybrid", []string{"crows tools", "--mode", "hybrid"}, "hybrid"},
		{"rerank", []string{"crows tools", "--mode", "rerank"}, "rerank"},
		{"the fullest mode, a Russian question, the neighbours added", []string{"вороны инструменты", "--expand"}, "rerank"},
		{"Russian notes only, three results", []string{"owls night", "--lang", "ru", "--k", "3"}, "rerank"},
		{"without models", []string{"crows tools", "--no-models"}, "lexical"},
	}
	search := func(t *testing.T, env []string, args []string) result {
		t.Helper()
		out, errOut, err := exoEnv(t, env, append([]string{"search", "--data", data, "--json"}, args...)...)
		if err != nil {
			t.Fatalf("search %v (env %v): %v\n%s\n%s", args, env, err, out, errOut)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("search %v: %v\n%s", args, err, out)
		}
		return r
	}
	here := make([]result, len(cases))
	for i, tc := range cases {
		here[i] = search(t, nil, tc.args)
		if here[i].Mode != tc.mode || len(here[i].Results) == 0 {
			t.Errorf("search %v: mode %s, %d results, want mode %s and results", tc.args, here[i].Mode, len(here[i].Results), tc.mode)
		}
		sameFiles(t, "search "+strings.Join(tc.args, " "), before, dataFiles(t, data))
	}
	// The plain output too, as a user reads it.
	plain := mustExo(t, "search", "crows tools", "--data", data)
	if !strings.HasPrefix(plain, "mode rerank") || !strings.Contains(plain, "\n 1. ") || !strings.Contains(plain, "(cross-encoder ") {
		t.Errorf("search output:\n%s", plain)
	}
	sameFiles(t, "search", before, dataFiles(t, data))

	// The same searches through the in-process pipeline (which writes the
	// NATS store and the answer cache) give the same results.
	for i, tc := range cases {
		a, _ := json.Marshal(here[i])
		b, _ := json.Marshal(search(t, []string{system.EnvLocalPipeline + "=1"}, tc.args))
		if string(a) != string(b) {
			t.Errorf("search %v read here and through the in-process pipeline differ:\nhere:     %s\npipeline: %s", tc.args, a, b)
		}
	}
}

// TestCLIAskWithNothingRunningStartsOnlyWhatItsRungNeeds: without a
// provider, the extractive model or the embedding model, ask answers from
// the passages (search-only) without NATS or stages, and so creates
// nothing: no NATS store, no answer cache (which holds only answers of a
// provider or the extractive model).
func TestCLIAskWithNothingRunningStartsOnlyWhatItsRungNeeds(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	write(t, filepath.Join(vault, "птицы.md"), "# Птицы\n\nВороны используют инструменты для добычи пищи.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	// A data directory as a backup restores it: the index alone.
	for _, p := range []string{"nats", "answers.db", "nats.nk"} {
		if err := os.RemoveAll(filepath.Join(data, p)); err != nil {
			t.Fatal(err)
		}
	}
	before := dataFiles(t, data)
	for _, q := range []string{"What do crows use?", "Что используют вороны?"} {
		out, errOut, err := exoEnv(t, []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="},
			"ask", q, "--data", data, "--no-models", "--json", "--follow-ups-wait", "0s")
		if err != nil {
			t.Fatalf("ask %q: %v\n%s\n%s", q, err, out, errOut)
		}
		var done struct {
			Mode      string `json:"mode"`
			Citations []struct {
				Title string `json:"title"`
			} `json:"citations"`
		}
		if err := json.Unmarshal([]byte(out), &done); err != nil || done.Mode != "search_only" || len(done.Citations) == 0 {
			t.Errorf("ask %q: mode %q, citations %+v (%v), want a search-only answer citing the notes\n%s", q, done.Mode, done.Citations, err, out)
		}
	}
	sameFiles(t, "ask without a provider", before, dataFiles(t, data))
}

// TestCLISearchOfAnIndexToBringUpToDateGoesThroughThePipelineOnce: an
// index written by another analyzer version cannot be read as it is; with
// nothing running, search says so and searches through the in-process
// pipeline, whose index stage rebuilds it; the next search reads it in
// place.
func TestCLISearchOfAnIndexToBringUpToDateGoesThroughThePipelineOnce(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	db, err := sql.Open("sqlite", filepath.Join(data, "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = 'full/0' WHERE key = 'analyzer'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for i, wantNote := range []bool{true, false} {
		out, errOut, err := exoEnv(t, nil, "search", "crows", "--data", data, "--no-models")
		if err != nil {
			t.Fatalf("search %d: %v\n%s", i+1, err, errOut)
		}
		if !strings.Contains(out, "1. Birds") {
			t.Errorf("search %d found:\n%s", i+1, out)
		}
		if note := strings.Contains(errOut, "the in-process pipeline brings the index up to date"); note != wantNote {
			t.Errorf("search %d: note of the pipeline %v, want %v:\n%s", i+1, note, wantNote, errOut)
		}
	}
}
