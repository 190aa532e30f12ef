package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

func openStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "exocortex.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// msg stamps and marshals ev as the bus would deliver it.
func msg(t *testing.T, ev schemas.Event) *bus.Msg {
	t.Helper()
	subject := schemas.Stamp(ev, "trace")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &bus.Msg{Subject: subject, Data: data, Delivered: 1, TraceID: "trace"}
}

func handle(t *testing.T, h bus.Handler, m *bus.Msg) {
	t.Helper()
	out, err := h.Handle(context.Background(), m)
	if err != nil {
		t.Fatalf("%s: %v", m.Subject, err)
	}
	if len(out) != 0 {
		t.Fatalf("%s: produced %d events, want none", m.Subject, len(out))
	}
}

func chunk(id, text string) *schemas.ChunkCreated {
	return &schemas.ChunkCreated{ChunkID: id, DocID: "d1", DocVersion: 1, Hash: "h-" + text, Text: text,
		BlockIDs: []string{"b-" + id}, Lang: "en"}
}

func TestHandlerIndexesChunksAndStructures(t *testing.T) {
	st, _ := openStore(t)
	h := NewHandler(st)
	ctx := context.Background()

	for _, c := range []*schemas.ChunkCreated{chunk("c1", "ravens are clever birds"), chunk("c2", "crows use tools")} {
		m := msg(t, c)
		handle(t, h, m)
		handle(t, h, m) // redelivered
	}
	handle(t, h, msg(t, &schemas.DocStructure{DocID: "d1", Title: "Corvids", Path: "birds/corvids.md", Hash: "dh",
		Version: 1, ChunkIDs: []string{"c1", "c2"},
		Blocks: []schemas.BlockNode{{ID: "b-c1", Type: schemas.BlockParagraph}, {ID: "b-c2", Type: schemas.BlockParagraph}}}))

	docs, chunks, err := st.Counts(ctx)
	if err != nil || docs != 1 || chunks != 2 {
		t.Fatalf("Counts = %d, %d, %v; want 1, 2", docs, chunks, err)
	}
	hits, err := st.Search(ctx, "clever ravens", store.SearchOptions{})
	if err != nil || len(hits) != 1 || hits[0].ChunkID != "c1" || hits[0].Title != "Corvids" || hits[0].BlockID != "b-c1" {
		t.Fatalf("search: %+v, %v", hits, err)
	}
	if edges, err := st.Neighbors(ctx, "b-c1", store.EdgeNext); err != nil || len(edges) != 1 || edges[0].Dst != "b-c2" {
		t.Fatalf("next of b-c1: %+v, %v", edges, err)
	}

	tomb := &schemas.ChunkCreated{ChunkID: "c2", DocID: "d1", DocVersion: 2, Hash: "h-crows use tools", Tombstone: true}
	handle(t, h, msg(t, tomb))
	handle(t, h, msg(t, &schemas.DocStructure{DocID: "d1", Version: 3, Deleted: true}))
	if docs, chunks, _ := st.Counts(ctx); docs != 0 || chunks != 0 {
		t.Fatalf("after tombstone and delete: %d docs, %d chunks", docs, chunks)
	}
}

func TestHandlerRejectsWhatNoRetryCanFix(t *testing.T) {
	st, _ := openStore(t)
	h := NewHandler(st)
	wrongType := msg(t, &schemas.DocStructure{DocID: "d1", Version: 1})
	wrongType.Subject = schemas.SubjectChunkCreated
	noHash := msg(t, chunk("c1", "x"))
	noHash.Data = []byte(strings.Replace(string(noHash.Data), `"hash":"h-x"`, `"hash":""`, 1))

	for _, tc := range []struct {
		name string
		m    *bus.Msg
		want string
	}{
		{"malformed JSON on kb.chunk.created", &bus.Msg{Subject: schemas.SubjectChunkCreated, Data: []byte(`{"type":`)}, "malformed"},
		{"malformed JSON on kb.doc.structure", &bus.Msg{Subject: schemas.SubjectDocStructure, Data: []byte(`not json`)}, "malformed"},
		{"an envelope without a type", &bus.Msg{Subject: schemas.SubjectChunkCreated, Data: []byte(`{"chunk_id":"c1"}`)}, "type"},
		{"a structure on the chunk subject", wrongType, "want ChunkCreated"},
		{"a chunk without a hash", noHash, "hash"},
		{"an unknown subject", &bus.Msg{Subject: "kb.something.else", Data: []byte(`{}`)}, "kb.something.else"},
	} {
		_, err := h.Handle(context.Background(), tc.m)
		if err == nil || !bus.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v (permanent %v), want a permanent error mentioning %q", tc.name, err, bus.IsPermanent(err), tc.want)
		}
	}
	if _, chunks, _ := st.Counts(context.Background()); chunks != 0 {
		t.Fatalf("%d chunks stored from rejected messages", chunks)
	}
}

