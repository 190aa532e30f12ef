package system_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	_ "modernc.org/sqlite"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/internal/system/systemtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/embed"
	"github.com/exocortex/exocortex/workers/index"
)

const guide = "../../../shared/eval/siyuan-guide"

// The helpers of internal/system/systemtest under the names these tests
// have always used.
var (
	testLog   = systemtest.Log
	start     = systemtest.Start
	syncPaths = systemtest.SyncPaths
	waitIdle  = systemtest.WaitIdle
	writeFile = systemtest.WriteFile
)

func needGuide(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(guide); err != nil {
		t.Skipf("SiYuan guide not found at %s (../shared beside the repo): %v", guide, err)
	}
}

// rowCounts counts rows straight from the database file: chunks, FTS rows,
// and chunk ids that occur more than once.
func rowCounts(t *testing.T, dir string) (chunks, fts, dupIDs int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+system.DBPath(dir)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := func(s string) int {
		var n int
		if err := db.QueryRow(s).Scan(&n); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return n
	}
	return q(`SELECT count(*) FROM chunks`), q(`SELECT count(*) FROM chunks_fts`),
		q(`SELECT count(*) FROM (SELECT chunk_id FROM chunks GROUP BY chunk_id HAVING count(*) > 1)`)
}

func TestIngestingTheSiYuanGuideMakesItsBlocksSearchable(t *testing.T) {
	needGuide(t)
	dir := t.TempDir()
	sys := start(t, dir)
	stats := syncPaths(t, sys.Bus, guide)
	if stats.Sent != 73 || stats.Failed != 0 {
		t.Fatalf("sync = %+v, want 73 sent", stats)
	}
	waitIdle(t, sys.Bus)
	docs, chunks, err := sys.Store.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if docs != 73 || chunks < 73 {
		t.Fatalf("index holds %d documents, %d chunks", docs, chunks)
	}
	hits, err := sys.Store.Search(context.Background(), "database view", store.SearchOptions{K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		t.Fatal("no hits for 'database view'")
	}
	id := regexp.MustCompile(`^\d{14}-[0-9a-z]+$`)
	for _, h := range hits {
		if !id.MatchString(h.BlockID) || len(h.SectionPath) < 2 || h.SectionPath[0] != "SiYuan User Guide" {
			t.Errorf("hit %+v lacks a SiYuan block id or section path", h)
		}
	}
	if !strings.Contains(strings.ToLower(hits[0].Text), "database") {
		t.Errorf("top hit does not mention databases: %q", hits[0].Text)
	}

	// A second sync of the unchanged notebook publishes nothing.
	again := syncPaths(t, sys.Bus, guide)
	if again.Sent != 0 || again.Unchanged != 73 {
		t.Errorf("re-ingest of unchanged files = %+v, want 0 sent", again)
	}
}

func TestAMalformedEventIsDeadLetteredAndIndexingGoesOn(t *testing.T) {
	dir := t.TempDir()
	sys := start(t, dir)
	ctx := context.Background()
	m := nats.NewMsg(schemas.SubjectDocChanged)
	m.Data = []byte(`{"type":"kb.doc.changed.v1","doc_id":`)
	if _, err := sys.Bus.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "note.md"), "# Garden\n\nTomatoes need full sun and deep watering.\n")
	syncPaths(t, sys.Bus, vault)
	waitIdle(t, sys.Bus)

	letters, err := sys.Bus.DeadLetters(ctx, chunk.Stage().Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 1 || !strings.Contains(letters[0].Reason, "malformed") || letters[0].Subject != schemas.SubjectDocChanged {
		t.Fatalf("dead letters = %+v, want one malformed kb.doc.changed", letters)
	}
	hits, err := sys.Store.Search(ctx, "tomatoes sun", store.SearchOptions{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("after the bad event, the good note is not indexed: %v %+v", err, hits)
	}
}

func TestEditsReindexOnlyWhatChangedAndDeletesRemoveChunks(t *testing.T) {
	dir := t.TempDir()
	sys := start(t, dir)
	ctx := context.Background()
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "a.md"), "# Alpha\n\nThe quick brown fox.\n")
	writeFile(t, filepath.Join(vault, "b.md"), "# Beta\n\nSlow green turtles.\n")
	if s := syncPaths(t, sys.Bus, vault); s.Sent != 2 {
		t.Fatalf("first sync = %+v", s)
	}
	waitIdle(t, sys.Bus)

	writeFile(t, filepath.Join(vault, "a.md"), "# Alpha\n\nThe quick purple zebra.\n")
	if s := syncPaths(t, sys.Bus, vault); s.Sent != 1 || s.Unchanged != 1 {
		t.Fatalf("after editing a.md, sync = %+v, want 1 sent 1 unchanged", s)
	}
	waitIdle(t, sys.Bus)
	if hits, _ := sys.Store.Search(ctx, "fox", store.SearchOptions{}); len(hits) != 0 {
		t.Errorf("old text still found: %+v", hits)
	}
	if hits, _ := sys.Store.Search(ctx, "zebra", store.SearchOptions{}); len(hits) != 1 {
		t.Errorf("new text not found: %+v", hits)
	}

	if err := os.Remove(filepath.Join(vault, "b.md")); err != nil {
		t.Fatal(err)
	}
	if s := syncPaths(t, sys.Bus, vault); s.Deleted != 1 {
		t.Fatalf("after deleting b.md, sync = %+v, want 1 deleted", s)
	}
	waitIdle(t, sys.Bus)
	if hits, _ := sys.Store.Search(ctx, "turtles", store.SearchOptions{}); len(hits) != 0 {
		t.Errorf("deleted note still found: %+v", hits)
	}
	docs, _, _ := sys.Store.Counts(ctx)
	if docs != 1 {
		t.Errorf("documents = %d, want 1", docs)
	}
}

