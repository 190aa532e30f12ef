package system_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/stage"
)

// TestAnIndexWithRelativeMarkdownIDsMigrates builds the index an older
// version made (Markdown ids from the path relative to the folder ingested),
// then ingests the folder again: every note ends up once, under its new id,
// and the old documents and their chunks are gone.
func TestAnIndexWithRelativeMarkdownIDsMigrates(t *testing.T) {
	dir := t.TempDir()
	sys := start(t, dir)
	ctx := context.Background()
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "todo.md"), "# Todo\n\nRepot the fig tree, see [[other]].\n")
	writeFile(t, filepath.Join(vault, "other.md"), "# Other\n\nFigs like a sunny wall.\n")
	writeFile(t, filepath.Join(vault, "sub", "deep.md"), "# Deep\n\nMulch the blueberries in spring.\n")

	kv, err := sys.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	oldID := func(rel string) string {
		sum := sha256.Sum256([]byte(rel))
		return "md-" + hex.EncodeToString(sum[:])[:16]
	}
	root, _ := filepath.EvalSymlinks(vault)
	var oldIDs []string
	err = notes.Walk([]string{vault}, func(d *schemas.DocChanged) error {
		rel, _ := filepath.Rel(root, d.Path)
		id := oldID(filepath.ToSlash(rel))
		oldIDs = append(oldIDs, id)
		for i := range d.Blocks {
			d.Blocks[i].ID = strings.Replace(d.Blocks[i].ID, d.DocID, id, 1)
			d.Blocks[i].ParentID = strings.Replace(d.Blocks[i].ParentID, d.DocID, id, 1)
		}
		d.DocID = id
		if _, err := sys.Bus.Publish(ctx, d, "old-version"); err != nil {
			return err
		}
		raw, _ := json.Marshal(map[string]any{"hash": d.Hash, "version": d.Version, "path": d.Path, "source": d.Source})
		return kv.Put(ctx, "doc."+id, raw)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sys.Bus)
	if docs, _, _ := sys.Store.Counts(ctx); docs != 3 {
		t.Fatalf("the old-style index holds %d documents, want 3", docs)
	}

	s := syncPaths(t, sys.Bus, vault)
	if s.Sent != 3 || s.Deleted != 3 {
		t.Fatalf("migrating sync = %+v, want 3 sent under new ids and 3 old ids deleted", s)
	}
	waitIdle(t, sys.Bus)
	docs, chunks, err := sys.Store.Counts(ctx)
	if err != nil || docs != 3 || chunks != 3 {
		t.Errorf("after migration the index holds %d documents, %d chunks (%v), want 3 and 3", docs, chunks, err)
	}
	for _, id := range oldIDs {
		if ids, err := sys.Store.DocChunkIDs(ctx, id); err != nil || len(ids) != 0 {
			t.Errorf("old document %s still has chunks %v (%v)", id, ids, err)
		}
	}
	for _, q := range []string{"repot", "sunny wall", "blueberries"} {
		hits, err := sys.Store.Search(ctx, q, store.SearchOptions{})
		if err != nil || len(hits) != 1 || slices.Contains(oldIDs, hits[0].DocID) {
			t.Errorf("search %q after migration: %v %+v, want one hit", q, err, hits)
		}
	}
	if again := syncPaths(t, sys.Bus, vault); again.Sent != 0 || again.Deleted != 0 {
		t.Errorf("a second sync after migration = %+v, want nothing", again)
	}
}
