package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// syncRun is what one Sync published.
type syncRun struct {
	stats   SyncStats
	sent    map[string]*schemas.DocChanged // by doc id, documents
	deleted []string                       // doc ids
}

func syncInto(t *testing.T, kv bus.KV, paths ...string) syncRun {
	t.Helper()
	run := syncRun{sent: map[string]*schemas.DocChanged{}}
	st, ferrs, err := Sync(context.Background(), paths, kv, func(_ context.Context, ev *schemas.DocChanged) error {
		if ev.Deleted {
			run.deleted = append(run.deleted, ev.DocID)
		} else {
			run.sent[ev.DocID] = ev
		}
		return nil
	}, SyncOptions{})
	if err != nil || len(ferrs) > 0 {
		t.Fatalf("Sync(%v): %v %v", paths, err, ferrs)
	}
	run.stats = st
	sort.Strings(run.deleted)
	return run
}

// stateIDs lists the doc ids the source state remembers, with their paths.
func stateIDs(t *testing.T, kv bus.KV) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		id, ok := docIDOfKey(k)
		if !ok {
			continue
		}
		s, err := loadState(ctx, kv, k)
		if err != nil || s == nil {
			t.Fatalf("state %s: %v", k, err)
		}
		out[id] = s.Path
	}
	return out
}

