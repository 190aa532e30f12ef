package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// scopeDoc indexes a document with one chunk per language given and
// returns the chunk ids.
func scopeDoc(t testing.TB, s *Store, d *schemas.DocStructure, langs ...string) []string {
	t.Helper()
	var ids []string
	for i, l := range langs {
		id := fmt.Sprintf("%s:%016x", d.DocID, i)
		c := chunkEv(id, d.DocID, d.Version, "text of "+id)
		c.Lang = l
		mustUpsert(t, s, c, true)
		ids = append(ids, id)
	}
	d.ChunkIDs, d.Hash = ids, "h"+d.DocID
	if _, err := s.ApplyStructure(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return ids
}

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// scopeFixture is a small index: two Markdown folders and a SiYuan
// notebook, Russian and English, tagged and dated.
func scopeFixture(t testing.TB) *Store {
	s := openTest(t)
	docs := []struct {
		d     *schemas.DocStructure
		langs []string
	}{
		{&schemas.DocStructure{DocID: "work-atlas", Source: schemas.SourceMarkdown, Path: "/home/me/work/projects/atlas/plan.md",
			Notebook: "/home/me/work", Title: "Atlas plan", Tags: []string{"work/atlas", "budget"}, Updated: day("2024-03-05"), Version: 1}, []string{"en", "en"}},
		{&schemas.DocStructure{DocID: "work-backup", Source: schemas.SourceMarkdown, Path: "/home/me/work/ops/backup.md",
			Notebook: "/home/me/work", Title: "Backup", Meta: map[string]string{"tags": "ops,Backup"}, Version: day("2024-01-10").UnixNano()}, []string{"en"}},
		{&schemas.DocStructure{DocID: "home-borsch", Source: schemas.SourceMarkdown, Path: "/home/me/home/рецепты/борщ.md",
			Notebook: "/home/me/home", Title: "Борщ", Tags: []string{"Рецепт"}, Updated: day("2023-11-20"), Version: 1}, []string{"ru"}},
		{&schemas.DocStructure{DocID: "20240101120000-abcdefg", Source: schemas.SourceSiYuan, Path: "Дневник/2024/Март",
			Notebook: "20230101120000-box0001", NotebookName: "Дневник", Title: "Март", Tags: []string{"рецепт/суп"},
			Updated: day("2024-03-20"), Version: 1}, []string{"ru", "en"}},
		{&schemas.DocStructure{DocID: "undated", Source: schemas.SourceMarkdown, Path: "/home/me/home/misc.md",
			Notebook: "/home/me/home", Title: "Misc", Version: 7}, []string{""}},
	}
	for _, x := range docs {
		scopeDoc(t, s, x.d, x.langs...)
	}
	return s
}

func TestAllowedChunksKeepsWhatTheFilterSays(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		f    DocFilter
		want []string // document ids of the allowed chunks
		n    int      // allowed chunks
	}{
		{"a notebook by its folder keeps its documents", DocFilter{Notebooks: []string{"/home/me/work"}}, []string{"work-atlas", "work-backup"}, 3},
		{"a notebook by its name ignores case", DocFilter{Notebooks: []string{"WORK"}}, []string{"work-atlas", "work-backup"}, 3},
		{"a SiYuan notebook by its Russian name", DocFilter{Notebooks: []string{"дневник"}}, []string{"20240101120000-abcdefg"}, 2},
		{"a SiYuan notebook by its id", DocFilter{Notebooks: []string{"20230101120000-box0001"}}, []string{"20240101120000-abcdefg"}, 2},
		{"excluding a notebook keeps the others", DocFilter{NotNotebooks: []string{"work"}}, []string{"20240101120000-abcdefg", "home-borsch", "undated"}, 4},
		{"a path prefix within the notebook", DocFilter{PathPrefixes: []string{"projects/atlas"}}, []string{"work-atlas"}, 2},
		{"an absolute path prefix", DocFilter{PathPrefixes: []string{"/home/me/home/"}}, []string{"home-borsch", "undated"}, 2},
		{"a Cyrillic path prefix", DocFilter{PathPrefixes: []string{"Рецепты"}}, []string{"home-borsch"}, 1},
		{"a SiYuan path within its notebook", DocFilter{PathPrefixes: []string{"2024/"}}, []string{"20240101120000-abcdefg"}, 2},
		{"excluding a path prefix", DocFilter{NotPathPrefixes: []string{"/home/me/home", "projects"}}, []string{"20240101120000-abcdefg", "work-backup"}, 3},
		{"documents by id", DocFilter{DocIDs: []string{"undated", "work-backup"}}, []string{"undated", "work-backup"}, 2},
		{"excluding a document", DocFilter{NotDocIDs: []string{"work-atlas"}}, []string{"20240101120000-abcdefg", "home-borsch", "undated", "work-backup"}, 5},
		{"a tag matches its nested tags", DocFilter{Tags: []string{"#work"}}, []string{"work-atlas"}, 2},
		{"a Russian tag in any case matches nested ones", DocFilter{Tags: []string{"#РЕЦЕПТ"}}, []string{"20240101120000-abcdefg", "home-borsch"}, 3},
		{"a tag from meta written before tags were carried", DocFilter{Tags: []string{"backup"}}, []string{"work-backup"}, 1},
		{"a tag's prefix that is not a whole part does not match", DocFilter{Tags: []string{"wor"}}, nil, 0},
		{"excluding a tag", DocFilter{NotTags: []string{"рецепт", "ops"}}, []string{"undated", "work-atlas"}, 3},
		{"a language keeps only its chunks", DocFilter{Langs: []string{"ru"}}, []string{"20240101120000-abcdefg", "home-borsch"}, 2},
		{"since a date, from the note's own time", DocFilter{Since: day("2024-03-01")}, []string{"20240101120000-abcdefg", "work-atlas"}, 4},
		{"until a date (exclusive) leaves out undated notes", DocFilter{Until: day("2024-01-10")}, []string{"home-borsch"}, 1},
		{"a date range", DocFilter{Since: day("2024-01-01"), Until: day("2024-03-10")}, []string{"work-atlas", "work-backup"}, 3},
		{"notebook, tag and language together", DocFilter{NotNotebooks: []string{"work"}, Tags: []string{"рецепт"}, Langs: []string{"en"}}, []string{"20240101120000-abcdefg"}, 1},
		{"an include and its exclude leave nothing", DocFilter{Tags: []string{"budget"}, NotDocIDs: []string{"work-atlas"}}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := s.AllowedChunks(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			got := allowedDocs(t, s, set)
			if !slices.Equal(got, tt.want) || set.Len() != tt.n {
				t.Errorf("allowed %v (%d chunks), want %v (%d chunks)", got, set.Len(), tt.want, tt.n)
			}
		})
	}
}