func TestHandlerRetriesWhenTheDatabaseIsLocked(t *testing.T) {
	st, path := openStore(t)
	// Another connection holds the write lock.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	h := New(Config{DBPath: path, WriteTimeout: 300 * time.Millisecond}, st)
	m := msg(t, chunk("c1", "waiting for the lock"))
	start := time.Now()
	_, err = h.Handle(context.Background(), m)
	if err == nil || bus.IsPermanent(err) || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("err = %v (permanent %v), want a retryable error naming the chunk", err, bus.IsPermanent(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the write gave up after %s, want about the write timeout", d)
	}

	// Once the lock is released, the redelivery succeeds.
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	handle(t, h, m)
}

// failing is a Store whose every write fails like a busy database.
type failing struct{ err error }

func (f failing) UpsertChunk(context.Context, *schemas.ChunkCreated) (bool, error) {
	return false, f.err
}
func (f failing) ApplyStructure(context.Context, *schemas.DocStructure) (bool, error) {
	return false, f.err
}

func TestHandlerErrorsSayWhatFailed(t *testing.T) {
	busy := errors.New("database is locked (5) (SQLITE_BUSY)")
	h := New(DefaultConfig(), failing{busy})
	for _, ev := range []schemas.Event{chunk("c9", "x"), &schemas.DocStructure{DocID: "d9", Version: 1}} {
		_, err := h.Handle(context.Background(), msg(t, ev))
		if !errors.Is(err, busy) || bus.IsPermanent(err) {
			t.Errorf("%T: err = %v, want the busy error, retryable", ev, err)
		}
	}
	invalid := New(DefaultConfig(), failing{store.ErrInvalid})
	if _, err := invalid.Handle(context.Background(), msg(t, chunk("c9", "x"))); !bus.IsPermanent(err) {
		t.Errorf("store.ErrInvalid: err = %v, want permanent", err)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	err := Config{}.Validate()
	if err == nil || !strings.Contains(err.Error(), "db_path") || !strings.Contains(err.Error(), "write_timeout") {
		t.Fatalf("empty config: %v", err)
	}
}

// bigStructure is a document of n blocks, each referring to refs targets:
// n rows in blocks and about n*(4+refs) in edges.
func bigStructure(n, refs int) *schemas.DocStructure {
	d := &schemas.DocStructure{DocID: "big", Title: "Big", Path: "big.md", Hash: "bh", Version: 1}
	for i := 0; i < n; i++ {
		b := schemas.BlockNode{ID: fmt.Sprintf("b%05d", i), Type: schemas.BlockParagraph}
		for j := 0; j < refs; j++ {
			b.Refs = append(b.Refs, fmt.Sprintf("t%05d-%04d", i, j))
		}
		d.Blocks = append(d.Blocks, b)
	}
	return d
}

func TestALargeStructureIsWrittenWholeWhileItMakesProgress(t *testing.T) {
	st, path := openStore(t)
	// The write takes far longer than the timeout (and than a millisecond
	// per block on top), but every row is progress.
	h := New(Config{DBPath: path, WriteTimeout: time.Second}, st)
	d := bigStructure(100, 2000)
	start := time.Now()
	handle(t, h, msg(t, d))
	took := time.Since(start)
	if took < time.Second+time.Duration(len(d.Blocks))*time.Millisecond {
		t.Logf("the write took only %s: the test shows nothing on this machine", took)
	}
	docs, _, err := st.Counts(context.Background())
	if err != nil || docs != 1 {
		t.Fatalf("documents = %d, %v; want the large document", docs, err)
	}
	edges, err := st.Neighbors(context.Background(), "b00099", store.EdgeRef)
	if err != nil || len(edges) != 2000 {
		t.Fatalf("refs of the last block: %d, %v; want 2000", len(edges), err)
	}
}

func TestAStructureWriteThatMakesNoProgressTimesOut(t *testing.T) {
	st, path := openStore(t)
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	h := New(Config{DBPath: path, WriteTimeout: 300 * time.Millisecond}, st)
	m := msg(t, bigStructure(2000, 0))
	start := time.Now()
	_, err = h.Handle(context.Background(), m)
	if err == nil || bus.IsPermanent(err) || !strings.Contains(err.Error(), "big") {
		t.Fatalf("err = %v (permanent %v), want a retryable error naming the document", err, bus.IsPermanent(err))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the stuck write gave up after %s, want about the write timeout", d)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	handle(t, h, m)
}
