package system_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/maintenance"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

const (
	syBox   = "20261121100831-kt25p1g"
	syDoc   = "20261121100831-xs0m89b"
	syChild = "20261121100832-child01"
)

func siyuanKernel(t testing.TB) *siyuantest.Kernel {
	k := siyuantest.New(t, "tok")
	k.AddNotebook(syBox, "Notes")
	if err := k.PutDoc(syBox, syDoc, "", "/Birds",
		siyuantest.Block{ID: "20261121100831-head001", Type: "h", Subtype: "h1", Content: "Crows", Markdown: "# Crows"},
		siyuantest.Block{ID: "20261121100831-para001", Type: "p", Content: "Crows use tools to get food.", Markdown: "Crows use tools to get food."},
	); err != nil {
		t.Fatal(err)
	}
	if err := k.PutDoc(syBox, syChild, syDoc, "/Birds/Owls",
		siyuantest.Block{ID: "20261121100832-para001", Type: "p", Content: "Owls hunt silently at night.", Markdown: "Owls hunt silently at night."},
	); err != nil {
		t.Fatal(err)
	}
	k.SetAsync(true)
	return k
}

// searchable polls the index until query finds block (or, with block "",
// finds nothing).
func searchable(t testing.TB, sys *system.System, query, block string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		hits, err := sys.Store.Search(context.Background(), query, store.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := slices.ContainsFunc(hits, func(h store.Hit) bool { return slices.Contains(h.BlockIDs, block) })
		if block == "" && len(hits) == 0 || block != "" && found {
			return time.Since(start)
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("%q: %d hits, want block %q", query, len(hits), block)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestALiveSiYuanKernelsEditsAndDeletesReachTheIndex(t *testing.T) {
	k := siyuanKernel(t)
	sys, err := system.Start(context.Background(), system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", Log: testLog(t),
		StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond,
			PluginSecret: "s3cret"}, PluginListen: "127.0.0.1:0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	searchable(t, sys, "tools", "20261121100831-para001")
	searchable(t, sys, "owls", "20261121100832-para001")

	if err := k.EditDoc(syDoc, func(bs []siyuantest.Block) []siyuantest.Block {
		bs[1].Content = "Crows remember human faces."
		return bs
	}); err != nil {
		t.Fatal(err)
	}
	searchable(t, sys, "faces", "20261121100831-para001")
	searchable(t, sys, "tools", "")

	// The document and its child go; neither is found any more.
	if _, err := k.RemoveDoc(syDoc); err != nil {
		t.Fatal(err)
	}
	searchable(t, sys, "faces", "")
	searchable(t, sys, "owls", "")

	st, err := siyuan.ReadStatus(context.Background(), sys.Bus)
	for deadline := time.Now().Add(5 * time.Second); (st == nil || st.Deleted < 2) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		st, err = siyuan.ReadStatus(context.Background(), sys.Bus)
	}
	if err != nil || st == nil || !st.Connected || st.Deleted < 2 || st.LastReconcile.IsZero() || st.URL != k.URL() {
		t.Errorf("bridge status on the bus: %+v, %v", st, err)
	}

	// The plugin endpoint: a wrong secret is refused, the right one applies
	// the event like /ws.
	post := func(secret string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+sys.Service(siyuan.RoleName).(*siyuan.Service).PluginAddr+"/siyuan/events",
			strings.NewReader(`{"cmd":"savedoc","data":{"rootID":"20261121100900-plugin1"}}`))
		req.Header.Set(siyuan.PluginHeader, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	k.SetAsync(false)
	k.SetMuted(true) // only the plugin says what changed
	if err := k.PutDoc(syBox, "20261121100900-plugin1", "", "/Plugin", siyuantest.Block{ID: "20261121100900-ppara01", Type: "p",
		Content: "Forwarded by the plugin: magpies.", Markdown: "Forwarded by the plugin: magpies."}); err != nil {
		t.Fatal(err)
	}
	if code := post("wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong secret: HTTP %d", code)
	}
	if code := post("s3cret"); code != http.StatusAccepted {
		t.Errorf("the right secret: HTTP %d", code)
	}
	searchable(t, sys, "magpies", "20261121100900-ppara01")
}

// sectionOf polls the index until the chunk of block found by query
// carries section path want; it returns that chunk.
func sectionOf(t testing.TB, sys *system.System, query, block string, want ...string) *store.Chunk {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		hits, err := sys.Store.Search(context.Background(), query, store.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if slices.Contains(h.BlockIDs, block) {
				got = h.SectionPath
				if slices.Equal(h.SectionPath, want) {
					c, err := sys.Store.Chunk(context.Background(), h.ChunkID)
					if err != nil {
						t.Fatal(err)
					}
					return c
				}
			}
		}
	}
	t.Fatalf("%q: block %s has section path %q, want %q", query, block, got, want)
	return nil
}

func TestARenamedOrMovedSiYuanDocumentsChunksTakeTheNewSectionPath(t *testing.T) {
	k := siyuanKernel(t)
	sys, err := system.Start(context.Background(), system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", Log: testLog(t),
		StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	crows := sectionOf(t, sys, "tools", "20261121100831-para001", "Notes", "Birds", "Crows")
	owls := sectionOf(t, sys, "owls", "20261121100832-para001", "Notes", "Birds", "Owls")

	// A rename: the document's and its child's chunks follow, with a newer
	// version and the same text (so the same hash: nothing to embed again).
	if err := k.RenameDoc(syDoc, "Corvids"); err != nil {
		t.Fatal(err)
	}
	c := sectionOf(t, sys, "tools", "20261121100831-para001", "Notes", "Corvids", "Crows")
	o := sectionOf(t, sys, "owls", "20261121100832-para001", "Notes", "Corvids", "Owls")
	if c.Version <= crows.Version || o.Version <= owls.Version || c.Hash != crows.Hash || o.Hash != owls.Hash {
		t.Errorf("after the rename: versions %d -> %d and %d -> %d, hashes kept %v %v", crows.Version, c.Version,
			owls.Version, o.Version, c.Hash == crows.Hash, o.Hash == owls.Hash)
	}

	// A move under another document.
	const archive = "20261121100900-archive"
	if err := k.PutDoc(syBox, archive, "", "/Archive", siyuantest.Block{ID: "20261121100900-apara01", Type: "p",
		Content: "Old notes.", Markdown: "Old notes."}); err != nil {
		t.Fatal(err)
	}
	searchable(t, sys, "old", "20261121100900-apara01")
	if err := k.MoveDoc(syChild, archive); err != nil {
		t.Fatal(err)
	}
	moved := sectionOf(t, sys, "owls", "20261121100832-para001", "Notes", "Archive", "Owls")
	if moved.Version <= o.Version {
		t.Errorf("after the move: version %d -> %d", o.Version, moved.Version)
	}

	// Undoing the rename brings back the first title path (and so the
	// first hashes of the document): the index follows all the same.
	if err := k.RenameDoc(syDoc, "Birds"); err != nil {
		t.Fatal(err)
	}
	sectionOf(t, sys, "tools", "20261121100831-para001", "Notes", "Birds", "Crows")
	hits, err := sys.Store.Search(context.Background(), "tools", store.SearchOptions{})
	if err != nil || len(hits) == 0 || hits[0].Title != "Birds" || hits[0].Path != "Notes/Birds" {
		t.Errorf("after undoing the rename: %+v, %v", hits, err)
	}
}

func TestASiYuanDocumentsTagsAndAliasesFindIt(t *testing.T) {
	k := siyuanKernel(t)
	// Set in SiYuan's document properties before the bridge starts...
	if err := k.SetBlockAttrs(syDoc, map[string]string{"tags": "corvids, black birds", "alias": "Ravenkind,Воронье"}); err != nil {
		t.Fatal(err)
	}
	if err := k.Flush(); err != nil {
		t.Fatal(err)
	}
	sys, err := system.Start(context.Background(), system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", Log: testLog(t),
		StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	searchable(t, sys, "owls", "20261121100832-para001")
	for _, q := range []string{"corvids", "black birds", "ravenkind", "воронье"} {
		searchable(t, sys, q, "20261121100831-para001")
	}

	// ...and while it runs: the kernel keeps the document's updated and
	// says only "transactions" (updateAttrs) on /ws.
	if err := k.SetBlockAttrs(syChild, map[string]string{"tags": "nocturnal"}); err != nil {
		t.Fatal(err)
	}
	searchable(t, sys, "nocturnal", "20261121100832-para001")
	if err := k.SetBlockAttrs(syDoc, map[string]string{"tags": "", "alias": ""}); err != nil {
		t.Fatal(err)
	}
	searchable(t, sys, "corvids", "")
	searchable(t, sys, "ravenkind", "")
}

// TestCheckKeepsAClosedNotebookAndNoticesTheNotebooksOwnDocument: a
// closed notebook's documents are neither gone nor changed for check (the
// bridge kept them); notes written into a notebook's own document (SiYuan
// 3.7's boxDocEnabled) are noticed by check and indexed by the bridge.
func TestCheckKeepsAClosedNotebookAndNoticesTheNotebooksOwnDocument(t *testing.T) {
	ctx := context.Background()
	k := siyuanKernel(t)
	dir := t.TempDir()
	sy := siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond}
	bridge, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: testLog(t),
		StageConfig: []any{&siyuan.RoleConfig{Config: sy}}})
	if err != nil {
		t.Fatal(err)
	}
	searchable(t, bridge, "tools", "20261121100831-para001")
	searchable(t, bridge, "owls", "20261121100832-para001")
	if err := k.CloseNotebook(syBox); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, bridge.Bus)
	if err := bridge.Stop(); err != nil {
		t.Fatal(err)
	}

	sys := start(t, dir)
	rep, err := maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Sources: []any{&sy}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Documents != 2 {
		t.Errorf("check with the notebook closed: %+v", rep)
	}
	// Opened, with a note in the notebook's own document.
	if err := k.OpenNotebook(syBox); err != nil {
		t.Fatal(err)
	}
	if err := k.EditDoc(syBox, func(bs []siyuantest.Block) []siyuantest.Block {
		return append(bs, siyuantest.Block{ID: "20261121100900-boxnote", Type: "p", Content: "Галки живут стаями.", Markdown: "Галки живут стаями."})
	}); err != nil {
		t.Fatal(err)
	}
	rep, err = maintenance.CheckSystem(ctx, sys, maintenance.CheckOptions{Sources: []any{&sy}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 1 || rep.Differences[0].DocID != syBox || rep.Differences[0].Kind != maintenance.DiffNotIndexed {
		t.Errorf("check with a note in the notebook's document: %+v", rep.Differences)
	}
}
