package system_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/maintenance"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
	"github.com/exocortex/exocortex/workers/stage"
)

// exec runs a statement on the index database beside the running writer,
// as a damaged disk or a stray tool would.
func execDB(t *testing.T, dir, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+system.DBPath(dir)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(stmt, args...)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("%s %v: no row changed", stmt, args)
	}
}

// firstChunk is the id of a document's first chunk in the index.
func firstChunk(t *testing.T, sys *system.System, docID string) string {
	t.Helper()
	ids, err := sys.Store.DocChunkIDs(context.Background(), docID)
	if err != nil || len(ids) == 0 {
		t.Fatalf("chunks of %s: %v %v", docID, ids, err)
	}
	return ids[0]
}

// kinds maps each document (by where) to the kinds of difference reported.
func kinds(rep *maintenance.CheckReport) map[string][]string {
	out := map[string][]string{}
	for _, d := range rep.Differences {
		out[d.Where] = append(out[d.Where], d.Kind)
	}
	return out
}

func has(list []string, kind string) bool {
	for _, k := range list {
		if k == kind {
			return true
		}
	}
	return false
}

func TestCheckReportsEveryDamageToTheIndexAndRepairMendsIt(t *testing.T) {
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	t.Run("embedded", func(t *testing.T) { checkDamageAndRepair(t, vectors.Config{}) })
	t.Run("qdrant", func(t *testing.T) {
		checkDamageAndRepair(t, vectors.Config{Kind: vectors.KindQdrant, Qdrant: vectors.QdrantConfig{Addr: fake.Addr(), Collection: "check"}})
	})
}

