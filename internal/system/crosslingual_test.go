package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// The English SiYuan guide, no embedding model, a provider: a Russian
// question finds its English passage through the translated search.
func TestARussianQuestionFindsTheEnglishGuideWithAProviderAndNoEmbeddingModel(t *testing.T) {
	needGuide(t)
	ctx := context.Background()
	srv := llmtest.New(t)
	srv.SetAnswer("en: Which spaced repetition algorithm do flashcards use?")
	cfg := &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleStrategic: "m"}}}}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg,
		LLMOptions: llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	syncPaths(t, sys.Bus, guide)
	waitIdle(t, sys.Bus)

	langs, err := sys.Store.ChunkLangs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range langs {
		total += n
	}
	t.Logf("chunk languages of the SiYuan guide: %v", langs)
	if langs["en"]*10 < total*9 {
		t.Fatalf("chunk languages %v: the guide should be English", langs)
	}

	const question = "Какой алгоритм интервального повторения используют карточки?"
	const gold = "20221223221636-ms2b4w9" // Flashcards: "... schedules reviews using the FSRS spaced repetition algorithm"
	isGold := func(docID, text string) bool { return docID == gold && strings.Contains(text, "FSRS") }

	// The question as asked finds nothing of it.
	hits, err := sys.Store.Search(ctx, question, store.SearchOptions{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if isGold(h.DocID, h.Text) {
			t.Fatalf("the Russian question alone finds the gold passage: the test proves nothing")
		}
	}

	rr, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "x1", Question: question,
		Options: schemas.QueryOptions{NoAnswer: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Lang != "ru" || !strings.Contains(strings.Join(rr.Reasons, "\n"), "translated: en: Which spaced repetition") {
		t.Errorf("lang %s, reasons %v", rr.Lang, rr.Reasons)
	}
	rank := 0
	for i, c := range rr.Contexts {
		if isGold(c.DocID, c.Text) {
			rank = i + 1
			// The span that holds the claim names its own block.
			for _, s := range c.BlockSpans {
				if strings.Contains(c.Text[s.Start:s.End], "FSRS") && s.ID == c.BlockID {
					t.Errorf("the FSRS sentence's span names the chunk's first block %s", s.ID)
				}
			}
			break
		}
	}
	t.Logf("gold passage at rank %d of %d contexts", rank, len(rr.Contexts))
	if rank == 0 || rank > 3 {
		t.Errorf("the gold passage is at rank %d (0: absent), want in the top 3", rank)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d provider requests, want the one translation", n)
	}
}