func sourcesKV(t *testing.T) bus.KV {
	t.Helper()
	b := stagetest.New(t)
	kv, err := b.KV(context.Background(), stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// oldMarkdownDocID is how ids were made before issue 12: from the path
// relative to the folder given to ingest.
func oldMarkdownDocID(rel string) string {
	sum := sha256.Sum256([]byte(filepath.ToSlash(rel)))
	return "md-" + hex.EncodeToString(sum[:])[:16]
}

func TestMarkdownIdentity(t *testing.T) {
	t.Run("two folders with a todo.md each keep both, and re-ingesting the first changes nothing", func(t *testing.T) {
		kv := sourcesKV(t)
		dir := t.TempDir()
		a, b := filepath.Join(dir, "A"), filepath.Join(dir, "B")
		writeFile(t, a, "todo.md", "# A todo\n\nBuy apples.\n")
		writeFile(t, b, "todo.md", "# B todo\n\nBuy bananas.\n")

		ra := syncInto(t, kv, a)
		rb := syncInto(t, kv, b)
		if len(ra.sent) != 1 || len(rb.sent) != 1 || len(ra.deleted)+len(rb.deleted) != 0 {
			t.Fatalf("A sent %d, B sent %d, deleted %v %v", len(ra.sent), len(rb.sent), ra.deleted, rb.deleted)
		}
		for id := range ra.sent {
			if _, clash := rb.sent[id]; clash {
				t.Fatalf("A/todo.md and B/todo.md share the id %s", id)
			}
		}
		if ids := stateIDs(t, kv); len(ids) != 2 {
			t.Errorf("state holds %d documents, want both todo.md: %v", len(ids), ids)
		}
		again := syncInto(t, kv, a)
		if again.stats.Sent != 0 || again.stats.Unchanged != 1 || len(again.deleted) != 0 {
			t.Errorf("re-ingesting A: %+v, deleted %v; want it unchanged", again.stats, again.deleted)
		}
	})

	t.Run("ingesting a subfolder after its parent indexes nothing twice", func(t *testing.T) {
		kv := sourcesKV(t)
		folder := t.TempDir()
		writeFile(t, folder, "top.md", "# Top\n\nSee [[inner]].\n")
		writeFile(t, filepath.Join(folder, "sub"), "inner.md", "# Inner\n\nInner text.\n")
		writeFile(t, filepath.Join(folder, "sub"), "second.md", "# Second\n\nMore.\n")

		first := syncInto(t, kv, folder)
		sub := syncInto(t, kv, filepath.Join(folder, "sub"))
		if first.stats.Sent != 3 || sub.stats.Sent != 0 || sub.stats.Unchanged != 2 {
			t.Errorf("notes: %+v; notes/sub: %+v; want the subfolder's notes unchanged", first.stats, sub.stats)
		}
		if ids := stateIDs(t, kv); len(ids) != 3 {
			t.Errorf("state holds %d documents, want 3: %v", len(ids), ids)
		}
		// The wikilink from top.md points at the id inner.md has on its own.
		var top *schemas.DocChanged
		for _, d := range first.sent {
			if d.Title == "Top" {
				top = d
			}
		}
		inner, err := notes.ParseMarkdown(filepath.Join(folder, "sub", "inner.md"), mustRead(t, filepath.Join(folder, "sub", "inner.md")), filepath.Join(folder, "sub"))
		if err != nil {
			t.Fatal(err)
		}
		if top == nil || !slices.Contains(top.Blocks[1].Refs, inner.DocID) {
			t.Errorf("top.md refs do not name inner.md's id %s", inner.DocID)
		}
	})

	t.Run("a folder reached through a symlink keeps the same ids", func(t *testing.T) {
		kv := sourcesKV(t)
		dir := t.TempDir()
		real := filepath.Join(dir, "real")
		writeFile(t, real, "n.md", "# N\n\ntext\n")
		link := filepath.Join(dir, "link")
		if err := os.Symlink(real, link); err != nil {
			t.Skipf("symlink: %v", err)
		}
		syncInto(t, kv, real)
		r := syncInto(t, kv, link)
		if r.stats.Sent != 0 || r.stats.Unchanged != 1 {
			t.Errorf("through the symlink: %+v, want unchanged", r.stats)
		}
	})

	t.Run("an index built with relative ids migrates: each file once under its new id, old ids deleted", func(t *testing.T) {
		kv := sourcesKV(t)
		ctx := context.Background()
		vault := t.TempDir()
		writeFile(t, vault, "todo.md", "# Todo\n\nSee [[other]].\n")
		writeFile(t, vault, "other.md", "# Other\n\nOther text.\n")
		writeFile(t, filepath.Join(vault, "sub"), "deep.md", "# Deep\n\nDeep text.\n")
		// The state an older version left: relative ids, absolute paths.
		old := map[string]string{}
		for _, rel := range []string{"todo.md", "other.md", "sub/deep.md"} {
			p := filepath.Join(vault, filepath.FromSlash(rel))
			id := oldMarkdownDocID(rel)
			old[id] = p
			raw, _ := json.Marshal(docState{Hash: "old", Version: 1, Path: p, Source: schemas.SourceMarkdown})
			if err := kv.Put(ctx, stateKey(id), raw); err != nil {
				t.Fatal(err)
			}
		}

		r := syncInto(t, kv, vault)
		if r.stats.Sent != 3 || len(r.sent) != 3 {
			t.Fatalf("sent %+v, want the 3 files under new ids", r.stats)
		}
		var oldIDs []string
		for id := range old {
			oldIDs = append(oldIDs, id)
			if _, reused := r.sent[id]; reused {
				t.Errorf("old id %s published again", id)
			}
		}
		sort.Strings(oldIDs)
		if !slices.Equal(r.deleted, oldIDs) {
			t.Errorf("deleted %v, want the old ids %v", r.deleted, oldIDs)
		}
		ids := stateIDs(t, kv)
		if len(ids) != 3 {
			t.Errorf("state after migration = %v, want 3 new ids", ids)
		}
		for id := range ids {
			if _, isOld := old[id]; isOld {
				t.Errorf("state still holds the old id %s", id)
			}
		}
		again := syncInto(t, kv, vault)
		if again.stats.Sent != 0 || len(again.deleted) != 0 {
			t.Errorf("second ingest after migration: %+v, deleted %v", again.stats, again.deleted)
		}
	})

	t.Run("old ids of files outside the folder ingested now are kept until their folder is", func(t *testing.T) {
		kv := sourcesKV(t)
		ctx := context.Background()
		dir := t.TempDir()
		a, b := filepath.Join(dir, "A"), filepath.Join(dir, "B")
		writeFile(t, a, "a.md", "# A\n\nalpha\n")
		pb := writeFile(t, b, "b.md", "# B\n\nbeta\n")
		raw, _ := json.Marshal(docState{Hash: "old", Version: 1, Path: pb, Source: schemas.SourceMarkdown})
		if err := kv.Put(ctx, stateKey(oldMarkdownDocID("b.md")), raw); err != nil {
			t.Fatal(err)
		}
		r := syncInto(t, kv, a)
		if len(r.deleted) != 0 {
			t.Errorf("ingesting A deleted %v (B's note would be lost until B is ingested)", r.deleted)
		}
		r = syncInto(t, kv, b)
		if !slices.Equal(r.deleted, []string{oldMarkdownDocID("b.md")}) || r.stats.Sent != 1 {
			t.Errorf("ingesting B: %+v, deleted %v", r.stats, r.deleted)
		}
	})

	t.Run("a moved folder is re-indexed under new ids and its old documents are deleted", func(t *testing.T) {
		kv := sourcesKV(t)
		dir := t.TempDir()
		from, to := filepath.Join(dir, "vault"), filepath.Join(dir, "moved")
		writeFile(t, from, "n.md", "# N\n\ntext\n")
		first := syncInto(t, kv, from)
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
		r := syncInto(t, kv, to)
		var oldID string
		for id := range first.sent {
			oldID = id
		}
		if r.stats.Sent != 1 || !slices.Equal(r.deleted, []string{oldID}) {
			t.Errorf("after the move: %+v, deleted %v, want the old id %s deleted", r.stats, r.deleted, oldID)
		}
		if ids := stateIDs(t, kv); len(ids) != 1 {
			t.Errorf("state = %v, want one document", ids)
		}
	})
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile writes content to name under dir and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