func checkDamageAndRepair(t *testing.T, vc vectors.Config) {
	ctx := context.Background()
	dir, vault := t.TempDir(), t.TempDir()
	texts := map[string]string{
		"a.md": "# Bees\n\nBees make honey from nectar.\n",
		"b.md": "# Ants\n\nAnts farm fungus underground.\n",
		"c.md": "# Crows\n\nCrows use tools to get food.\n",
		"d.md": "# Dolphins\n\nDolphins sleep with half the brain.\n",
		"e.md": "# Eels\n\nEels cross the ocean to spawn.\n",
		"f.md": "# Frogs\n\nFrogs breathe through their skin.\n",
		"h.md": "# Herons\n\nHerons stand still to fish.\n",
	}
	for name, text := range texts {
		writeFile(t, filepath.Join(vault, name), text)
	}
	sys := startNeural(t, dir, modeltest.Dir(t, modeltest.Options{NoQA: true}), vc)
	t.Cleanup(func() { _ = sys.Stop() })
	syncPaths(t, sys.Bus, vault)
	sources, err := sys.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	if err := files.RecordRoots(ctx, sources, []string{vault}); err != nil { // as ingest does
		t.Fatal(err)
	}
	if e, n := embeddedAll(t, sys); e != n || n < len(texts) {
		t.Fatalf("embedded %d of %d chunks", e, n)
	}

	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.SourceDocs != len(texts) || rep.Documents != len(texts) || rep.VectorCheck != "store" || rep.Vectors != rep.Chunks {
		t.Fatalf("a clean ingest: %+v", rep)
	}

	path := func(name string) string { return notes.Canonical(filepath.Join(vault, name)) }
	id := func(name string) string { return notes.MarkdownDocID(path(name)) }
	// a: a chunk row lost; b: a vector lost; c: a full-text row lost;
	// d: its chunk manifest lost; e: edited, not ingested; f: deleted, not
	// ingested; g: new, not ingested; an orphan: in the index, its file gone.
	execDB(t, dir, `DELETE FROM chunks WHERE chunk_id = ?`, firstChunk(t, sys, id("a.md")))
	if err := sys.Vectors.Delete(ctx, []string{firstChunk(t, sys, id("b.md"))}); err != nil {
		t.Fatal(err)
	}
	execDB(t, dir, `DELETE FROM chunks_fts WHERE rowid = (SELECT id FROM chunks WHERE chunk_id = ?)`, firstChunk(t, sys, id("c.md")))
	manifests, err := sys.Bus.KV(ctx, stage.BucketChunks)
	if err != nil {
		t.Fatal(err)
	}
	if err := manifests.Delete(ctx, chunk.ManifestKey(id("d.md"))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a new mtime
	writeFile(t, filepath.Join(vault, "e.md"), "# Eels\n\nEels cross the Sargasso Sea to spawn.\n")
	if err := os.Remove(filepath.Join(vault, "f.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(vault, "g.md"), "# Geese\n\nGeese fly in a V.\n")
	elsewhere := t.TempDir()
	orphan := filepath.Join(notes.Canonical(elsewhere), "orphan.md")
	writeFile(t, orphan, "# Orphan\n\nAn orphan note.\n")
	doc, err := notes.ParseMarkdown(orphan, []byte("# Orphan\n\nAn orphan note.\n"), elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Bus.Publish(ctx, doc, "test-orphan"); err != nil { // indexed, but no source state remembers it
		t.Fatal(err)
	}
	// A chunk of a document that never existed (held, not searchable).
	stray := &schemas.ChunkCreated{ChunkID: "md-00000000000000aa:00000000000000bb", DocID: "md-00000000000000aa", DocVersion: 1,
		Hash: "0000", Text: "A stray chunk.", Lang: "en"}
	if _, err := sys.Bus.Publish(ctx, stray, "test-stray"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sys.Bus)
	if err := os.Remove(orphan); err != nil {
		t.Fatal(err)
	}
	// h: its document row lost, its chunks held without it.
	execDB(t, dir, `DELETE FROM documents WHERE doc_id = ?`, id("h.md"))

	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(rep)
	for _, want := range []struct{ where, kind string }{
		{path("a.md"), maintenance.DiffMissingChunks},
		{path("a.md"), maintenance.DiffOrphanVectors}, // its vector outlived the row
		{path("b.md"), maintenance.DiffNoVectors},
		{path("c.md"), maintenance.DiffNoFTS},
		{path("d.md"), maintenance.DiffNoManifest},
		{path("e.md"), maintenance.DiffChanged},
		{path("f.md"), maintenance.DiffSourceGone},
		{path("g.md"), maintenance.DiffNotIndexed},
		{orphan, maintenance.DiffSourceGone},
		{stray.DocID, maintenance.DiffSourceGone},
		{path("h.md"), maintenance.DiffNoDocument},
	} {
		if !has(got[want.where], want.kind) {
			t.Errorf("%s: reported %v, want %s", want.where, got[want.where], want.kind)
		}
	}
	if len(got) != 10 {
		for _, d := range rep.Differences {
			t.Logf("difference: %s [%s]", d, d.Kind)
		}
		t.Errorf("differences in %d documents, want 10", len(got))
	}

	res, err := maintenance.RepairSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Before.Differences) < 11 || res.Ingested != 2 || res.Deleted != 3 || res.Resent != 5 || res.Dropped != 1 {
		t.Errorf("repair: %d differences before; ingested %d, resent %d, deleted %d, dropped %d; want 2, 5, 3, 1",
			len(res.Before.Differences), res.Ingested, res.Resent, res.Deleted, res.Dropped)
	}
	for _, d := range res.After.Differences {
		t.Errorf("after the repair: %s [%s]", d, d.Kind)
	}
	// A fresh check, and the index holds what a clean ingest of the folder
	// would: a..e, g and h, every chunk with its vector.
	if e, n := embeddedAll(t, sys); e != n {
		t.Errorf("embedded %d of %d chunks after the repair", e, n)
	}
	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Documents != 7 || rep.SourceDocs != 7 || rep.Vectors != rep.Chunks {
		t.Errorf("check after the repair: %+v", rep)
	}
	if hits, err := sys.Store.Search(ctx, "Sargasso", store.SearchOptions{}); err != nil || len(hits) == 0 {
		t.Errorf("the edited note is not searchable after the repair: %v", err)
	}
}

func TestCheckComparesASiYuanKernelAndRepairSyncsIt(t *testing.T) {
	ctx := context.Background()
	const third = "20261121100833-third01"
	k := siyuanKernel(t)
	if err := k.PutDoc(syBox, third, "", "/Bats",
		siyuantest.Block{ID: "20261121100833-para001", Type: "p", Content: "Bats find insects by echo.", Markdown: "Bats find insects by echo."},
	); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sy := siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond}
	bridge, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: testLog(t),
		StageConfig: []any{&siyuan.RoleConfig{Config: sy}}})
	if err != nil {
		t.Fatal(err)
	}
	searchable(t, bridge, "tools", "20261121100831-para001")
	searchable(t, bridge, "owls", "20261121100832-para001")
	searchable(t, bridge, "echo", "20261121100833-para001")
	waitIdle(t, bridge.Bus)
	if err := bridge.Stop(); err != nil {
		t.Fatal(err)
	}

	// The bridge is not running now: what changes in SiYuan reaches no one.
	sys := start(t, dir)
	t.Setenv("EXOCORTEX_SIYUAN_TOKEN", "tok")
	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{}) // the kernel the bridge last used
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.SiYuan != k.URL() || rep.SourceDocs != 3 || rep.Documents != 3 {
		t.Fatalf("a clean sync: %+v", rep)
	}

	if err := k.EditDoc(syDoc, func(bs []siyuantest.Block) []siyuantest.Block {
		bs[1].Content, bs[1].Markdown = "Crows remember human faces.", "Crows remember human faces."
		return bs
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RemoveDoc(syChild); err != nil {
		t.Fatal(err)
	}
	const fresh = "20261121100834-fresh01"
	if err := k.PutDoc(syBox, fresh, "", "/Moths",
		siyuantest.Block{ID: "20261121100834-para001", Type: "p", Content: "Moths fly to the lamp.", Markdown: "Moths fly to the lamp."},
	); err != nil {
		t.Fatal(err)
	}
	execDB(t, dir, `DELETE FROM chunks WHERE doc_id = ?`, third)

	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Sources: []any{&sy}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][]string{}
	for _, d := range rep.Differences {
		byID[d.DocID] = append(byID[d.DocID], d.Kind)
		if !strings.HasPrefix(d.Where, "siyuan "+d.DocID) {
			t.Errorf("%q does not name the SiYuan document %s", d.Where, d.DocID)
		}
	}
	for id, kind := range map[string]string{syDoc: maintenance.DiffChanged, syChild: maintenance.DiffSourceGone,
		fresh: maintenance.DiffNotIndexed, third: maintenance.DiffMissingChunks} {
		if !has(byID[id], kind) {
			t.Errorf("%s: reported %v, want %s", id, byID[id], kind)
		}
	}
	if len(byID) != 4 {
		t.Errorf("differences in %d documents, want 4: %+v", len(byID), rep.Differences)
	}

	res, err := maintenance.RepairSystem(ctx, sys, maintenance.CheckOptions{Sources: []any{&sy}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.After.Differences {
		t.Errorf("after the repair: %s [%s]", d, d.Kind)
	}
	searchable(t, sys, "faces", "20261121100831-para001")
	searchable(t, sys, "lamp", "20261121100834-para001")
	searchable(t, sys, "echo", "20261121100833-para001")
	searchable(t, sys, "owls", "")
	if rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Sources: []any{&sy}}); err != nil || !rep.Clean() || rep.Documents != 3 {
		t.Errorf("check after the repair: %+v %v", rep, err)
	}

	// A kernel that cannot be read: an error when it was asked for; when
	// it is only the one the bridge last used, a note, and the rest checked.
	bad := siyuan.Config{URL: k.URL(), Token: "wrong"}
	if _, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Sources: []any{&bad}}); err == nil || !strings.Contains(err.Error(), "read SiYuan at "+k.URL()) {
		t.Errorf("check --siyuan of a kernel that refuses the token: %v", err)
	}
	t.Setenv("EXOCORTEX_SIYUAN_TOKEN", "wrong")
	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{})
	if err != nil || !rep.Clean() || rep.SiYuan != "" || len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "could not be read") {
		t.Errorf("check with the bridge's kernel down: %+v %v", rep, err)
	}
}
