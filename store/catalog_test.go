package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

// fixtureDocs are scopeFixture's documents, to edit: each with its chunks'
// count.
func fixtureDocs() map[string]struct {
	d      schemas.DocStructure
	chunks int
} {
	type doc = struct {
		d      schemas.DocStructure
		chunks int
	}
	return map[string]doc{
		"work-backup": {schemas.DocStructure{DocID: "work-backup", Source: schemas.SourceMarkdown, Path: "/home/me/work/ops/backup.md",
			Notebook: "/home/me/work", Title: "Backup", Meta: map[string]string{"tags": "ops,Backup"}, Version: day("2024-01-10").UnixNano()}, 1},
		"home-borsch": {schemas.DocStructure{DocID: "home-borsch", Source: schemas.SourceMarkdown, Path: "/home/me/home/рецепты/борщ.md",
			Notebook: "/home/me/home", Title: "Борщ", Tags: []string{"Рецепт"}, Updated: day("2023-11-20"), Version: 1}, 1},
		"20240101120000-abcdefg": {schemas.DocStructure{DocID: "20240101120000-abcdefg", Source: schemas.SourceSiYuan,
			Path: "Дневник/2024/Март", Notebook: "20230101120000-box0001", NotebookName: "Дневник", Title: "Март",
			Tags: []string{"рецепт/суп"}, Updated: day("2024-03-20"), Version: 1}, 2},
	}
}

// rewrite writes d again as a newer version with its chunks ids kept.
func rewrite(t testing.TB, s *Store, d schemas.DocStructure, chunks int, version int64) {
	t.Helper()
	d.Version, d.Hash, d.ChunkIDs = version, fmt.Sprintf("h%d", version), nil
	for i := range chunks {
		d.ChunkIDs = append(d.ChunkIDs, fmt.Sprintf("%s:%016x", d.DocID, i))
	}
	if applied, err := s.ApplyStructure(context.Background(), &d); err != nil || !applied {
		t.Fatalf("rewrite %s: applied %v, %v", d.DocID, applied, err)
	}
}

// agreeWithRebuild checks that s's catalog, however it got there, answers
// each filter as a catalog read in full from the database does.
func agreeWithRebuild(t *testing.T, s *Store, filters ...DocFilter) {
	t.Helper()
	full := fullCatalog(t, s)
	for _, f := range filters {
		got, err := s.AllowedChunks(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		want := full.allowed(&f)
		if got.Len() != want.Len() || !slices.Equal(trimZeros(got.rows), trimZeros(want.rows)) || !maps.Equal(got.docs, want.docs) {
			t.Errorf("%s: the catalog kept up with writes has %d chunks of %v, a full rebuild %d of %v",
				f.Key(), got.Len(), got.DocIDs(), want.Len(), want.DocIDs())
		}
	}
}

func trimZeros(w []uint64) []uint64 {
	for len(w) > 0 && w[len(w)-1] == 0 {
		w = w[:len(w)-1]
	}
	return w
}

// probes are filters over every scope field, in Russian and English.
var probes = []DocFilter{
	{Tags: []string{"срочно"}}, {Tags: []string{"рецепт"}}, {Tags: []string{"ops"}}, {NotTags: []string{"рецепт"}},
	{Notebooks: []string{"work"}}, {Notebooks: []string{"home"}}, {Notebooks: []string{"дневник"}},
	{PathPrefixes: []string{"archive"}}, {PathPrefixes: []string{"рецепты"}}, {PathPrefixes: []string{"2024"}},
	{Since: day("2025-01-01")}, {Until: day("2024-01-01")}, {Langs: []string{"ru"}}, {Langs: []string{"de"}},
}

func TestScopedChunksSeeAnEditAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		doc   string
		edit  func(d *schemas.DocStructure)
		f     DocFilter
		chunk string // the edited document's chunk the filter must now allow
	}{
		{"a tag added is in scope at once", "work-backup",
			func(d *schemas.DocStructure) { d.Tags = []string{"Срочно"} }, DocFilter{Tags: []string{"срочно"}}, "work-backup:0000000000000000"},
		{"a tag removed is out of scope at once", "home-borsch",
			func(d *schemas.DocStructure) { d.Tags = nil }, DocFilter{NotTags: []string{"рецепт"}}, "home-borsch:0000000000000000"},
		{"a note moved to another notebook is in that notebook", "home-borsch",
			func(d *schemas.DocStructure) { d.Notebook, d.Path = "/home/me/work", "/home/me/work/рецепты/борщ.md" },
			DocFilter{Notebooks: []string{"work"}}, "home-borsch:0000000000000000"},
		{"a note renamed into another folder is under its new path", "work-backup",
			func(d *schemas.DocStructure) { d.Path = "/home/me/work/archive/backup.md" },
			DocFilter{PathPrefixes: []string{"archive"}}, "work-backup:0000000000000000"},
		{"a note edited now has its new time", "20240101120000-abcdefg",
			func(d *schemas.DocStructure) { d.Updated = day("2025-02-01") }, DocFilter{Since: day("2025-01-01")}, "20240101120000-abcdefg:0000000000000001"},
		{"a SiYuan notebook renamed is found by its new name", "20240101120000-abcdefg",
			func(d *schemas.DocStructure) { d.NotebookName = "Журнал" }, DocFilter{Notebooks: []string{"журнал"}}, "20240101120000-abcdefg:0000000000000000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := scopeFixture(t)
			ctx := context.Background()
			before, err := s.AllowedChunks(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			row := rowOf(t, s, tt.chunk)
			if before.HasRow(row) {
				t.Fatalf("before the edit %s is already in scope", tt.chunk)
			}
			x := fixtureDocs()[tt.doc]
			tt.edit(&x.d)
			rebuilds := s.scope.rebuilds.Load()
			rewrite(t, s, x.d, x.chunks, x.d.Version+1)
			after, err := s.AllowedChunks(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !after.HasRow(row) || !after.HasDoc(tt.doc) || after.Seq() <= before.Seq() {
				t.Errorf("after the edit %s is not in scope (seq %d -> %d)", tt.chunk, before.Seq(), after.Seq())
			}
			if n := s.scope.rebuilds.Load() - rebuilds; n != 0 {
				t.Errorf("the edit rebuilt the catalog %d times, want it followed incrementally", n)
			}
			agreeWithRebuild(t, s, probes...)
		})
	}
}

