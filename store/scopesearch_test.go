package store

import (
	"context"
	"testing"

	"github.com/exocortex/exocortex/lexical"
	"github.com/exocortex/exocortex/schemas"
)

func TestAllowedChunksIsCachedPerFilterUntilTheIndexChanges(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	f := DocFilter{Tags: []string{"work"}}
	a, err := s.AllowedChunks(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.AllowedChunks(ctx, DocFilter{Tags: []string{"work"}})
	if a != b || a.Key() != f.Key() || a.Memo("x", func() any { return 1 }) != b.Memo("x", func() any { return 2 }) {
		t.Fatalf("the same filter twice gave two sets (%p, %p) or two memos", a, b)
	}
	scopeDoc(t, s, &schemas.DocStructure{DocID: "w2", Source: schemas.SourceMarkdown, Path: "/home/me/work/w2.md",
		Notebook: "/home/me/work", Tags: []string{"work"}, Version: 1}, "en")
	c, _ := s.AllowedChunks(ctx, f)
	if c == a || c.Seq() <= a.Seq() || c.Len() != a.Len()+1 {
		t.Fatalf("after a write: set %p (seq %d, %d chunks), before %p (seq %d, %d chunks)", c, c.Seq(), c.Len(), a, a.Seq(), a.Len())
	}
}

func TestSearchWithinAChunkSetOnBothEngines(t *testing.T) {
	ctx := context.Background()
	for _, engine := range []string{LexicalMemory, LexicalFTS5} {
		t.Run(engine, func(t *testing.T) {
			s := scopeFixture(t)
			s.Lexical = engine
			set, err := s.AllowedChunks(ctx, DocFilter{Langs: []string{"ru"}})
			if err != nil {
				t.Fatal(err)
			}
			all, err := s.Search(ctx, "text of", SearchOptions{K: 100})
			if err != nil {
				t.Fatal(err)
			}
			in, err := s.Search(ctx, "text of", SearchOptions{K: 100, Chunks: set})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 7 || len(in) != set.Len() || set.Len() != 2 {
				t.Fatalf("%d hits unscoped, %d within a set of %d; want 7 and the set's 2", len(all), len(in), set.Len())
			}
			for _, h := range in {
				if h.Lang != "ru" {
					t.Errorf("hit %s (%s) is outside the set", h.ChunkID, h.Lang)
				}
			}
			one, _ := s.Search(ctx, "text of", SearchOptions{K: 1, Chunks: set})
			none, _ := s.Search(ctx, "text of", SearchOptions{K: 5, Chunks: &ChunkSet{}})
			if len(one) != 1 || len(none) != 0 {
				t.Errorf("k 1: %d hits; an empty set: %d hits", len(one), len(none))
			}
		})
	}
}

// TestLexicalQueryRanksAsSearchDoes: the memory index ranking
// LexicalQuery's query with its weights gives Search's hits in Search's
// order, in Russian and English, so a brute force built on it (the scale
// suite's) checks Search itself.
func TestLexicalQueryRanksAsSearchDoes(t *testing.T) {
	ctx := context.Background()
	s := scopeFixture(t)
	s.Lexical = LexicalMemory
	idx, err := s.LexicalIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, query string }{
		{"an English query", "text of work-atlas"},
		{"a Russian query", "текст борща home-borsch"},
		{"a query of one word", "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.Search(ctx, tc.query, SearchOptions{K: 100})
			if err != nil {
				t.Fatal(err)
			}
			q, w, err := s.LexicalQuery(ctx, idx, tc.query, SearchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ranked := idx.SearchWith(q, 100, w, lexical.SearchOptions{})
			if len(ranked) != len(hits) || len(hits) == 0 {
				t.Fatalf("LexicalQuery ranks %d rows, Search found %d hits (want the same, more than none)", len(ranked), len(hits))
			}
			for i, h := range hits {
				if ranked[i].Score != h.Score {
					t.Errorf("rank %d: LexicalQuery's score %v, Search's %v (%s)", i, ranked[i].Score, h.Score, h.ChunkID)
				}
			}
		})
	}
}