// TestKillingTheIndexStageMidIngestIndexesEveryChunkExactlyOnce runs the chunk
// stage in one "process" and the index stage in another (its own NATS
// connection and database handle). The index process dies without acking in
// the middle of the ingest: its last write is committed but unacknowledged
// and a batch of fetched messages is never handled. A new index process
// finishes the job: the counts match a clean run, with no duplicates.
func TestKillingTheIndexStageMidIngestIndexesEveryChunkExactlyOnce(t *testing.T) {
	needGuide(t)
	ctx := context.Background()

	clean := t.TempDir()
	sys := start(t, clean)
	syncPaths(t, sys.Bus, guide)
	waitIdle(t, sys.Bus)
	wantChunks, wantFTS, _ := rowCounts(t, clean)
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	main, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Stages: []string{chunk.Stage().Name, embed.Stage().Name}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = main.Stop() })
	spec := index.Stage().Spec()
	spec.AckWait = 2 * time.Second // redeliver the dead process's messages quickly
	if err := bus.EnsureTopology(ctx, main.Bus.JS, bus.Topology{Stages: []bus.StageSpec{spec}}); err != nil {
		t.Fatal(err)
	}

	// First index process: dies after its 200th write, before acking it.
	victim, err := bus.Open(ctx, bus.Options{URL: main.Bus.Server.ClientURL(), Creds: bus.ClientCredentials(dir, bus.Credentials{}), Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	st1, err := store.Open(system.DBPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	killed := make(chan struct{})
	real := index.NewHandler(st1)
	h := bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		if handled.Load() >= 200 {
			return nil, errors.New("process is dead") // messages still in the dead client's hands
		}
		out, err := real.Handle(ctx, m)
		if handled.Add(1) == 200 {
			victim.NC.Close() // the process dies: no ack for this or anything in hand
			close(killed)
		}
		return out, err
	})
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = victim.RunStage(context.Background(), spec, h, bus.RunOptions{Batch: 64})
	}()
	syncPaths(t, main.Bus, guide)
	select {
	case <-killed:
	case <-time.After(time.Minute):
		t.Fatal("index stage never reached 200 messages")
	}
	<-runDone
	_ = st1.Close()
	if c, _, _ := rowCounts(t, dir); c >= wantChunks {
		t.Fatalf("the kill came too late: %d of %d chunks already indexed", c, wantChunks)
	}

	// Second index process picks up where the first died.
	survivor, err := bus.Open(ctx, bus.Options{URL: main.Bus.Server.ClientURL(), Creds: bus.ClientCredentials(dir, bus.Credentials{}), Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := store.Open(system.DBPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	go func() { _ = survivor.RunStage(runCtx, spec, index.NewHandler(st2), bus.RunOptions{Batch: 64}) }()
	waitIdle(t, main.Bus)
	stop()
	survivor.Close()
	_ = st2.Close()

	gotChunks, gotFTS, dups := rowCounts(t, dir)
	if gotChunks != wantChunks || gotFTS != wantFTS || dups != 0 {
		t.Errorf("after kill and restart: %d chunks, %d fts rows, %d duplicate ids; clean run: %d chunks, %d fts rows",
			gotChunks, gotFTS, dups, wantChunks, wantFTS)
	}
	if handled.Load() < 200 {
		t.Errorf("victim handled %d messages", handled.Load())
	}
}