func rowOf(t testing.TB, s *Store, chunkID string) int64 {
	t.Helper()
	var id int64
	if err := s.r.QueryRow(`SELECT id FROM chunks WHERE chunk_id = ?`, chunkID).Scan(&id); err != nil {
		t.Fatalf("rowid of %s: %v", chunkID, err)
	}
	return id
}

func TestScopedChunksForgetDeletes(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	inDiary := DocFilter{Notebooks: []string{"дневник"}}
	if set, err := s.AllowedChunks(ctx, inDiary); err != nil || set.Len() != 2 {
		t.Fatalf("before: %d chunks in the diary, %v; want 2", set.Len(), err)
	}
	// One chunk's tombstone, then the whole document's.
	mustUpsert(t, s, tombstone("20240101120000-abcdefg:0000000000000001", "20240101120000-abcdefg", 5), true)
	if set, err := s.AllowedChunks(ctx, inDiary); err != nil || set.Len() != 1 || set.HasRow(rowOf(t, s, "20240101120000-abcdefg:0000000000000000")) == false {
		t.Fatalf("after a chunk was deleted: %d chunks, %v; want the other one", set.Len(), err)
	}
	if _, err := s.ApplyStructure(ctx, &schemas.DocStructure{DocID: "20240101120000-abcdefg", Deleted: true, Version: 6}); err != nil {
		t.Fatal(err)
	}
	if set, err := s.AllowedChunks(ctx, inDiary); err != nil || set.Len() != 0 || set.HasDoc("20240101120000-abcdefg") {
		t.Fatalf("after the note was deleted: %d chunks, %v; want none", set.Len(), err)
	}
	listing, err := s.Scopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, nb := range listing.Notebooks {
		if nb.Name == "Дневник" {
			t.Errorf("Scopes still lists the deleted note's notebook: %+v", nb)
		}
	}
	if listing.Docs != 4 {
		t.Errorf("Scopes counts %d documents, want the 4 left", listing.Docs)
	}
	agreeWithRebuild(t, s, probes...)
}

func TestAChunkBeforeItsDocumentIsInNoScopeUntilItArrives(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	f := DocFilter{Tags: []string{"черновик"}}
	if _, err := s.AllowedChunks(ctx, f); err != nil { // the catalog exists before the chunk comes
		t.Fatal(err)
	}
	c := chunkEv("draft:0000000000000000", "draft", 1, "Черновик письма")
	c.Lang = "ru"
	mustUpsert(t, s, c, true)
	if set, err := s.AllowedChunks(ctx, DocFilter{Langs: []string{"ru"}}); err != nil || set.HasRow(rowOf(t, s, c.ChunkID)) {
		t.Fatalf("a chunk without its document is in scope (%v)", err)
	}
	if listing, err := s.Scopes(ctx); err != nil || listing.Docs != 5 {
		t.Fatalf("Scopes counts %d documents (%v), want the fixture's 5 without the chunk's", listing.Docs, err)
	}
	rewrite(t, s, schemas.DocStructure{DocID: "draft", Source: schemas.SourceMarkdown, Path: "/home/me/home/draft.md",
		Notebook: "/home/me/home", Tags: []string{"черновик"}}, 1, 1)
	if set, err := s.AllowedChunks(ctx, f); err != nil || !set.HasRow(rowOf(t, s, c.ChunkID)) {
		t.Fatalf("after its document came the chunk is not in scope (%v)", err)
	}
	agreeWithRebuild(t, s, append(probes, f)...)
}

