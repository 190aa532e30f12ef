package system_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// longNote writes a Markdown note of several sections, each long enough for
// a chunk of its own, with a word found only in that section ("marker0",
// "marker1"...). It returns the note's path and the markers.
func longNote(t *testing.T, dir string, sections int) (string, []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# Field notes\n\n")
	var markers []string
	for s := 0; s < sections; s++ {
		marker := fmt.Sprintf("marker%d", s)
		markers = append(markers, marker)
		fmt.Fprintf(&b, "## Section %d\n\n%s", s, marker)
		for w := 0; w < 320; w++ {
			fmt.Fprintf(&b, " word%d", (s*1000+w)%97)
		}
		b.WriteString(".\n\n")
	}
	path := filepath.Join(dir, "field.md")
	writeFile(t, path, b.String())
	return path, markers
}

// syncWith is syncPaths with options.
func syncWith(t *testing.T, b *bus.Bus, opts files.SyncOptions, paths ...string) files.SyncStats {
	t.Helper()
	ctx := context.Background()
	kv, err := b.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	stats, _, err := files.Sync(ctx, paths, kv, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := b.Publish(ctx, ev, "test-trace")
		return err
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// ingestLimit caps KB_INGEST at max messages, refusing new ones beyond it
// (as a full disk refuses them); max -1 lifts the cap.
func ingestLimit(t *testing.T, b *bus.Bus, max int64) {
	t.Helper()
	ctx := context.Background()
	st, err := b.JS.Stream(ctx, stage.StreamIngest)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = max
	cfg.Discard = jetstream.DiscardOld
	if max >= 0 {
		cfg.Discard = jetstream.DiscardNew
	}
	if _, err := b.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("limit %s to %d messages: %v", stage.StreamIngest, max, err)
	}
}

// assertAllIndexed checks that the index holds every chunk of the note and
// finds every section's marker.
func assertAllIndexed(t *testing.T, sys *system.System, want int, markers []string) {
	t.Helper()
	ctx := context.Background()
	docs, chunks, err := sys.Store.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if docs != 1 || chunks != want {
		t.Errorf("index holds %d documents and %d chunks, want 1 and %d", docs, chunks, want)
	}
	for _, m := range markers {
		if hits, err := sys.Store.Search(ctx, m, store.SearchOptions{}); err != nil || len(hits) != 1 {
			t.Errorf("search %q: %v, %d hits, want 1", m, err, len(hits))
		}
	}
}

// manifestChunks is how many chunks the chunk stage's manifest of docID
// lists (0 when there is none).
func manifestChunks(t *testing.T, b *bus.Bus, docID string) int {
	t.Helper()
	ctx := context.Background()
	kv, err := b.KV(ctx, stage.BucketChunks)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := kv.Get(ctx, chunk.ManifestKey(docID))
	if err != nil {
		t.Fatal(err)
	}
	if raw == nil {
		return 0
	}
	var mf struct {
		Chunks []json.RawMessage `json:"chunks"`
	}
	if err := json.Unmarshal(raw, &mf); err != nil {
		t.Fatal(err)
	}
	return len(mf.Chunks)
}

// TestAChunkPublishThatFailsLeavesNoManifestAndAReplayIndexesEveryChunk
// fills KB_INGEST while a document is chunked: its chunks cannot be
// published, the change is retried and dead-lettered. The chunk stage must
// not have recorded those chunks as sent: once there is room again, a
// replay of the dead letter indexes every chunk.
func TestAChunkPublishThatFailsLeavesNoManifestAndAReplayIndexesEveryChunk(t *testing.T) {
	dir := t.TempDir()
	sys := start(t, dir)
	ctx := context.Background()
	vault := t.TempDir()
	path, markers := longNote(t, vault, 4)
	docID := notes.MarkdownDocID(path)

	ingestLimit(t, sys.Bus, 1) // room for the document, none for its chunks
	if s := syncWith(t, sys.Bus, files.SyncOptions{}, vault); s.Sent != 1 {
		t.Fatalf("sync = %+v, want 1 sent", s)
	}
	var letters []bus.DeadLetter
	deadline := time.Now().Add(90 * time.Second)
	for len(letters) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the chunk stage never gave up on the document whose chunks could not be published")
		}
		time.Sleep(200 * time.Millisecond)
		var err error
		if letters, err = sys.Bus.DeadLetters(ctx, chunk.Stage().Name); err != nil {
			t.Fatal(err)
		}
	}
	if n := manifestChunks(t, sys.Bus, docID); n != 0 {
		t.Errorf("after every publish failed, the manifest lists %d chunks, want none", n)
	}

	ingestLimit(t, sys.Bus, -1)
	if _, err := sys.Bus.Replay(ctx, letters); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sys.Bus)
	want := manifestChunks(t, sys.Bus, docID)
	if want < 3 {
		t.Fatalf("the manifest lists %d chunks, want at least 3", want)
	}
	assertAllIndexed(t, sys, want, markers)
}

// TestForceResendsChunksLostFromTheIndex removes a document's chunks from
// the index behind the pipeline's back; `ingest --force` (files.Sync with
// Force) must bring them back although the chunk stage's manifest lists them.
func TestForceResendsChunksLostFromTheIndex(t *testing.T) {
	dir := t.TempDir()
	sys := start(t, dir)
	vault := t.TempDir()
	path, markers := longNote(t, vault, 4)
	syncWith(t, sys.Bus, files.SyncOptions{}, vault)
	waitIdle(t, sys.Bus)
	want := manifestChunks(t, sys.Bus, notes.MarkdownDocID(path))
	if want < 3 {
		t.Fatalf("the manifest lists %d chunks, want at least 3", want)
	}
	assertAllIndexed(t, sys, want, markers)

	db, err := sql.Open("sqlite", "file:"+system.DBPath(dir)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM chunks`); err != nil {
		t.Fatalf("lose the chunks: %v", err)
	}
	db.Close()
	if _, chunks, _ := sys.Store.Counts(context.Background()); chunks != 0 {
		t.Fatalf("after deleting them, %d chunks are left", chunks)
	}

	if s := syncWith(t, sys.Bus, files.SyncOptions{}, vault); s.Sent != 0 {
		t.Fatalf("a plain sync of the unchanged note = %+v, want nothing sent", s)
	}
	if s := syncWith(t, sys.Bus, files.SyncOptions{Force: true}, vault); s.Sent != 1 {
		t.Fatalf("a forced sync = %+v, want 1 sent", s)
	}
	waitIdle(t, sys.Bus)
	assertAllIndexed(t, sys, want, markers)
}
