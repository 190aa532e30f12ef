package main_test

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"

	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
)

// stripLexical rewrites every point of the collection with its dense vector
// and ids alone, as exocortex wrote them before lexical search on Qdrant.
func stripLexical(t *testing.T, addr, coll string) int {
	t.Helper()
	ctx := context.Background()
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	c, err := qdrant.NewClient(&qdrant.Config{Host: host, Port: port, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	refs, err := c.Scroll(ctx, &qdrant.ScrollPoints{CollectionName: coll, Limit: qdrant.PtrOf(uint32(10000))})
	if err != nil {
		t.Fatal(err)
	}
	var pids []*qdrant.PointId
	for _, r := range refs {
		pids = append(pids, r.GetId())
	}
	got, err := c.Get(ctx, &qdrant.GetPoints{CollectionName: coll, Ids: pids, WithPayload: qdrant.NewWithPayloadInclude("chunk_id", "doc_id", "lang"),
		WithVectors: qdrant.NewWithVectors(true)})
	if err != nil {
		t.Fatal(err)
	}
	var pts []*qdrant.PointStruct
	for _, g := range got {
		dense := g.GetVectors().GetVectors().GetVectors()[""].GetDense().GetData()
		if dense == nil {
			t.Fatalf("point %v has no lexical vector to strip: %v", g.GetId(), g.GetVectors())
		}
		pts = append(pts, &qdrant.PointStruct{Id: g.GetId(), Vectors: qdrant.NewVectorsDense(dense), Payload: g.GetPayload()})
	}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: coll, Wait: qdrant.PtrOf(true), Points: pts}); err != nil {
		t.Fatal(err)
	}
	return len(pts)
}