func TestAnotherHandleOnTheFileWritingIsSeen(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	other, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	f := DocFilter{Tags: []string{"срочно"}}
	if set, err := s.AllowedChunks(ctx, f); err != nil || set.Len() != 0 {
		t.Fatalf("before: %d chunks, %v", set.Len(), err)
	}
	x := fixtureDocs()["work-backup"]
	x.d.Tags = []string{"срочно"}
	rebuilds, updates := s.scope.rebuilds.Load(), s.scope.updates.Load()
	rewrite(t, other, x.d, x.chunks, day("2024-02-01").UnixNano())
	if set, err := s.AllowedChunks(ctx, f); err != nil || !set.HasDoc("work-backup") || set.Len() != 1 {
		t.Fatalf("after the other handle's write: %d chunks of %v, %v; want work-backup's", set.Len(), set.DocIDs(), err)
	}
	if s.scope.rebuilds.Load() != rebuilds || s.scope.updates.Load() != updates+1 {
		t.Errorf("the other handle's write cost %d rebuilds and %d updates, want 0 and 1",
			s.scope.rebuilds.Load()-rebuilds, s.scope.updates.Load()-updates)
	}
	agreeWithRebuild(t, s, probes...)

	// A database whose sequence went back is not this catalog's: rebuilt.
	x.d.Tags = nil
	rewrite(t, other, x.d, x.chunks, day("2024-02-02").UnixNano())
	if _, err := other.w.Exec(`UPDATE scope_seq SET n = 1`); err != nil {
		t.Fatal(err)
	}
	if set, err := s.AllowedChunks(ctx, f); err != nil || set.Len() != 0 {
		t.Fatalf("after the sequence went back: %d chunks, %v; want the tag gone", set.Len(), err)
	}
	if s.scope.rebuilds.Load() != rebuilds+1 {
		t.Errorf("a sequence gone back was not rebuilt in full")
	}
}

func TestManyDocumentsChangedRebuildInFull(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	f := DocFilter{Notebooks: []string{"bulk"}}
	if _, err := s.AllowedChunks(ctx, f); err != nil {
		t.Fatal(err)
	}
	err := s.Batch(ctx, func(ctx context.Context) error {
		for i := range 100 {
			d := &schemas.DocStructure{DocID: fmt.Sprintf("bulk-%d", i), Source: schemas.SourceMarkdown,
				Path: fmt.Sprintf("/bulk/%d.md", i), Notebook: "/bulk", Version: 1, Hash: "h"}
			if _, err := s.ApplyStructure(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rebuilds := s.scope.rebuilds.Load()
	if set, err := s.AllowedChunks(ctx, f); err != nil || set.Docs() != 100 {
		t.Fatalf("after the bulk write: %d documents, %v; want 100", set.Docs(), err)
	}
	if s.scope.rebuilds.Load() != rebuilds+1 {
		t.Errorf("100 new documents over 5 were followed one by one, want a full rebuild")
	}
}

// TestScopedReadsDuringWritesSeeWholeDocuments runs writers and scoped
// readers at once (run it with -race): a reader never sees a document half
// applied, and the catalog ends as a full rebuild reads the database.
func TestScopedReadsDuringWritesSeeWholeDocuments(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	other, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	x := fixtureDocs()["20240101120000-abcdefg"] // two chunks
	f := DocFilter{Tags: []string{"горячее"}}
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := int64(2); v < 60; v++ {
			d := x.d
			if v%2 == 0 {
				d.Tags = []string{"горячее"}
			}
			w := s
			if v%3 == 0 {
				w = other // a second writer of the same file
			}
			d.Version, d.Hash = v, fmt.Sprintf("h%d", v)
			d.ChunkIDs = []string{x.d.DocID + ":0000000000000000", x.d.DocID + ":0000000000000001"}
			if _, err := w.ApplyStructure(ctx, &d); err != nil {
				errs <- err
				return
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 60 {
				set, err := s.AllowedChunks(ctx, f)
				if err == nil && set.Len() != 2*set.Docs() {
					err = fmt.Errorf("a read saw %d chunks of %d documents: half a document", set.Len(), set.Docs())
				}
				if err == nil {
					_, err = s.FacetsOfDocs(ctx, []string{x.d.DocID})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	agreeWithRebuild(t, s, append(probes, f)...)
}