// allowedDocs checks that HasRow and HasChunk agree on every chunk and
// returns the documents of the allowed chunks, sorted.
func allowedDocs(t *testing.T, s *Store, set *ChunkSet) []string {
	t.Helper()
	rows, err := s.r.Query(`SELECT id, chunk_id, doc_id, lang FROM chunks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	docs := map[string]bool{}
	for rows.Next() {
		var id int64
		var chunk, doc, lang string
		if err := rows.Scan(&id, &chunk, &doc, &lang); err != nil {
			t.Fatal(err)
		}
		if set.HasRow(id) != set.HasChunk(chunk, lang) || set.HasRow(id) != set.HasDocLang(doc, lang) {
			t.Errorf("chunk %s: HasRow %v, HasChunk %v, HasDocLang %v", chunk, set.HasRow(id), set.HasChunk(chunk, lang), set.HasDocLang(doc, lang))
		}
		if set.HasRow(id) {
			docs[doc] = true
		}
	}
	return slices.Sorted(maps.Keys(docs))
}

func TestAllowedChunksOfNoFilterIsEverything(t *testing.T) {
	s := scopeFixture(t)
	set, err := s.AllowedChunks(context.Background(), DocFilter{})
	if err != nil || set != nil || !set.HasRow(1) || !set.HasChunk("x:0", "ru") || set.Len() != -1 {
		t.Fatalf("AllowedChunks(zero) = %v, %v; want nil (everything)", set, err)
	}
}

func TestAllowedChunksFollowsWrites(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	f := DocFilter{Tags: []string{"новое"}}
	set, err := s.AllowedChunks(ctx, f)
	if err != nil || set.Len() != 0 {
		t.Fatalf("before: %d chunks, %v; want 0", set.Len(), err)
	}
	scopeDoc(t, s, &schemas.DocStructure{DocID: "new", Source: schemas.SourceMarkdown, Path: "/n/new.md", Notebook: "/n",
		Tags: []string{"Новое"}, Version: 1}, "ru")
	if set, err = s.AllowedChunks(ctx, f); err != nil || set.Len() != 1 {
		t.Fatalf("after a new tagged document: %d chunks, %v; want 1", set.Len(), err)
	}
	d := &schemas.DocStructure{DocID: "new", Source: schemas.SourceMarkdown, Path: "/n/new.md", Notebook: "/n", Version: 2,
		ChunkIDs: []string{"new:0000000000000000"}, Hash: "h2"}
	if _, err := s.ApplyStructure(ctx, d); err != nil {
		t.Fatal(err)
	}
	if set, err = s.AllowedChunks(ctx, f); err != nil || set.Len() != 0 {
		t.Fatalf("after the tag was removed: %d chunks, %v; want 0", set.Len(), err)
	}
}

func TestFacetsCountDocumentsOfTheHits(t *testing.T) {
	s := scopeFixture(t)
	hits := []string{"work-atlas:0000000000000000", "work-atlas:0000000000000001", "home-borsch:0000000000000000",
		"20240101120000-abcdefg:0000000000000001", "undated:0000000000000000", "missing:0000000000000000"}
	nbs, tags, months, err := s.Facets(context.Background(), hits)
	if err != nil {
		t.Fatal(err)
	}
	wantNbs := map[string]int{"work": 1, "home": 2, "Дневник": 1}
	wantTags := map[string]int{"work/atlas": 1, "budget": 1, "рецепт": 1, "рецепт/суп": 1}
	wantMonths := map[string]int{"2024-03": 2, "2023-11": 1}
	if !maps.Equal(nbs, wantNbs) || !maps.Equal(tags, wantTags) || !maps.Equal(months, wantMonths) {
		t.Errorf("facets\n notebooks %v\n tags %v\n months %v\nwant\n %v\n %v\n %v", nbs, tags, months, wantNbs, wantTags, wantMonths)
	}
}

func TestMigrationFillsScopeFieldsOfAnExistingIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range migrations[:8] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 8;
INSERT INTO documents (doc_id, source, path, notebook, meta, version) VALUES
	('a', 'markdown', '/r/a.md', '/r', '{"tags":"Рецепт,#Work/Atlas","date":"2024-03-01"}', 1),
	('b', 'siyuan', 'Дневник/b', '20230101120000-box0001', '{"notebook_name":"Дневник"}', ` + fmt.Sprint(day("2022-05-02").UnixNano()) + `);
INSERT INTO chunks (chunk_id, doc_id, hash, lang) VALUES ('a:0', 'a', 'x', 'ru'), ('b:0', 'b', 'y', 'en');`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		f    DocFilter
		want int
	}{
		{"meta tags became tags", DocFilter{Tags: []string{"work"}}, 1},
		{"a Russian meta tag, lower-cased", DocFilter{Tags: []string{"рецепт"}}, 1},
		{"front matter date became the time", DocFilter{Since: day("2024-03-01"), Until: day("2024-03-02")}, 1},
		{"the version became the time", DocFilter{Until: day("2023-01-01")}, 1},
		{"the notebook name came from meta", DocFilter{Notebooks: []string{"дневник"}}, 1},
		{"the folder's base name is its name", DocFilter{Notebooks: []string{"r"}}, 1},
	} {
		set, err := s.AllowedChunks(ctx, tt.f)
		if err != nil || set.Len() != tt.want {
			t.Errorf("%s: %d chunks, %v; want %d", tt.name, set.Len(), err, tt.want)
		}
	}
	if n := count(t, s, "meta WHERE key = 'scope_backfill'"); n != 0 {
		t.Errorf("the backfill mark is still there")
	}
}

// undoScopeMigration takes migrations 9 and 10 off a database, for tests that
// make an index of an older schema from a new one.
func undoScopeMigration(t testing.TB, db *sql.DB) {
	t.Helper()
	for _, q := range []string{
		`DROP INDEX documents_notebook`, `DROP INDEX documents_time`,
		`ALTER TABLE documents DROP COLUMN notebook_name`, `ALTER TABLE documents DROP COLUMN doc_time`,
		`ALTER TABLE documents DROP COLUMN created`, `DROP TABLE doc_tags`, `DROP TABLE scope_seq`,
		`DROP TRIGGER scope_doc_insert`, `DROP TRIGGER scope_doc_update`, `DROP TRIGGER scope_doc_delete`,
		`DROP TRIGGER scope_chunk_insert`, `DROP TRIGGER scope_chunk_update`, `DROP TRIGGER scope_chunk_delete`,
		`DROP TABLE scope_docs`, // and those of migration 10
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
