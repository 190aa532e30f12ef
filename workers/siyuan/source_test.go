package siyuan_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// sent records what the source published.
type sent struct {
	mu  sync.Mutex
	evs []*schemas.DocChanged
}

func (s *sent) publish(_ context.Context, ev *schemas.DocChanged) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

// since returns the events after the first n.
func (s *sent) since(n int) []*schemas.DocChanged {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*schemas.DocChanged(nil), s.evs[min(n, len(s.evs)):]...)
}

func (s *sent) len() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.evs) }

// waitFor waits until the events after the first n satisfy ok.
func (s *sent) waitFor(t *testing.T, n int, what string, ok func([]*schemas.DocChanged) bool) []*schemas.DocChanged {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := s.since(n)
		if ok(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			for _, e := range evs {
				t.Logf("sent %s deleted=%v blocks=%d", e.DocID, e.Deleted, len(e.Blocks))
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func has(evs []*schemas.DocChanged, id string, deleted bool, f func(*schemas.DocChanged) bool) bool {
	return slices.ContainsFunc(evs, func(e *schemas.DocChanged) bool {
		return e.DocID == id && e.Deleted == deleted && (f == nil || f(e))
	})
}

func hasBlock(id string) func(*schemas.DocChanged) bool {
	return func(e *schemas.DocChanged) bool {
		return slices.ContainsFunc(e.Blocks, func(b schemas.Block) bool { return b.ID == id })
	}
}

const (
	box2   = "20261121100831-other01"
	parent = "20261121100800-parent1"
	child  = "20261121100801-child01"
	probe  = "20261121100831-xs0m89b"
	other  = "20261121100840-other01"
)

func kernel(t *testing.T) *siyuantest.Kernel {
	k := siyuantest.New(t, "tok")
	k.AddNotebook(box, "RAG Probe")
	k.AddNotebook(box2, "Private")
	must(t, k.PutDoc(box, parent, "", "/Parent", siyuantest.Block{ID: "20261121100800-ppara01", Type: "p", Content: "Parent text.", Markdown: "Parent text."}))
	must(t, k.PutDoc(box, child, parent, "/Parent/Child", siyuantest.Block{ID: "20261121100801-cpara01", Type: "p", Content: "Child text.", Markdown: "Child text."}))
	must(t, k.PutDoc(box, probe, "", "/Probe Doc", bigDoc(100)...))
	must(t, k.PutDoc(box2, other, "", "/Diary", siyuantest.Block{ID: "20261121100840-opara01", Type: "p", Content: "Secret.", Markdown: "Secret."}))
	return k
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReconcileSyncsEverythingOnceThenOnlyWhatChangedOrWentMissing(t *testing.T) {
	k := kernel(t)
	must(t, k.Duplicate("20261121100999-para000"))
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Exclude: []string{"Private"}}, bus.NewMemKV(), out.publish, zerolog.Nop())
	ctx := context.Background()
	st, err := src.Reconcile(ctx, nil)
	if err != nil || st.Docs != 3 || st.Sent != 3 || st.Deleted != 0 {
		t.Fatalf("initial sync: %+v, %v", st, err)
	}
	evs := out.since(0)
	if !has(evs, probe, false, func(e *schemas.DocChanged) bool { return len(e.Blocks) == 105 }) || has(evs, other, false, nil) {
		t.Fatalf("initial sync sent the wrong documents (the probe with 105 blocks, nothing from Private)")
	}
	if st, _ := src.Reconcile(ctx, nil); st.Sent != 0 || st.Unchanged != 3 || out.len() != 3 {
		t.Errorf("nothing changed, yet: %+v", st)
	}
	// An edit, a removed document with its child, and a block that left the
	// index without its document's updated moving: all found by comparing.
	must(t, k.EditDoc(probe, func(bs []siyuantest.Block) []siyuantest.Block {
		return append(bs, siyuantest.Block{ID: "20261121101000-newpara", Type: "p", Content: "New.", Markdown: "New."})
	}))
	gone, err := k.RemoveDoc(parent)
	if err != nil || len(gone) != 2 {
		t.Fatalf("removed %v, %v", gone, err)
	}
	n := out.len()
	st, err = src.Reconcile(ctx, nil)
	if err != nil || st.Sent != 1 || st.Deleted != 2 {
		t.Fatalf("after changes: %+v, %v", st, err)
	}
	evs = out.since(n)
	if !has(evs, probe, false, hasBlock("20261121101000-newpara")) || !has(evs, parent, true, nil) || !has(evs, child, true, nil) {
		t.Errorf("reconciliation sent %d events without the edit or the deletions", len(evs))
	}
	must(t, k.DropRow("20261121100999-para000"))
	n = out.len()
	if st, err := src.Reconcile(ctx, nil); err != nil || st.Sent != 1 {
		t.Fatalf("a block gone with updated unchanged: %+v, %v", st, err)
	}
	if evs := out.since(n); len(evs) != 1 || hasBlock("20261121100999-para000")(evs[0]) || len(evs[0].Blocks) != 105 {
		t.Errorf("the document was not sent again without the block")
	}
	if src.Status().DocsSynced != 1 || src.Status().LastReconcile.IsZero() {
		t.Errorf("status = %+v", src.Status())
	}
}

func TestTheLiveBridgeFollowsEditsMovesAndRemovalsAndCatchesUpAfterADisconnect(t *testing.T) {
	k := kernel(t)
	k.SetAsync(true) // SQL lags as in the real kernel: the bridge must flush
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond, Reconcile: time.Hour},
		bus.NewMemKV(), out.publish, zerolog.Nop())
	must(t, k.Flush())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	out.waitFor(t, 0, "the initial sync", func(evs []*schemas.DocChanged) bool { return len(evs) == 4 })
	for k.Connected() == 0 {
		time.Sleep(10 * time.Millisecond)
	}

	step := func(what string, do func() error, ok func([]*schemas.DocChanged) bool) {
		t.Helper()
		n := out.len()
		must(t, do())
		out.waitFor(t, n, what, ok)
	}
	step("an insert", func() error {
		return k.EditDoc(probe, func(bs []siyuantest.Block) []siyuantest.Block {
			return append([]siyuantest.Block{{ID: "20261121101100-first01", Type: "p", Content: "Inserted first.", Markdown: "Inserted first."}}, bs...)
		})
	}, func(evs []*schemas.DocChanged) bool {
		return has(evs, probe, false, func(e *schemas.DocChanged) bool { return e.Blocks[0].ID == "20261121101100-first01" })
	})
	step("an update", func() error {
		return k.EditDoc(probe, func(bs []siyuantest.Block) []siyuantest.Block {
			bs[0].Content = "Inserted first, then edited."
			return bs
		})
	}, func(evs []*schemas.DocChanged) bool {
		return has(evs, probe, false, func(e *schemas.DocChanged) bool { return e.Blocks[0].Text == "Inserted first, then edited." })
	})
	step("a move between documents", func() error { return k.MoveBlock("20261121101100-first01", probe, child) },
		func(evs []*schemas.DocChanged) bool {
			return has(evs, child, false, hasBlock("20261121101100-first01")) &&
				has(evs, probe, false, func(e *schemas.DocChanged) bool { return !hasBlock("20261121101100-first01")(e) })
		})
	step("a deleted block", func() error {
		return k.EditDoc(probe, func(bs []siyuantest.Block) []siyuantest.Block { return bs[:len(bs)-1] })
	}, func(evs []*schemas.DocChanged) bool {
		return has(evs, probe, false, func(e *schemas.DocChanged) bool { return len(e.Blocks) == 104 })
	})
	step("a renamed document: its child's title path changes too", func() error { return k.RenameDoc(parent, "Renamed") },
		func(evs []*schemas.DocChanged) bool {
			return has(evs, parent, false, func(e *schemas.DocChanged) bool { return e.Title == "Renamed" }) &&
				has(evs, child, false, func(e *schemas.DocChanged) bool {
					return slices.Equal(e.TitlePath, []string{"RAG Probe", "Renamed", "Child"})
				})
		})
	step("a removed document with its child", func() error { _, err := k.RemoveDoc(parent); return err },
		func(evs []*schemas.DocChanged) bool { return has(evs, parent, true, nil) && has(evs, child, true, nil) })
	step("a removed notebook", func() error { return k.RemoveNotebook(box2) },
		func(evs []*schemas.DocChanged) bool { return has(evs, other, true, nil) })

	// Disconnected, the bridge misses a removal; reconnecting, it finds it.
	k.SetOffline(true)
	deadline := time.Now().Add(5 * time.Second)
	for src.Status().Connected && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if src.Status().Connected {
		t.Fatal("the bridge did not notice the disconnect")
	}
	n := out.len()
	gone := "20261121100850-para149"
	must(t, k.EditDoc(probe, func(bs []siyuantest.Block) []siyuantest.Block {
		return slices.DeleteFunc(bs, func(b siyuantest.Block) bool { return b.ID == gone })
	}))
	must(t, k.Flush())
	k.SetOffline(false)
	out.waitFor(t, n, "the missed delete, after reconnecting", func(evs []*schemas.DocChanged) bool {
		return has(evs, probe, false, func(e *schemas.DocChanged) bool { return !hasBlock(gone)(e) })
	})
	if st := src.Status(); !st.Connected || st.LastEvent.IsZero() {
		t.Errorf("status = %+v", st)
	}
}

