package store

import (
	"context"
	"slices"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func TestBlockSpansRoundTripThroughChunkSearchAndPassages(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	mustApply(t, s, structure("d1", 1, "c1", "c2"), true)
	text := "## Backups\n\nRun exocortex backup to copy the index and the vectors."
	c := chunkEv("c1", "d1", 1, text)
	c.BlockIDs = []string{"h1", "p1"}
	// A span's Instruction flag (the chunk stage's mark of a block addressed
	// to a model) travels with it.
	c.BlockSpans = []schemas.BlockSpan{{ID: "h1", Start: 0, End: 10}, {ID: "p1", Start: 12, End: len(text), Instruction: true}}
	mustUpsert(t, s, c, true)
	// A chunk sent without spans has none, and is not taken for an old one.
	bare := chunkEv("c2", "d1", 1, "Restore puts the backup back in place.")
	mustUpsert(t, s, bare, true)

	got, err := s.Chunk(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.BlockSpans, c.BlockSpans) {
		t.Errorf("Chunk spans %v, want %v", got.BlockSpans, c.BlockSpans)
	}
	hits := search(t, s, "backup index vectors", SearchOptions{})
	if len(hits) == 0 || hits[0].ChunkID != "c1" || !slices.Equal(hits[0].BlockSpans, c.BlockSpans) {
		t.Fatalf("search hits %+v, want c1 with its spans", hits)
	}
	ps, err := s.Passages(ctx, []string{"c2", "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || !slices.Equal(ps[1].BlockSpans, c.BlockSpans) || ps[0].BlockSpans != nil {
		t.Errorf("passages %+v: want c2 without spans, then c1 with them", ps)
	}
	if got := text[c.BlockSpans[1].Start:c.BlockSpans[1].End]; got != "Run exocortex backup to copy the index and the vectors." {
		t.Errorf("p1's span holds %q", got)
	}
	if n, err := s.ChunksWithoutSpans(ctx); err != nil || n != 0 {
		t.Errorf("ChunksWithoutSpans = %d, %v; want 0", n, err)
	}
}

func TestAChunkIndexedBeforeBlockSpansTakesThemWhenSentAgain(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	text := "Snapshots are taken every night."
	old := chunkEv("c1", "d1", 3, text)
	mustUpsert(t, s, old, true)
	// An index of schema 5 had no block_spans column; migration 6 adds it,
	// NULL for the chunks indexed before.
	if _, err := s.w.Exec(`ALTER TABLE chunks DROP COLUMN block_spans; PRAGMA user_version = 5`); err != nil {
		t.Fatal(err)
	}
	undoScopeMigration(t, s.w) // nor had it the columns of migration 9
	path := s.Path()
	s.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.ChunksWithoutSpans(ctx); err != nil || n != 1 {
		t.Fatalf("ChunksWithoutSpans = %d, %v; want 1", n, err)
	}
	// The same chunk, same version and hash, now with spans: applied.
	again := chunkEv("c1", "d1", 3, text)
	again.BlockSpans = []schemas.BlockSpan{{ID: "c1-b1", Start: 0, End: len(text)}}
	mustUpsert(t, s, again, true)
	got, err := s.Chunk(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.BlockSpans, again.BlockSpans) {
		t.Errorf("spans %v after the re-send, want %v", got.BlockSpans, again.BlockSpans)
	}
	// A third time is a duplicate again.
	mustUpsert(t, s, again, false)
	wantRows(t, s, 1)
	if n, _ := s.ChunksWithoutSpans(ctx); n != 0 {
		t.Errorf("%d chunks still without spans", n)
	}
}
