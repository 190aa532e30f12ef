package system_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
	"github.com/exocortex/exocortex/workers/embed"
)

// startNeural starts every stage with the generated models and the given
// vector store.
func startNeural(t *testing.T, dir, modelsDir string, vc vectors.Config) *system.System {
	t.Helper()
	sys, err := system.Start(context.Background(), system.Config{DataDir: dir, Listen: "127.0.0.1:-1",
		ModelsDir: modelsDir, Vectors: vc, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if sys.Embedder == nil || sys.Vectors == nil || sys.Reranker == nil {
		t.Fatalf("models not loaded: %v", sys.ModelNotes)
	}
	return sys
}

func ask(t *testing.T, sys *system.System, q string, opts schemas.QueryOptions) *schemas.QueryReranked {
	t.Helper()
	res, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(context.Background(), &schemas.QuerySubmitted{
		Query: schemas.Query{QueryID: "q" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", ""), Question: q, Options: opts}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// embeddedAll waits until every chunk has a vector of its current content.
func embeddedAll(t *testing.T, sys *system.System) (embedded, total int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		waitIdle(t, sys.Bus)
		var err error
		embedded, total, err = sys.Store.EmbedCounts(ctx, sys.Embedder.Name())
		if err != nil {
			t.Fatal(err)
		}
		if embedded == total || time.Now().After(deadline) {
			return embedded, total
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTheNeuralPathRunsThroughTheBusOnBothVectorStores(t *testing.T) {
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	for _, tc := range []struct {
		name string
		vc   vectors.Config
	}{
		{"embedded", vectors.Config{}},
		{"qdrant", vectors.Config{Kind: vectors.KindQdrant, Qdrant: vectors.QdrantConfig{Addr: fake.Addr(), Collection: "t_" + t.Name()[:4]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			sys := startNeural(t, dir, modelsDir, tc.vc)
			t.Cleanup(func() { _ = sys.Stop() })
			vault := t.TempDir()
			writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\n## Corvids\n\nRavens and crows solve puzzles and use tools.\n\n## Owls\n\nOwls hunt at night and fly silently.\n")
			writeFile(t, filepath.Join(vault, "garden.md"), "# Garden\n\nTomatoes need sun, water and stakes.\n\nAphids hide under the leaves.\n")
			writeFile(t, filepath.Join(vault, "города.md"), "# Города\n\nМосква стоит на Москве-реке, Санкт-Петербург на Неве.\n")
			syncPaths(t, sys.Bus, vault)
			embedded, total := embeddedAll(t, sys)
			if embedded != total || total < 3 {
				t.Fatalf("%d of %d chunks embedded", embedded, total)
			}
			if n, _ := sys.Vectors.Count(ctx); n != total {
				t.Fatalf("vector store holds %d vectors for %d chunks", n, total)
			}

			// Rerank mode: candidates come from both retrievers, the reranker
			// orders them, and every context carries its text and block.
			res := ask(t, sys, "crows use tools", schemas.QueryOptions{})
			if res.Mode != schemas.ModeRerank || len(res.Contexts) == 0 {
				t.Fatalf("mode %s with %d contexts, reasons %v", res.Mode, len(res.Contexts), res.Reasons)
			}
			both := false
			for _, c := range res.Contexts {
				if c.Text == "" || c.BlockID == "" || c.Title == "" {
					t.Errorf("context without text, block or title: %+v", c)
				}
				if c.Source == "rerank" && c.Lexical != nil && c.Vector != nil {
					both = true
				}
			}
			if !both {
				t.Errorf("no context was found by both retrievers: %+v", res.Contexts)
			}
			for _, k := range []string{"embed", "vector", "lexical", "fuse", "rerank"} {
				if _, ok := res.TimingsMS[k]; !ok {
					t.Errorf("no %s timing in %v", k, res.TimingsMS)
				}
			}

			// Vector mode alone finds a chunk by its own words.
			res = ask(t, sys, "Tomatoes need sun, water and stakes. Aphids hide under the leaves.", schemas.QueryOptions{Mode: schemas.ModeVector, K: 3})
			if res.Mode != schemas.ModeVector || len(res.Contexts) == 0 || !strings.Contains(res.Contexts[0].Text, "Tomatoes") {
				t.Fatalf("vector search for a chunk's own text: mode %s, %+v", res.Mode, res.Contexts)
			}
			if res.Contexts[0].Lexical != nil {
				t.Errorf("vector mode used the lexical retriever: %+v", res.Contexts[0])
			}

			// Deleting a document takes its vectors with it.
			if err := os.Remove(filepath.Join(vault, "garden.md")); err != nil {
				t.Fatal(err)
			}
			syncPaths(t, sys.Bus, vault)
			_, total = embeddedAll(t, sys)
			if n, _ := sys.Vectors.Count(ctx); n != total {
				t.Errorf("after a delete the store holds %d vectors for %d chunks", n, total)
			}
			res = ask(t, sys, "Tomatoes need sun, water and stakes.", schemas.QueryOptions{Mode: schemas.ModeVector})
			for _, c := range res.Contexts {
				if strings.Contains(c.Text, "Tomatoes") {
					t.Errorf("a deleted chunk is still found: %+v", c)
				}
			}

			// An edit is embedded again.
			writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\n## Corvids\n\nMagpies recognise themselves in mirrors.\n\n## Owls\n\nOwls hunt at night and fly silently.\n")
			syncPaths(t, sys.Bus, vault)
			if embedded, total := embeddedAll(t, sys); embedded != total {
				t.Errorf("after an edit %d of %d chunks embedded", embedded, total)
			}
			// The stored vector is the new content's: searching with a fresh
			// embedding of the chunk's passage finds exactly that chunk.
			var hits []store.Hit
			for deadline := time.Now().Add(15 * time.Second); ; {
				hits, err = sys.Store.Search(ctx, "magpies", store.SearchOptions{K: 1})
				if err != nil || len(hits) == 1 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil || len(hits) != 1 {
				t.Fatalf("the edited chunk is not indexed: %+v %v", hits, err)
			}
			embeddedAll(t, sys)
			ch, err := sys.Store.Chunk(ctx, hits[0].ChunkID)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := sys.Embedder.EmbedPassages(ctx, []string{embed.Passage(&schemas.ChunkCreated{SectionPath: ch.SectionPath, Text: ch.Text})})
			if err != nil {
				t.Fatal(err)
			}
			top, err := sys.Vectors.Search(ctx, vs[0], vectors.SearchOptions{K: 1})
			if err != nil || len(top) != 1 || top[0].ID != ch.ChunkID || top[0].Score < 0.99 {
				t.Errorf("the vector of the edited chunk %s is not its new content's: %+v %v", ch.ChunkID, top, err)
			}
		})
	}
	if reqs := fake.CreateRequests(); len(reqs) == 0 {
		t.Error("the Qdrant store never created its collection")
	}
}

func TestAModelInstalledLaterBackfillsTheIndexAndVectorsSurviveARestart(t *testing.T) {
	needGuide(t)
	ctx := context.Background()
	dir := t.TempDir()
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true})

	// First without models: lexical only, nothing embedded, and queries say so.
	sys, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", NoModels: true, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	syncPaths(t, sys.Bus, guide)
	waitIdle(t, sys.Bus)
	res, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q1", Question: "database view"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != schemas.ModeLexical || len(res.Reasons) == 0 || len(res.Contexts) == 0 {
		t.Fatalf("without models: mode %s, reasons %v, %d contexts", res.Mode, res.Reasons, len(res.Contexts))
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	// Then with the embedding model: the backfill embeds every chunk.
	sys = startNeuralNoRerank(t, dir, modelsDir)
	embedded, total := embeddedAll(t, sys)
	if embedded != total || total < 73 {
		t.Fatalf("backfill embedded %d of %d chunks", embedded, total)
	}
	res, err = client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q2", Question: "database view"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != schemas.ModeHybrid || !strings.Contains(strings.Join(res.Reasons, " "), "no_reranker_model") {
		t.Errorf("embedding model without reranker: mode %s, reasons %v", res.Mode, res.Reasons)
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	// A restart finds the vectors on disk and has nothing to backfill.
	sys = startNeuralNoRerank(t, dir, modelsDir)
	defer sys.Stop()
	if n, _ := sys.Vectors.Count(ctx); n != total {
		t.Fatalf("after a restart the embedded store holds %d of %d vectors", n, total)
	}
	if sent, err := sys.Backfill(ctx); err != nil || sent != 0 {
		t.Errorf("backfill after a restart asked for %d chunks (%v), want 0", sent, err)
	}
	st, err := sys.Bus.StageStates(ctx, system.StageSpecs())
	if err != nil {
		t.Fatal(err)
	}
	_ = st
}

func startNeuralNoRerank(t *testing.T, dir, modelsDir string) *system.System {
	t.Helper()
	sys, err := system.Start(context.Background(), system.Config{DataDir: dir, Listen: "127.0.0.1:-1",
		ModelsDir: modelsDir, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if sys.Embedder == nil || sys.Vectors == nil || sys.Reranker != nil {
		t.Fatalf("embedder %v, vectors %v, reranker %v: %v", sys.Embedder != nil, sys.Vectors != nil, sys.Reranker != nil, sys.ModelNotes)
	}
	return sys
}
