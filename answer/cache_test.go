package answer_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

func TestTheCacheAnswersACloseQuestionUntilItsNotesChange(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("Вороны используют инструменты для добычи пищи [1].")
	hashes := map[string]string{"c1": "h1", "c2": "h2", "c3": "h3"}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "cache.db")
	open := func() *answer.Cache {
		c, err := answer.OpenCache(path, answer.CacheConfig{Now: func() time.Time { return now }, MaxEntries: 2},
			func(_ context.Context, ids []string) (map[string]string, error) {
				out := map[string]string{}
				for _, id := range ids {
					if h, ok := hashes[id]; ok {
						out[id] = h
					}
				}
				return out, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	cache := open()
	a := &answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t), Cache: cache}
	ctx := context.Background()
	ask := func(id string, vec []float32) *schemas.AnswerDone {
		q := query()
		q.QueryID, q.QueryVector = id, vec
		return a.Answer(ctx, q)
	}
	v1 := []float32{1, 0, 0, 0}
	close := []float32{0.95, 0.31, 0, 0} // cosine 0.95
	far := []float32{0.80, 0.60, 0, 0}   // cosine 0.80
	if d := ask("q1", v1); d.Mode != schemas.AnswerLLM {
		t.Fatalf("first answer: %+v", d)
	}
	calls := len(srv.Requests())
	d := ask("q2", close)
	if d.Mode != schemas.AnswerCache || d.QueryID != "q2" || len(d.Citations) != 1 || len(srv.Requests()) != calls {
		t.Fatalf("a close question: %+v (provider called %d more times)", d, len(srv.Requests())-calls)
	}
	if d := ask("q3", far); d.Mode != schemas.AnswerLLM {
		t.Errorf("a question at cosine 0.80 was answered from the cache: %+v", d)
	}
	if h, m, _ := cache.Stats(); h != 1 || m != 2 {
		t.Errorf("hits %d, misses %d; want 1 and 2", h, m)
	}
	// Reopened, the cache still answers.
	cache.Close()
	a.Cache = open()
	if d := ask("q4", close); d.Mode != schemas.AnswerCache {
		t.Errorf("after reopening: %+v", d)
	}
	if a.Cache.HitRate() != 0.5 {
		t.Errorf("hit rate %v after 2 hits of 4 lookups", a.Cache.HitRate())
	}
	// status reads the same counters beside the running cache.
	if s, err := answer.ReadCacheStats(ctx, path); err != nil || s.Hits != 2 || s.Misses != 2 || s.HitRate != 0.5 || s.Entries != 2 {
		t.Errorf("read beside it: %+v, %v", s, err)
	}
	if _, err := answer.ReadCacheStats(ctx, filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("a missing cache database read without an error")
	}
	// The cited note changes: the cached answer is not given any more.
	hashes["c1"] = "h1-edited"
	if d := ask("q5", close); d.Mode != schemas.AnswerLLM {
		t.Errorf("a cached answer citing an edited note was given: %+v", d)
	}
	// And a week later nothing is served from the cache.
	now = now.Add(8 * 24 * time.Hour)
	if d := ask("q6", close); d.Mode != schemas.AnswerLLM {
		t.Errorf("an answer past its TTL was given: %+v", d)
	}
	if _, _, n := a.Cache.Stats(); n > 2 {
		t.Errorf("%d entries, the cache holds at most 2", n)
	}
}