func TestAnInvalidTokenStopsTheBridgeWithAClearError(t *testing.T) {
	k := kernel(t)
	var out sent
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "nope"}, bus.NewMemKV(), out.publish, zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := src.Run(ctx)
	if !errors.Is(err, siyuan.ErrAuth) || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v)", err, ctx.Err())
	}
	if st := src.Status(); st.Connected || st.Error == "" || out.len() != 0 {
		t.Errorf("status %+v, %d sent", st, out.len())
	}
}

// State written before block spans existed (no "format") makes the next
// reconciliation send every document once more, with a newer version, so
// that the index gets their block spans.
func TestReconcileSendsEveryDocumentOnceMoreAfterAFormatChange(t *testing.T) {
	k := kernel(t)
	var out sent
	kv := bus.NewMemKV()
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Exclude: []string{"Private"}}, kv, out.publish, zerolog.Nop())
	ctx := context.Background()
	if st, err := src.Reconcile(ctx, nil); err != nil || st.Sent != 3 {
		t.Fatalf("initial sync: %+v, %v", st, err)
	}
	first := map[string]int64{}
	for _, e := range out.since(0) {
		first[e.DocID] = e.Version
	}
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := 0
	for _, key := range keys {
		raw, err := kv.Get(ctx, key)
		if err != nil || raw == nil {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m["format"] == nil {
			continue
		}
		delete(m, "format")
		raw, _ = json.Marshal(m)
		must(t, kv.Put(ctx, key, raw))
		old++
	}
	if old != 3 {
		t.Fatalf("%d document states carried a format, want 3", old)
	}
	n := out.len()
	st, err := src.Reconcile(ctx, nil)
	if err != nil || st.Sent != 3 {
		t.Fatalf("after the format change: %+v, %v", st, err)
	}
	for _, e := range out.since(n) {
		if e.Version <= first[e.DocID] {
			t.Errorf("%s sent again at version %d, not after %d", e.DocID, e.Version, first[e.DocID])
		}
	}
	if st, _ := src.Reconcile(ctx, nil); st.Sent != 0 || st.Unchanged != 3 {
		t.Errorf("a third reconciliation: %+v, want nothing sent", st)
	}
}