// With --vectors qdrant, while up runs: check finds the points written
// before lexical search on Qdrant (exit 4, naming how many chunks and what
// they lack), check --repair rewrites them in place, and search on a
// machine without the index file then finds them lexically on Qdrant.
func TestCLICheckRewritesQdrantPointsWithoutLexicalVectorsAndSearchRunsWithoutTheIndexFile(t *testing.T) {
	t.Parallel()
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	q := []string{"--vectors", "qdrant", "--qdrant", fake.Addr(), "--models", modelsDir}
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\n## Owls\n\nOwls hunt at night and fly silently.\n")
	write(t, filepath.Join(vault, "города.md"), "# Города\n\nМосква стоит на Москве-реке.\n")
	// While up runs: check lists the collection's points itself (Qdrant is
	// not the running system's alone).
	startUp(t, data, nil, q...)
	mustExo(t, append([]string{"ingest", vault, "--data", data}, q...)...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, err := exo(t, append([]string{"check", "--data", data, "--quiet"}, q...)...)
		if err == nil && strings.Contains(out, "no differences") {
			if strings.Contains(out, "index's records") || !strings.Contains(out, "2 chunks, 2 vectors") {
				t.Fatalf("check while up runs on qdrant should list the collection's points:\n%s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("check after ingest: %v\n%s\n%s", err, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
	n := stripLexical(t, fake.Addr(), vectors.DefaultCollection)

	out, errOut, err := exo(t, append([]string{"check", "--data", data, "--quiet"}, q...)...)
	if code := exitCode(err); code != 4 || !strings.Contains(out, "1 of 1 chunk has no lexical vector and no passage on qdrant") ||
		!strings.Contains(out, "2 differences in 2 documents") {
		t.Fatalf("check of points without lexical vectors: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, err = exo(t, append([]string{"check", "--data", data, "--quiet", "--repair"}, q...)...)
	if err != nil || !strings.Contains(out, strconv.Itoa(n)+" points' lexical vectors rewritten") || !strings.Contains(out, "0 resent") ||
		!strings.HasSuffix(strings.TrimSpace(out), "vectors") || !strings.Contains(out, "settled:\nno differences") {
		t.Fatalf("check --repair: %v\n%s\n%s", err, out, errOut)
	}
	if got := fake.PointCount(vectors.DefaultCollection); got != n {
		t.Errorf("%d points after the repair, %d before", got, n)
	}

	// Another machine: no index file, the same collection.
	other := t.TempDir()
	out, errOut, err = exo(t, append([]string{"search", "Москвы", "--mode", "lexical", "--json", "--data", other}, q...)...)
	if err != nil || !strings.Contains(errOut, "searching the Qdrant collection alone") {
		t.Fatalf("search without the index file: %v\n%s\n%s", err, out, errOut)
	}
	var res struct {
		Mode    string `json:"mode"`
		Results []hit  `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Mode != "lexical" || len(res.Results) == 0 || res.Results[0].Title != "Города" {
		t.Fatalf("lexical search for Москвы on Qdrant alone: %+v", res)
	}
	// The default mode: both retrievers on Qdrant, then the reranker.
	out, errOut, err = exo(t, append([]string{"search", "owls at night", "--json", "--data", other}, q...)...)
	if err != nil {
		t.Fatalf("default search without the index file: %v\n%s\n%s", err, out, errOut)
	}
	// (The test's cross-encoder has random weights: the order is its own.)
	var full struct {
		Mode    string `json:"mode"`
		Results []struct {
			Title   string          `json:"title"`
			Lexical json.RawMessage `json:"lexical"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &full); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	found := false
	for _, r := range full.Results {
		found = found || (r.Title == "Birds" && len(r.Lexical) > 0)
	}
	if full.Mode != "rerank" || !found {
		t.Fatalf("search for owls on Qdrant alone: no Birds found lexically in mode %s: %s", full.Mode, out)
	}
	if _, errOut, err := exo(t, append([]string{"search", "owls", "--expand", "--data", other}, q...)...); err == nil || !strings.Contains(errOut, "--expand adds graph neighbours") {
		t.Errorf("search --expand without the index file: %v\n%s", err, errOut)
	}
}

// eval --vectors qdrant indexes the set into a throwaway collection of its
// own (never the notes' one), scores the lexical leg on the collection's
// lexical vectors, as a retrieve worker without the index file runs it,
// and drops the collection when done.
func TestCLIEvalOnQdrantScoresTheLexicalVectorsInAThrowawayCollection(t *testing.T) {
	t.Parallel()
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true})
	dir := t.TempDir()
	set := `{"version":"v2.0","data":[{"title":"Cats","paragraphs":[
	 {"context":"Cats sleep for most of the day and hunt at dusk.","qas":[
	   {"id":"q1","question":"When do cats hunt?","answers":[{"text":"at dusk","answer_start":38}]}]},
	 {"context":"Dogs bark at strangers and guard the house.","qas":[
	   {"id":"q2","question":"What do dogs guard?","answers":[{"text":"the house","answer_start":33}]}]}]}]}`
	write(t, filepath.Join(dir, "tiny.json"), set)
	out := mustExo(t, "eval", "--set", filepath.Join(dir, "tiny.json"), "--mode", "lexical,hybrid", "--json",
		"--vectors", "qdrant", "--qdrant", fake.Addr(), "--models", modelsDir)
	var rep struct {
		Runs []struct {
			Mode      string  `json:"mode"`
			Lexical   string  `json:"lexical"`
			N         int     `json:"n"`
			RecallAt1 float64 `json:"recall_at_1"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("eval --json: %v\n%s", err, out)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("eval runs: %s", out)
	}
	for _, r := range rep.Runs {
		if r.Lexical != "qdrant" || r.N != 2 {
			t.Errorf("mode %s: lexical search on %q over %d questions, want qdrant and 2: %s", r.Mode, r.Lexical, r.N, out)
		}
	}
	if r := rep.Runs[0]; r.Mode != "lexical" || r.RecallAt1 != 1 {
		t.Errorf("lexical on qdrant: %+v, want every question's paragraph first", r)
	}
	for _, c := range fake.CreateRequests() {
		if !strings.HasPrefix(c.GetCollectionName(), "exocortex_eval_") {
			t.Errorf("eval created collection %s, want a throwaway exocortex_eval_... one", c.GetCollectionName())
		}
	}
	if n := fake.PointCount(vectors.DefaultCollection); n != -1 {
		t.Errorf("eval wrote into the notes' collection: %d points", n)
	}
	if names := fake.CollectionNames(); len(names) != 0 {
		t.Errorf("collections left after eval: %v", names)
	}
}
