package system_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/index"
)

// TestALargeDocumentIsIndexedWholeNotDeadLettered sends the index stage a
// document whose structure write takes longer than the stage's write timeout
// (and than the old budget of the timeout plus a millisecond per block): 100
// blocks of 2000 refs each, 200k ref edges. It is indexed whole, with
// nothing dead-lettered, and none of its chunks, which arrive first, is
// found before it.
func TestALargeDocumentIsIndexedWholeNotDeadLettered(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := index.DefaultConfig()
	cfg.DBPath, cfg.WriteTimeout = system.DBPath(dir), time.Second
	sys, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: testLog(t),
		StageConfig: []any{cfg}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })

	// The chunks arrive first; until the structure does, none is found.
	d := &schemas.DocStructure{DocID: "atlas", Source: schemas.SourceMarkdown, Path: "atlas.md", Title: "Atlas",
		Hash: "atlas-h", Version: 1}
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("atlas-c%03d", i)
		text := fmt.Sprintf("Paragraph %d about quokkas", i)
		d.ChunkIDs = append(d.ChunkIDs, id)
		b := schemas.BlockNode{ID: fmt.Sprintf("atlas-b%03d", i), Type: schemas.BlockParagraph, ChunkID: id}
		for j := 0; j < 2000; j++ {
			b.Refs = append(b.Refs, fmt.Sprintf("t%03d-%04d", i, j))
		}
		d.Blocks = append(d.Blocks, b)
		c := &schemas.ChunkCreated{ChunkID: id, DocID: d.DocID, DocVersion: 1, Ordinal: i, Hash: "h-" + id,
			Text: text, BlockIDs: []string{b.ID}, Lang: "en"}
		if _, err := sys.Bus.Publish(ctx, c, "test-trace"); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, sys.Bus)
	if hits, err := sys.Store.Search(ctx, "quokkas", store.SearchOptions{K: 1000}); err != nil || len(hits) != 0 {
		t.Fatalf("before the structure, search found %d chunks (%v), want none", len(hits), err)
	}
	start := time.Now()
	if _, err := sys.Bus.Publish(ctx, d, "test-trace"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sys.Bus)
	t.Logf("structure of %d blocks and 200k refs indexed in %s", len(d.Blocks), time.Since(start))

	letters, err := sys.Bus.DeadLetters(ctx, index.Stage().Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range letters {
		t.Errorf("dead letter: %s %s", l.Subject, l.Reason)
	}
	if len(letters) != 0 {
		t.FailNow()
	}
	docs, chunks, err := sys.Store.Counts(ctx)
	if err != nil || docs != 1 || chunks != 100 {
		t.Fatalf("counts = %d docs, %d chunks, %v; want the document and its chunks", docs, chunks, err)
	}
	hits, err := sys.Store.Search(ctx, "quokkas", store.SearchOptions{K: 1000})
	if err != nil || chunks != 100 || len(hits) != chunks {
		t.Fatalf("search found %d of %d chunks: %v", len(hits), chunks, err)
	}
	for _, h := range hits {
		if h.Title != "Atlas" {
			t.Fatalf("hit %s has title %q, want Atlas", h.ChunkID, h.Title)
		}
	}
}
