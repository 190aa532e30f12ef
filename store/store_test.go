package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func hashOf(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

func chunkEv(id, doc string, version int64, text string) *schemas.ChunkCreated {
	return &schemas.ChunkCreated{
		ChunkID: id, DocID: doc, DocVersion: version, Hash: hashOf(text), Text: text,
		BlockIDs: []string{id + "-b1", id + "-b2"}, Lang: "en", SectionPath: []string{"Notes", "Section"},
	}
}

func tombstone(id, doc string, version int64) *schemas.ChunkCreated {
	return &schemas.ChunkCreated{ChunkID: id, DocID: doc, DocVersion: version, Hash: "gone", Tombstone: true}
}

func structure(doc string, version int64, chunkIDs ...string) *schemas.DocStructure {
	return &schemas.DocStructure{DocID: doc, Source: schemas.SourceMarkdown, Path: doc + ".md",
		Title: "Title of " + doc, Hash: fmt.Sprint("h", version), Version: version, ChunkIDs: chunkIDs}
}

func count(t testing.TB, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantRows checks the row counts of chunks and chunks_fts, which must
// agree: every chunk of an indexed document has its full-text row, and a
// chunk held until its document's structure arrives has none.
func wantRows(t testing.TB, s *Store, want int) {
	t.Helper()
	c, f := count(t, s, "chunks"), count(t, s, "chunks_fts")
	held := count(t, s, "chunks WHERE doc_id NOT IN (SELECT doc_id FROM documents)")
	if c != want || f != want-held {
		t.Fatalf("chunks=%d chunks_fts=%d (%d held without a document), want %d chunks, each of a document with its full-text row", c, f, held, want)
	}
}

func mustUpsert(t testing.TB, s *Store, c *schemas.ChunkCreated, wantApplied bool) {
	t.Helper()
	applied, err := s.UpsertChunk(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if applied != wantApplied {
		t.Fatalf("upsert %s v%d tombstone=%v: applied=%v, want %v", c.ChunkID, c.DocVersion, c.Tombstone, applied, wantApplied)
	}
}

func mustApply(t testing.TB, s *Store, d *schemas.DocStructure, wantApplied bool) {
	t.Helper()
	applied, err := s.ApplyStructure(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if applied != wantApplied {
		t.Fatalf("apply %s v%d deleted=%v: applied=%v, want %v", d.DocID, d.Version, d.Deleted, applied, wantApplied)
	}
}

func search(t testing.TB, s *Store, q string, opts SearchOptions) []Hit {
	t.Helper()
	hits, err := s.Search(context.Background(), q, opts)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return hits
}

func hitIDs(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ChunkID)
	}
	return out
}

func TestUpsertingTheSameChunkTwiceLeavesOneRowInEachTable(t *testing.T) {
	s := openTest(t)
	c := chunkEv("c1", "d1", 1, "the quick brown fox")
	mustUpsert(t, s, c, true)
	mustUpsert(t, s, c, false)
	wantRows(t, s, 1)

	// Same version, new content: replaced in place, still one row each.
	mustApply(t, s, structure("d1", 1, "c1"), true)
	wantRows(t, s, 1)
	c2 := chunkEv("c1", "d1", 1, "a lazy dog sleeps")
	mustUpsert(t, s, c2, true)
	wantRows(t, s, 1)
	if hits := search(t, s, "fox", SearchOptions{}); len(hits) != 0 {
		t.Fatalf("old text still indexed: %v", hitIDs(hits))
	}
	if hits := search(t, s, "dog", SearchOptions{}); len(hits) != 1 {
		t.Fatalf("new text not indexed: %v", hitIDs(hits))
	}
	got, err := s.Chunk(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != c2.Text || got.Hash != c2.Hash || !slices.Equal(got.BlockIDs, c2.BlockIDs) || !slices.Equal(got.SectionPath, c2.SectionPath) {
		t.Fatalf("stored chunk %+v", got)
	}
}

func TestWritesAreOrderedByDocVersion(t *testing.T) {
	s := openTest(t)
	mustUpsert(t, s, chunkEv("c1", "d1", 2, "version two"), true)

	mustUpsert(t, s, chunkEv("c1", "d1", 1, "version one"), false)
	if c, _ := s.Chunk(context.Background(), "c1"); c.Text != "version two" {
		t.Fatalf("an older write replaced the chunk: %q", c.Text)
	}
	mustUpsert(t, s, tombstone("c1", "d1", 1), false)
	wantRows(t, s, 1)

	mustUpsert(t, s, chunkEv("c1", "d1", 3, "version three"), true)
	if c, _ := s.Chunk(context.Background(), "c1"); c.Text != "version three" || c.Version != 3 {
		t.Fatalf("a newer write was not applied: %+v", c)
	}
	wantRows(t, s, 1)

	mustUpsert(t, s, tombstone("c1", "d1", 3), true)
	wantRows(t, s, 0)
	if _, err := s.Chunk(context.Background(), "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Chunk after tombstone: %v, want ErrNotFound", err)
	}
	mustUpsert(t, s, tombstone("c1", "d1", 3), false) // nothing left to delete
}

func TestInvalidEventsAreRejected(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for name, c := range map[string]*schemas.ChunkCreated{
		"nil":       nil,
		"no id":     {DocID: "d", Hash: "h"},
		"no doc id": {ChunkID: "c", Hash: "h"},
		"no hash":   {ChunkID: "c", DocID: "d"},
	} {
		if _, err := s.UpsertChunk(ctx, c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.ApplyStructure(ctx, &schemas.DocStructure{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("structure without doc id: %v, want ErrInvalid", err)
	}
}

func TestApplyStructureDeletesUnlistedChunksUpToItsVersion(t *testing.T) {
	s := openTest(t)
	mustUpsert(t, s, chunkEv("a", "d1", 1, "alpha"), true)
	mustUpsert(t, s, chunkEv("b", "d1", 1, "beta"), true)
	mustUpsert(t, s, chunkEv("c", "d1", 1, "gamma"), true)      // tombstone for it was missed
	mustUpsert(t, s, chunkEv("n", "d1", 3, "newer"), true)      // from a version after the structure
	mustUpsert(t, s, chunkEv("x", "other", 1, "another"), true) // another document
	mustUpsert(t, s, chunkEv("b2", "d1", 2, "beta two"), true)

	mustApply(t, s, structure("d1", 2, "a", "b2"), true)
	var ids []string
	rows, err := s.r.Query(`SELECT chunk_id FROM chunks ORDER BY chunk_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	if want := []string{"a", "b2", "n", "x"}; !slices.Equal(ids, want) {
		t.Fatalf("chunks after structure: %v, want %v", ids, want)
	}
	wantRows(t, s, 4)

	docs, chunks, err := s.Counts(context.Background())
	if err != nil || docs != 1 || chunks != 4 {
		t.Fatalf("Counts = %d, %d, %v; want 1, 4", docs, chunks, err)
	}

	// An older structure is ignored, a repeated one is harmless.
	mustApply(t, s, structure("d1", 1, "a", "b", "c"), false)
	mustApply(t, s, structure("d1", 2, "a", "b2"), true)
	wantRows(t, s, 4)
}

func TestStaleChunksOfASupersededVersionAreIgnored(t *testing.T) {
	s := openTest(t)
	mustApply(t, s, structure("d1", 5, "kept", "new"), true)
	// A chunk carried over unchanged from version 3 is listed: stored.
	mustUpsert(t, s, chunkEv("kept", "d1", 3, "carried over"), true)
	// A chunk of version 3 that version 5 dropped arrives late: ignored.
	mustUpsert(t, s, chunkEv("dropped", "d1", 3, "dropped later"), false)
	// Chunks of the structure's own version or newer are always stored.
	mustUpsert(t, s, chunkEv("new", "d1", 5, "brand new"), true)
	mustUpsert(t, s, chunkEv("future", "d1", 6, "from the future"), true)
	wantRows(t, s, 3)
}

func TestDeletingADocumentRemovesEverythingOfIt(t *testing.T) {
	s := openTest(t)
	mustUpsert(t, s, chunkEv("a", "d1", 1, "alpha"), true)
	mustUpsert(t, s, chunkEv("b", "d1", 1, "beta"), true)
	mustUpsert(t, s, chunkEv("x", "d2", 1, "other doc"), true)
	d := smallDoc()
	d.ChunkIDs = []string{"a", "b"}
	mustApply(t, s, d, true)
	mustApply(t, s, structure("d2", 1, "x"), true)
	if count(t, s, "blocks") == 0 || count(t, s, "edges") == 0 {
		t.Fatal("no blocks or edges stored")
	}

	del := &schemas.DocStructure{DocID: "d1", Version: 2, Deleted: true}
	mustApply(t, s, del, true)
	wantRows(t, s, 1)
	if n := count(t, s, "blocks"); n != 0 {
		t.Fatalf("%d blocks left", n)
	}
	if n := count(t, s, "edges"); n != 0 {
		t.Fatalf("%d edges left", n)
	}
	if docs, _, _ := s.Counts(context.Background()); docs != 1 {
		t.Fatalf("%d documents, want 1", docs)
	}

	// Late writes from before the deletion are ignored.
	mustUpsert(t, s, chunkEv("a", "d1", 1, "alpha"), false)
	mustApply(t, s, structure("d1", 1, "a"), false)
	mustApply(t, s, del, true) // redelivered: harmless
	wantRows(t, s, 1)

	// The document may come back with a newer version.
	mustUpsert(t, s, chunkEv("a", "d1", 3, "alpha again"), true)
	mustApply(t, s, structure("d1", 3, "a"), true)
	wantRows(t, s, 2)
	if hits := search(t, s, "alpha", SearchOptions{}); len(hits) != 1 || hits[0].Title != "Title of d1" {
		t.Fatalf("recreated doc: %+v", hits)
	}
}

// smallDoc:
//
//	d1
//	├── h1 (heading)
//	├── p1 (paragraph, refs t1 and t2)
//	└── l1 (list)
//	    ├── li1 (list item)
//	    │   └── p2 (paragraph)
//	    └── li2 (list item, refs h1)
func smallDoc() *schemas.DocStructure {
	d := structure("d1", 1)
	d.Blocks = []schemas.BlockNode{
		{ID: "h1", Type: schemas.BlockHeading, ChunkID: "a"},
		{ID: "p1", Type: schemas.BlockParagraph, ChunkID: "a", Refs: []string{"t1", "t2"}},
		{ID: "l1", Type: schemas.BlockList},
		{ID: "li1", Type: schemas.BlockListItem, ParentID: "l1"},
		{ID: "p2", Type: schemas.BlockParagraph, ParentID: "li1", ChunkID: "b"},
		{ID: "li2", Type: schemas.BlockListItem, ParentID: "l1", ChunkID: "b", Refs: []string{"h1"}},
	}
	return d
}

func TestEdgesOfASmallDocument(t *testing.T) {
	want := []string{
		"h1 parent d1", "d1 child h1", "p1 parent d1", "d1 child p1", "l1 parent d1", "d1 child l1",
		"li1 parent l1", "l1 child li1", "p2 parent li1", "li1 child p2", "li2 parent l1", "l1 child li2",
		"p1 ref t1", "p1 ref t2", "li2 ref h1",
		"h1 sibling p1", "p1 sibling h1", "p1 sibling l1", "l1 sibling p1", "li1 sibling li2", "li2 sibling li1",
		"h1 next p1", "p1 prev h1", "p1 next l1", "l1 prev p1", "l1 next li1", "li1 prev l1",
		"li1 next p2", "p2 prev li1", "p2 next li2", "li2 prev p2",
	}
	slices.Sort(want)
	var got []string
	for _, e := range BuildEdges(smallDoc()) {
		if e.DocID != "d1" {
			t.Fatalf("edge %+v has the wrong doc", e)
		}
		got = append(got, e.Src+" "+e.Kind+" "+e.Dst)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("edges:\n got %q\nwant %q", got, want)
	}

	// A document node in the block list is the root, not a block in order.
	d := smallDoc()
	d.Blocks = append([]schemas.BlockNode{{ID: "d1", Type: schemas.BlockDocument}}, d.Blocks...)
	if n := len(BuildEdges(d)); n != len(want) {
		t.Fatalf("with a document node: %d edges, want %d", n, len(want))
	}

	s := openTest(t)
	mustApply(t, s, smallDoc(), true)
	if n := count(t, s, "edges"); n != len(want) {
		t.Fatalf("%d edges stored, want %d", n, len(want))
	}
	ctx := context.Background()
	for _, tc := range []struct {
		block string
		kinds []string
		want  []string
	}{
		{"l1", []string{EdgeChild}, []string{"li1", "li2"}},
		{"p2", []string{EdgeParent}, []string{"li1"}},
		{"h1", []string{EdgeParent}, []string{"d1"}},
		{"p1", []string{EdgeRef}, []string{"t1", "t2"}},
		{"p1", []string{EdgeSibling}, []string{"h1", "l1"}},
		{"p2", []string{EdgePrev, EdgeNext}, []string{"li1", "li2"}},
		{"p2", []string{EdgeNext, EdgePrev}, []string{"li2", "li1"}},
		{"p1", nil, []string{"l1", "d1", "h1", "t1", "t2", "h1", "l1"}}, // next, parent, prev, ref, sibling
		{"p1", []string{"nonsense"}, nil},
		{"nowhere", nil, nil},
	} {
		edges, err := s.Neighbors(ctx, tc.block, tc.kinds...)
		if err != nil {
			t.Fatal(err)
		}
		var dst []string
		for _, e := range edges {
			dst = append(dst, e.Dst)
		}
		if !slices.Equal(dst, tc.want) {
			t.Errorf("Neighbors(%s, %v) = %v, want %v", tc.block, tc.kinds, dst, tc.want)
		}
	}

	// A new structure replaces the edges.
	d = smallDoc()
	d.Version = 2
	d.Blocks = d.Blocks[:2]
	mustApply(t, s, d, true)
	if n := count(t, s, "edges"); n != 10 { // 2 parent, 2 child, 2 ref, 2 sibling, next, prev
		edges, _ := s.Neighbors(ctx, "p1")
		t.Fatalf("%d edges after the doc shrank: %+v", n, edges)
	}
	if n := count(t, s, "blocks"); n != 2 {
		t.Fatalf("%d blocks after the doc shrank, want 2", n)
	}
}

func TestReaderSeesCommittedWritesWhileTheWriterStaysOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "exocortex.db")
	if _, err := OpenReadOnly(path); err == nil {
		t.Fatal("OpenReadOnly of a missing database succeeded")
	}
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mustUpsert(t, w, chunkEv("c1", "d1", 1, "written before the reader opened"), true)

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if _, n, err := r.Counts(ctx); err != nil || n != 1 {
		t.Fatalf("reader counts %d chunks, %v", n, err)
	}
	mustUpsert(t, w, chunkEv("c2", "d1", 1, "written after the reader opened"), true)
	mustApply(t, w, structure("d1", 1, "c1", "c2"), true)
	docs, n, err := r.Counts(ctx)
	if err != nil || docs != 1 || n != 2 {
		t.Fatalf("reader counts %d docs %d chunks, %v; want 1, 2", docs, n, err)
	}
	if hits := search(t, r, "after reader", SearchOptions{}); len(hits) != 2 || hits[0].ChunkID != "c2" {
		t.Fatalf("reader search: %+v", hits)
	}
	if _, err := r.UpsertChunk(ctx, chunkEv("c3", "d1", 1, "no")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write through the reader: %v, want ErrReadOnly", err)
	}
	if _, err := r.r.Exec(`DELETE FROM chunks`); err == nil {
		t.Fatal("the read-only connection accepted a delete")
	}

	// Reads and writes at once: no SQLITE_BUSY on either side.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 100 {
			if _, err := w.UpsertChunk(ctx, chunkEv(fmt.Sprint("w", i), "d2", 1, fmt.Sprint("concurrent text ", i))); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 100 {
			if _, err := r.Search(ctx, "concurrent text", SearchOptions{}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, n, _ := r.Counts(ctx); n != 102 {
		t.Fatalf("reader counts %d chunks, want 102", n)
	}

	// A reader also opens a database no writer has open.
	w.Close()
	r2, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, n, err := r2.Counts(ctx); err != nil || n != 102 {
		t.Fatalf("reader after the writer closed: %d chunks, %v", n, err)
	}
}

func TestOpenMigratesOnceAndRefusesANewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#% name.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, s, chunkEv("c1", "d1", 1, "kept across opens"), true)
	var mode string
	if err := s.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q, %v", mode, err)
	}
	var fk int
	if err := s.w.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys %d, %v", fk, err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at its path: %v", err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, _ := s.Counts(context.Background()); n != 1 {
		t.Fatalf("%d chunks after reopening, want 1", n)
	}
	if _, err := s.w.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); !errors.Is(err, ErrSchema) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchema", err)
	}
	if _, err := OpenReadOnly(path); !errors.Is(err, ErrSchema) {
		t.Fatalf("OpenReadOnly of a newer schema: %v, want ErrSchema", err)
	}
}

var searchCorpus = []struct{ id, lang, text string }{
	{"en-bread", "en", "To bake sourdough bread, feed the starter the night before, mix flour and water, and let the dough rise slowly."},
	{"en-garden", "en", "Tomatoes in the garden need full sun, regular watering and support stakes as the plants grow taller."},
	{"en-rust", "en", "The Rust borrow checker rejects code that holds a mutable reference while another reference is alive."},
	{"en-nats", "en", "JetStream consumers acknowledge messages; an unacknowledged message is redelivered after the ack wait."},
	{"ru-bread", "ru", "Чтобы испечь хлеб на закваске, накануне подкормите закваску, замесите тесто из муки и воды и дайте ему медленно подняться."},
	{"ru-garden", "ru", "Помидорам в огороде нужно много солнца, регулярный полив и опоры, когда растения становятся выше."},
	{"ru-hedgehog", "ru", "Ёжик в тумане искал лошадку и слушал, как филин ухает над рекой."},
	{"ru-physics", "ru", "Квантовая запутанность связывает состояния частиц так, что измерение одной мгновенно определяет другую."},
}

func loadCorpus(t testing.TB, s *Store) {
	t.Helper()
	for _, c := range searchCorpus {
		ev := chunkEv(c.id, "doc-"+c.id, 1, c.text)
		ev.Lang = c.lang
		mustUpsert(t, s, ev, true)
		d := structure("doc-"+c.id, 1, c.id)
		d.Title = ""
		mustApply(t, s, d, true)
	}
}

func TestSearchRanksTheRelevantChunkFirst(t *testing.T) {
	s := openTest(t)
	loadCorpus(t, s)
	for _, tc := range []struct{ query, want, mark string }{
		{"how do I bake sourdough bread?", "en-bread", "[sourdough]"},
		{"what does the borrow checker reject", "en-rust", "[borrow]"},
		{"when is a message redelivered", "en-nats", "[redelivered]"},
		{"TOMATOES sun", "en-garden", "[Tomatoes]"},
		{"хлеб на закваске", "ru-bread", "[хлеб]"},
		{"регулярный полив помидоров", "ru-garden", "[полив]"},
		{"квантовая запутанность частиц", "ru-physics", "[Квантовая]"},
		{"ёжик в тумане", "ru-hedgehog", "[Ёжик]"}, // ё and е are one letter; the snippet shows the original
		{"ежик", "ru-hedgehog", "[Ёжик]"},
		{"ежики", "ru-hedgehog", "[Ёжик]"},
		{"лошадки и филины", "ru-hedgehog", "[лошадку]"},
	} {
		hits := search(t, s, tc.query, SearchOptions{})
		if len(hits) == 0 || hits[0].ChunkID != tc.want {
			t.Errorf("%q: got %v, want %s first", tc.query, hitIDs(hits), tc.want)
			continue
		}
		h := hits[0]
		if !strings.Contains(h.Snippet, tc.mark) {
			t.Errorf("%q: snippet %q lacks %s", tc.query, h.Snippet, tc.mark)
		}
		if h.Score <= 0 || h.BlockID != tc.want+"-b1" || len(h.BlockIDs) != 2 || h.Text == "" || h.DocID != "doc-"+tc.want {
			t.Errorf("%q: hit %+v", tc.query, h)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("%q: scores not descending: %v", tc.query, hits)
			}
		}
	}

	hits := search(t, s, "bread хлеб", SearchOptions{MarkStart: "<b>", MarkEnd: "</b>", Lang: "ru"})
	if len(hits) != 1 || hits[0].ChunkID != "ru-bread" || !strings.Contains(hits[0].Snippet, "<b>хлеб</b>") {
		t.Fatalf("lang=ru with custom marks: %+v", hits)
	}
	if hits := search(t, s, "the a of", SearchOptions{K: 3}); len(hits) == 0 || len(hits) > 3 {
		t.Fatalf("a query of stopwords only should still search them, at most K: %v", hitIDs(hits))
	}
}

func TestSearchUsesTheDocumentTitleOnceTheStructureArrives(t *testing.T) {
	s := openTest(t)
	loadCorpus(t, s)
	if hits := search(t, s, "zymurgy", SearchOptions{}); len(hits) != 0 {
		t.Fatalf("title word found before the title is known: %v", hitIDs(hits))
	}
	d := structure("doc-en-bread", 1, "en-bread")
	d.Title = "Zymurgy notes"
	mustApply(t, s, d, true)
	hits := search(t, s, "zymurgy", SearchOptions{})
	if len(hits) != 1 || hits[0].Title != "Zymurgy notes" || hits[0].Path != "doc-en-bread.md" {
		t.Fatalf("after the structure: %+v", hits)
	}
	wantRows(t, s, len(searchCorpus))

	// Section headings are searchable too.
	ev := chunkEv("sec", "doc-sec", 1, "plain body")
	ev.SectionPath = []string{"Projects", "Xylophone repair"}
	mustUpsert(t, s, ev, true)
	mustApply(t, s, structure("doc-sec", 1, "sec"), true)
	if hits := search(t, s, "xylophone", SearchOptions{}); len(hits) != 1 || !slices.Equal(hits[0].SectionPath, ev.SectionPath) {
		t.Fatalf("section search: %+v", hits)
	}
}

// nastyQueries are user texts that would be FTS5 syntax errors if passed
// through, or that have no words at all.
var nastyQueries = []string{
	``, ` `, `"`, `""`, `"unterminated`, `a AND`, `AND`, `OR`, `NOT`, `NOT bread`, `bread NOT`, `NEAR(`, `NEAR(a b`,
	`NEAR(bread dough, 2)`, `col:val`, `body:bread`, `{body}: x`, `-body:x`, `*`, `bread*`, `^bread`, `^`, `(`, `)`, `()`,
	`((bread)`, `'`, `'; DROP TABLE chunks; --`, `foo -bar`, `+bread`, `a + b`, `ё`, `Ё`, `😀`, `🍞 bread 🍞`, `\`,
	`\"`, `%`, `_`, `?`, `!`, `@#$%^&*`, `bread:`, `:`, `::`, `a:b:c`, `"a" "b"`, `x OR OR y`, `AND OR NOT`,
	"\x00", "tab\tsep", "new\nline", "\u200b", "\u0301", "e\u0301", "\ufeffхлеб", `日本語`, `العربية`, `\u0000`,
	"\xff\xfe invalid utf8", strings.Repeat("x", 10000), strings.Repeat("bread ", 2000), strings.Repeat(`"(`, 5000),
}

func TestAnyQueryIsValid(t *testing.T) {
	s := openTest(t)
	loadCorpus(t, s)
	for _, q := range nastyQueries {
		if _, err := s.Search(context.Background(), q, SearchOptions{}); err != nil {
			t.Errorf("%.40q: %v", q, err)
		}
	}
	if hits := search(t, s, `"`, SearchOptions{}); hits != nil {
		t.Errorf("a query without words gave hits: %v", hitIDs(hits))
	}
	if hits := search(t, s, `NOT bread`, SearchOptions{}); len(hits) == 0 || hits[0].ChunkID != "en-bread" {
		t.Errorf("NOT is a word, not an operator: %v", hitIDs(hits))
	}
}

func FuzzSearch(f *testing.F) {
	for _, q := range nastyQueries {
		f.Add(q)
	}
	s := openTest(f)
	loadCorpus(f, s)
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := s.Search(context.Background(), q, SearchOptions{}); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
	})
}

func TestMatchExprQuotesEveryTermAndSplitsWordsFromLemmas(t *testing.T) {
	plain, err := analysis.New(analysis.Plain)
	if err != nil {
		t.Fatal(err)
	}
	if got := matchExpr(plain.Query(`say "hi" OR not`)); got != `{body title section} : ("say" OR "hi")` {
		t.Errorf("plain: %s", got)
	}
	full, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := matchExpr(full.Query("кошек NEAR(x)")),
		`({body title section} : ("кошек" OR "near" OR "x")) OR ({lemmas heads} : ("кошка" OR "near" OR "x"))`; got != want {
		t.Errorf("full:\n got %s\nwant %s", got, want)
	}
	if got := matchExpr(full.Query("?!")); got != "" {
		t.Errorf("no words: %q", got)
	}
}

func TestUseAnalyzerRebuildsTheIndexAndTheChoiceIsRemembered(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "exocortex.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Analyzer().Name(); !strings.HasPrefix(got, string(DefaultAnalyzer)+"/") {
		t.Fatalf("a new index uses %s, want %s", got, DefaultAnalyzer)
	}
	mustUpsert(t, s, chunkEv("cat", "d1", 1, "Мы долго играли с кошкой во дворе."), true)
	mustUpsert(t, s, chunkEv("dog", "d1", 1, "Собаки лают."), true)
	mustApply(t, s, structure("d1", 1, "cat", "dog"), true)
	if hits := search(t, s, "кошек", SearchOptions{}); len(hits) != 1 || hits[0].ChunkID != "cat" {
		t.Fatalf("full analyzer: another form of the word: %v", hitIDs(hits))
	}
	if hits := search(t, s, "кошек", SearchOptions{}); !strings.Contains(hits[0].Snippet, "[кошкой]") {
		t.Errorf("the snippet marks the matched form: %q", hits[0].Snippet)
	}

	if err := s.UseAnalyzer(ctx, analysis.Plain); err != nil {
		t.Fatal(err)
	}
	wantRows(t, s, 2)
	if hits := search(t, s, "кошек", SearchOptions{}); len(hits) != 0 {
		t.Fatalf("plain analyzer matched another form: %v", hitIDs(hits))
	}
	if hits := search(t, s, "кошкой", SearchOptions{}); len(hits) != 1 {
		t.Fatalf("plain analyzer, the same form: %v", hitIDs(hits))
	}
	s.Close()

	// Reopened, for writing and for reading, the index keeps its analyzer.
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, st := range []*Store{s, r} {
		if st.Analyzer().Mode() != analysis.Plain {
			t.Fatalf("reopened with %s", st.Analyzer().Name())
		}
	}
	if err := s.UseAnalyzer(ctx, analysis.Stem); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, s, "собака", SearchOptions{}); len(hits) != 1 || hits[0].ChunkID != "dog" {
		t.Fatalf("stem analyzer: %v", hitIDs(hits))
	}
	mustUpsert(t, s, chunkEv("cats", "d1", 1, "Кошки спят."), true)
	if err := s.UseAnalyzer(ctx, analysis.Full); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, s, "кошка", SearchOptions{}); len(hits) != 2 {
		t.Fatalf("after switching back to full: %v", hitIDs(hits))
	}
	for _, q := range nastyQueries {
		if _, err := s.Search(ctx, q, SearchOptions{}); err != nil {
			t.Errorf("%.40q: %v", q, err)
		}
	}
	if err := r.UseAnalyzer(ctx, analysis.Full); !errors.Is(err, ErrReadOnly) {
		t.Errorf("UseAnalyzer on a reader: %v", err)
	}
}

// Generated text for benchmarks: Zipf-distributed pseudo-words.

var benchVocab = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	syll := []string{"ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "gu", "va", "zo", "xe", "ly", "bo", "an", "er", "is"}
	v := make([]string, 8000)
	for i := range v {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		v[i] = fmt.Sprintf("%s%d", b.String(), i%97)
	}
	return v
}()

var benchZipf = rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 2, uint64(len(benchVocab)-1))

func randomWords(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = benchVocab[benchZipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// loadBench writes n generated chunks of ~250 words in one transaction.
func loadBench(b testing.TB, s *Store, n int) {
	err := s.write(context.Background(), func(tx *sql.Tx) error {
		for i := range n {
			text := randomWords(250)
			c := &schemas.ChunkCreated{ChunkID: fmt.Sprint("bench-", i), DocID: fmt.Sprint("doc-", i/10), DocVersion: 1,
				Ordinal: i % 10, Hash: hashOf(text), Text: text, SectionPath: []string{"Bench", randomWords(3)},
				BlockIDs: []string{fmt.Sprint("blk-", i)}, Lang: "en"}
			if _, err := s.putChunk(context.Background(), tx, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkUpsertChunk(b *testing.B) {
	s := openTest(b)
	loadBench(b, s, 5000)
	texts := make([]string, 256)
	for i := range texts {
		texts[i] = randomWords(250)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		text := texts[i%len(texts)]
		// Overwrite existing chunks with new content, as re-chunking does.
		c := &schemas.ChunkCreated{ChunkID: fmt.Sprint("bench-", i%5000), DocID: fmt.Sprint("doc-", i%5000/10),
			DocVersion: int64(2 + i), Hash: hashOf(text), Text: text, Lang: "en"}
		if _, err := s.UpsertChunk(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	s := openTest(b)
	loadBench(b, s, 5000)
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = "what is " + randomWords(4)
	}
	ctx := context.Background()
	for _, k := range []int{10, 200} {
		b.Run(fmt.Sprint("k=", k), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := s.Search(ctx, queries[i%len(queries)], SearchOptions{K: k}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCommonTermsAreLeftOutWhenRarerOnesRemain(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	frac, minimum := CommonFraction, CommonMin
	CommonFraction, CommonMin = 0.3, 1
	defer func() { CommonFraction, CommonMin = frac, minimum }()
	mustApply(t, s, structure("d", 1, "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"), true)
	for i := 0; i < 10; i++ {
		text := fmt.Sprintf("garden plot number %d grows beans", i)
		if i == 7 {
			text = "garden plot with a raven"
		}
		c := &schemas.ChunkCreated{ChunkID: fmt.Sprintf("c%d", i), DocID: "d", DocVersion: 1, Ordinal: i, Hash: fmt.Sprint(i), Text: text}
		if _, err := s.UpsertChunk(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := s.Search(ctx, "garden raven", SearchOptions{K: 20})
	if err != nil || len(hits) != 1 || hits[0].ChunkID != "c7" {
		t.Fatalf("garden (in every chunk) was not left out: %d hits %v", len(hits), err)
	}
	if hits, err := s.Search(ctx, "garden", SearchOptions{K: 20}); err != nil || len(hits) != 10 {
		t.Fatalf("a query of common terms only still matches: %d hits %v", len(hits), err)
	}
	CommonFraction = 0.05
	CommonMin = 2000
	s.count.Store(nil)
	if hits, err := s.Search(ctx, "garden raven", SearchOptions{K: 20}); err != nil || len(hits) != 10 {
		t.Fatalf("a small index keeps every term: %d hits %v", len(hits), err)
	}
}

func TestFirstChunksOfDocsNamesEachDocumentsFirstChunk(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for _, c := range []*schemas.ChunkCreated{chunkEv("a:1", "a", 1, "second of a"), chunkEv("a:0", "a", 1, "first of a"),
		chunkEv("b:0", "b", 1, "only of b")} {
		if strings.HasSuffix(c.ChunkID, ":1") {
			c.Ordinal = 1
		}
		mustUpsert(t, s, c, true)
	}
	got, err := s.FirstChunksOfDocs(ctx, []string{"a", "b", "nope", "a:0-b1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"] != "a:0" || got["b"] != "b:0" {
		t.Errorf("first chunks = %v, want a -> a:0, b -> b:0 (a block id or unknown id is no document)", got)
	}
}

func TestTagsAndAliasesOfADocumentAreSearchable(t *testing.T) {
	s := openTest(t)
	loadCorpus(t, s)
	// The structure first: a chunk written after it takes the labels too.
	d := structure("doc-en-garden", 1, "en-garden")
	d.Meta = map[string]string{"tags": "permaculture,allotment/raised-beds", "aliases": "Veg patch", "author": "Quixote"}
	mustApply(t, s, d, true)
	// The structure after the chunk: the chunk's row is rewritten.
	d = structure("doc-ru-bread", 1, "ru-bread")
	d.Meta = map[string]string{"tags": "выпечка", "alias": "Хлебница"}
	mustApply(t, s, d, true)
	for q, want := range map[string]string{"permaculture": "en-garden", "raised beds": "en-garden", "patch": "en-garden",
		"выпечки": "ru-bread", "хлебница": "ru-bread"} {
		if hits := search(t, s, q, SearchOptions{}); len(hits) == 0 || hits[0].ChunkID != want {
			t.Errorf("search %q: %v, want %s first (a tag or alias of its document)", q, hitIDs(hits), want)
		}
	}
	if hits := search(t, s, "quixote", SearchOptions{}); len(hits) != 0 {
		t.Errorf("other front matter is not a label: %v", hitIDs(hits))
	}
	// A new chunk of a labelled document, and a rebuild, keep the labels.
	ev := chunkEv("en-garden-2", "doc-en-garden", 1, "Beans climb the stakes.")
	mustUpsert(t, s, ev, true)
	if err := s.Reindex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, s, "permaculture", SearchOptions{}); len(hits) != 2 {
		t.Errorf("after a new chunk and a rebuild: %v, want both chunks of the tagged document", hitIDs(hits))
	}
	// Labels that are gone are no longer found.
	d = structure("doc-en-garden", 2, "en-garden", "en-garden-2")
	mustApply(t, s, d, true)
	if hits := search(t, s, "permaculture", SearchOptions{}); len(hits) != 0 {
		t.Errorf("after the tags were removed: %v", hitIDs(hits))
	}
}

func TestOpeningAnOlderIndexAddsTheLabelsOfItsDocuments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exocortex.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.UseAnalyzer(ctx, analysis.Plain); err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, s, chunkEv("c1", "d1", 1, "Tomatoes need sun."), true)
	d := structure("d1", 1, "c1")
	d.Meta = map[string]string{"tags": "permaculture"}
	mustApply(t, s, d, true)
	// An index of schema 4 held the title alone in the title columns.
	if _, err := s.w.Exec(`UPDATE chunks_fts SET title = 'title of d1', heads = ''`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`PRAGMA user_version = 4`); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, s, "permaculture", SearchOptions{}); len(hits) != 0 {
		t.Fatalf("the old row was not simulated: %v", hitIDs(hits))
	}
	// Nor had it the column of migration 6.
	if _, err := s.w.Exec(`ALTER TABLE chunks DROP COLUMN block_spans`); err != nil {
		t.Fatal(err)
	}
	undoScopeMigration(t, s.w) // nor those of migration 9
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if hits := search(t, s, "permaculture", SearchOptions{}); len(hits) != 1 {
		t.Errorf("after reopening: %v, want the tagged document's chunk", hitIDs(hits))
	}
	if got := s.Analyzer().Mode(); got != analysis.Plain {
		t.Errorf("analyzer mode %s after the rebuild, want plain kept", got)
	}
}
