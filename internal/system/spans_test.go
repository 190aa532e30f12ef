package system_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

const spansNote = `# Ravens

Ravens are large black birds of the crow family.

## Tools

- Crows bend wire into hooks to fish out food.
- Ravens cache food and remember where.

Both species recognise human faces for years.
`

// checkContextSpans checks that every context has spans, that each lies in
// its text and names a block of the chunk (or of the overlap before it),
// and returns the id and text of the span that holds needle.
func checkContextSpans(t *testing.T, ctxs []schemas.Context, needle string) (id, text string) {
	t.Helper()
	if len(ctxs) == 0 {
		t.Fatal("no contexts")
	}
	for _, c := range ctxs {
		if len(c.BlockSpans) == 0 {
			t.Errorf("context %s (%s) has no block spans", c.ChunkID, c.Source)
			continue
		}
		for _, s := range c.BlockSpans {
			if s.Start < 0 || s.End > len(c.Text) || s.Start >= s.End {
				t.Errorf("context %s: span %+v outside its %d bytes", c.ChunkID, s, len(c.Text))
				continue
			}
			if st := c.Text[s.Start:s.End]; strings.Contains(st, needle) {
				id, text = s.ID, st
			}
		}
	}
	return id, text
}

func TestAQuerysContextsCarryTheBlockSpansOfTheirChunks(t *testing.T) {
	ctx := context.Background()
	sys := start(t, t.TempDir())
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "ravens.md"), spansNote)
	syncPaths(t, sys.Bus, vault)
	waitIdle(t, sys.Bus)

	rr, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "s1", Question: "How do crows get food with wire?"}})
	if err != nil {
		t.Fatal(err)
	}
	id, text := checkContextSpans(t, rr.Contexts, "bend wire")
	if text != "- Crows bend wire into hooks to fish out food." {
		t.Fatalf("the span holding the answer is %q (block %q), want the list item's text alone", text, id)
	}
	// The span names the item's own block, not the chunk's first block (the heading).
	if id == "" || id == rr.Contexts[0].BlockID {
		t.Errorf("the answer's span names block %q, the chunk's first block is %q", id, rr.Contexts[0].BlockID)
	}
	if !strings.Contains(strings.Join(rr.Contexts[0].BlockIDs, " "), id) {
		t.Errorf("block %s is not among the chunk's blocks %v", id, rr.Contexts[0].BlockIDs)
	}
}

// TestAnOlderIndexGetsBlockSpansAtTheNextIngest builds what an index from
// before block spans holds (chunks without spans, chunk manifests and
// source state without their markers) and ingests the unchanged folder
// again: every chunk gets its spans, nothing is lost.
func TestAnOlderIndexGetsBlockSpansAtTheNextIngest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sys := start(t, dir)
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "ravens.md"), spansNote)
	writeFile(t, filepath.Join(vault, "figs.md"), "# Figs\n\nFigs like a sunny wall.\n")
	syncPaths(t, sys.Bus, vault)
	waitIdle(t, sys.Bus)
	_, before, err := sys.Store.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Make it old.
	db, err := sql.Open("sqlite", "file:"+system.DBPath(dir)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE chunks SET block_spans = NULL`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, bucket := range []string{stage.BucketChunks, stage.BucketSources} {
		kv, err := sys.Bus.KV(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := kv.Keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			raw, err := kv.Get(ctx, k)
			if err != nil || raw == nil {
				continue
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber() // versions are nanoseconds: no float64 rounding
			if dec.Decode(&m) != nil {
				continue
			}
			delete(m, "spans")
			delete(m, "format")
			raw, _ = json.Marshal(m)
			if err := kv.Put(ctx, k, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := sys.Store.ChunksWithoutSpans(ctx); err != nil || n != before {
		t.Fatalf("%d of %d chunks without spans (%v): the old index was not simulated", n, before, err)
	}

	stats := syncPaths(t, sys.Bus, vault)
	if stats.Sent != 2 {
		t.Errorf("the second ingest sent %d documents, want both once more", stats.Sent)
	}
	waitIdle(t, sys.Bus)
	if n, err := sys.Store.ChunksWithoutSpans(ctx); err != nil || n != 0 {
		t.Errorf("%d chunks still without spans (%v)", n, err)
	}
	if _, after, _ := sys.Store.Counts(ctx); after != before {
		t.Errorf("%d chunks after the upgrade, %d before", after, before)
	}
	rr, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "s2", Question: "crows bend wire"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, text := checkContextSpans(t, rr.Contexts, "bend wire"); text == "" {
		t.Error("no span holds the answer after the upgrade")
	}
	// Once: a third ingest of the unchanged folder sends nothing.
	if again := syncPaths(t, sys.Bus, vault); again.Sent != 0 {
		t.Errorf("a third ingest sent %d documents", again.Sent)
	}
}
