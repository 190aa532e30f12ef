package siyuan_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// running starts src.Run and waits for its initial sync of (at least) n
// documents.
func running(t *testing.T, k *siyuantest.Kernel, src *siyuan.Source, out *sent, n int) {
	t.Helper()
	must(t, k.Flush())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	out.waitFor(t, 0, "the initial sync", func(evs []*schemas.DocChanged) bool { return len(evs) >= n })
	for k.Connected() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAReconciliationFindsADocumentCreatedJustBeforeIt(t *testing.T) {
	k := kernel(t)
	must(t, k.Flush())
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok"}, bus.NewMemKV(), out.publish, zerolog.Nop())
	// The kernel writes a new document's rows about 1.3 s after the call;
	// its /ws event came before the bridge listened.
	const fresh = "20261121101500-fresh01"
	must(t, k.PutDoc(box, fresh, "", "/Just Created", siyuantest.Block{ID: "20261121101500-fpara01", Type: "p",
		Content: "Written a moment ago.", Markdown: "Written a moment ago."}))
	st, err := src.Reconcile(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !has(out.since(0), fresh, false, hasBlock("20261121101500-fpara01")) || st.Docs != 5 {
		t.Errorf("the document created just before was not synced: %+v", st)
	}
}

func TestTheNotebooksHiddenDocumentsAreNotSynced(t *testing.T) {
	k := kernel(t)
	var out sent
	state := bus.NewMemKV()
	ctx := context.Background()
	// An index made before hidden documents were skipped holds one.
	must(t, state.Put(ctx, "siyuan."+box2, []byte(`{"box":"`+box2+`","updated":"20261121100000","hash":"h","version":1}`)))
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok"}, state, out.publish, zerolog.Nop())
	st, err := src.Reconcile(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out.since(0) {
		if !e.Deleted && (e.DocID == box || e.DocID == box2 || e.Title == "RAG Probe") {
			t.Errorf("the hidden document %s (%q) was sent", e.DocID, e.Path)
		}
	}
	if !has(out.since(0), box2, true, nil) {
		t.Error("the hidden document indexed before was not deleted")
	}
	if st.Docs != 4 || st.Sent != 4 || st.Deleted != 1 || src.Status().DocsSynced != 4 {
		t.Errorf("counts with hidden documents: %+v, status %+v", st, src.Status())
	}
	// An event naming the hidden document sends nothing either.
	n := out.len()
	must(t, src.Handle(ctx, siyuan.Event{Cmd: "savedoc", Data: []byte(`{"rootID":"` + box + `"}`)}))
	if _, err := src.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if out.len() != n {
		t.Errorf("a savedoc of the hidden document sent %d events", out.len()-n)
	}
}

func TestDocumentsOfANotebookCreatedWhileRunningCarryItsName(t *testing.T) {
	k := kernel(t)
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour},
		bus.NewMemKV(), out.publish, zerolog.Nop())
	running(t, k, src, &out, 4)
	const box3, doc3 = "20261121101600-newbox1", "20261121101601-newdoc1"
	n := out.len()
	k.AddNotebook(box3, "Fresh Box")
	must(t, k.PutDoc(box3, doc3, "", "/First", siyuantest.Block{ID: "20261121101601-npara01", Type: "p", Content: "Hello.", Markdown: "Hello."}))
	evs := out.waitFor(t, n, "the new notebook's document", func(evs []*schemas.DocChanged) bool { return has(evs, doc3, false, nil) })
	for _, e := range evs {
		if e.DocID == doc3 && (!slices.Equal(e.TitlePath, []string{"Fresh Box", "First"}) || e.Path != "Fresh Box/First") {
			t.Errorf("document of a new notebook: title path %q, path %q", e.TitlePath, e.Path)
		}
	}
}

func TestAReconciliationRepairsTitlePathsChangedWhileDisconnected(t *testing.T) {
	k := kernel(t)
	must(t, k.Flush())
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok"}, bus.NewMemKV(), out.publish, zerolog.Nop())
	ctx := context.Background()
	if _, err := src.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Unseen by the bridge: a notebook renamed, and a document renamed
	// (its child's rows keep their updated).
	k.SetOffline(true)
	must(t, k.RenameNotebook(box, "Renamed Box"))
	must(t, k.RenameDoc(parent, "New Parent"))
	n := out.len()
	if _, err := src.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	evs := out.since(n)
	want := map[string][]string{
		parent: {"Renamed Box", "New Parent"},
		child:  {"Renamed Box", "New Parent", "Child"},
		probe:  {"Renamed Box", "Probe Doc"},
	}
	for id, tp := range want {
		if !has(evs, id, false, func(e *schemas.DocChanged) bool { return slices.Equal(e.TitlePath, tp) }) {
			t.Errorf("%s was not sent again with title path %q", id, tp)
		}
	}
	if has(evs, other, false, nil) {
		t.Error("a document of the other notebook was sent again though nothing of it changed")
	}
}

func TestARefusedTokenIsFoundAtConnectAndShownInTheStatus(t *testing.T) {
	k := kernel(t)
	// The kernel does not check the token on /api/system/version.
	if _, err := siyuan.NewClient(k.URL(), "wrong").Version(context.Background()); err != nil {
		t.Fatalf("version: %v", err)
	}
	if err := siyuan.NewClient(k.URL(), "wrong").Check(context.Background()); !errors.Is(err, siyuan.ErrAuth) {
		t.Fatalf("Check = %v", err)
	}
	var out sent
	var logged strings.Builder
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "wrong"}, bus.NewMemKV(), out.publish, zerolog.New(&logged))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := src.Run(ctx)
	if !errors.Is(err, siyuan.ErrAuth) || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v)", err, ctx.Err())
	}
	st := src.Status()
	if st.Connected || !strings.Contains(st.Error, "API token") || out.len() != 0 {
		t.Errorf("status %+v, %d sent", st, out.len())
	}
	if !strings.Contains(logged.String(), `"level":"error"`) || !strings.Contains(logged.String(), "API token") ||
		strings.Contains(logged.String(), "wrong\"") {
		t.Errorf("log: %s", logged.String())
	}
}

func TestDocsSyncedFollowsLiveCreatesAndDeletes(t *testing.T) {
	k := kernel(t)
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour},
		bus.NewMemKV(), out.publish, zerolog.Nop())
	running(t, k, src, &out, 4)
	wait := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); src.Status().DocsSynced != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("docs synced %d, want %d", src.Status().DocsSynced, want)
			}
		}
	}
	base := src.Status().DocsSynced
	must(t, k.PutDoc(box, "20261121101700-live001", "", "/Live", siyuantest.Block{ID: "20261121101700-lpara01", Type: "p", Content: "Live.", Markdown: "Live."}))
	wait(base + 1)
	if _, err := k.RemoveDoc(parent); err != nil { // and its child
		t.Fatal(err)
	}
	wait(base - 1)
	if base != 4 {
		t.Errorf("%d documents synced at first, want 4", base)
	}
}

func TestDocsSyncedCountsWhatAnEarlierRunIndexedBeforeTheKernelAnswers(t *testing.T) {
	k := kernel(t)
	state := bus.NewMemKV()
	var out sent
	if _, err := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok"}, state, out.publish, zerolog.Nop()).Reconcile(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// A restart while the kernel is away: the index still holds 4 documents.
	src := siyuan.New(siyuan.Config{URL: "http://127.0.0.1:1", Token: "tok"}, state, out.publish, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); src.Status().Error == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bridge never tried the kernel")
		}
	}
	if st := src.Status(); st.DocsSynced != 4 || st.Connected {
		t.Errorf("status after a restart without the kernel: %+v", st)
	}
}

func TestAReconciliationSendsTagsAndAliasesChangedWhileDisconnected(t *testing.T) {
	k := kernel(t)
	must(t, k.Flush())
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok"}, bus.NewMemKV(), out.publish, zerolog.Nop())
	ctx := context.Background()
	if _, err := src.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Unseen by the bridge: the kernel leaves updated alone when a
	// document's properties change.
	k.SetOffline(true)
	must(t, k.SetBlockAttrs(probe, map[string]string{"tags": "corvids", "alias": "Ravenkind"}))
	must(t, k.Flush())
	n := out.len()
	if _, err := src.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	evs := out.since(n)
	if !has(evs, probe, false, func(e *schemas.DocChanged) bool {
		return e.Meta["tags"] == "corvids" && e.Meta["alias"] == "Ravenkind"
	}) {
		t.Errorf("the document whose tags and alias changed was not sent again with them: %d events", len(evs))
	}
	if has(evs, parent, false, nil) {
		t.Error("a document whose properties did not change was sent again")
	}
	// And nothing more at the next pass.
	n = out.len()
	if _, err := src.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if evs := out.since(n); len(evs) != 0 {
		t.Errorf("an unchanged kernel sent %d documents again", len(evs))
	}
}
