package retrieval_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
)

// scopeNote is one note of the scoped corpus: one chunk, its own vector.
type scopeNote struct {
	id, notebook, nbName, path, lang, text string
	tags                                   []string
	updated                                time.Time
	refs                                   []string // blocks it references
}

func day(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// scopeNotes are Russian and English notes in two notebooks (Markdown
// folders), with tags and times; every one matches "budget бюджет".
var scopeNotes = []scopeNote{
	{id: "w1", notebook: "/vault/work", nbName: "Work", path: "/vault/work/projects/atlas/budget.md", lang: "en",
		text: "The Atlas budget is 40k for the quarter.", tags: []string{"work/atlas"}, updated: day("2024-03-10T09:00:00Z"),
		refs: []string{"b-p2"}},
	{id: "w2", notebook: "/vault/work", nbName: "Work", path: "/vault/work/projects/atlas/plan.md", lang: "ru",
		text: "Бюджет проекта Атлас утверждён на квартал.", tags: []string{"work"}, updated: day("2024-02-01T09:00:00Z")},
	{id: "p1", notebook: "/vault/home", nbName: "Home", path: "/vault/home/recipes/borsch.md", lang: "ru",
		text: "Бюджет на борщ: свёкла, капуста, картофель.", tags: []string{"recipe"}, updated: day("2024-03-31T23:00:00Z")},
	{id: "p2", notebook: "/vault/home", nbName: "Home", path: "/vault/home/diary/budget.md", lang: "en",
		text: "Family budget for the winter holidays.", updated: day("2023-12-01T09:00:00Z")},
}

func chunkOf(doc string) string { return doc + ":0000000000000001" }

// scopeCorpus indexes notes in a store (lexical engine engine) and an
// embedded vector store (note i on axis i).
func scopeCorpus(t *testing.T, engine string, notes []scopeNote) (*store.Store, vectors.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Lexical = engine
	t.Cleanup(func() { st.Close() })
	indexNotes(t, st, notes)
	vs, err := vectors.Open(ctx, vectors.Config{Dir: t.TempDir(), Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	if err := vs.Upsert(ctx, notePoints(notes)); err != nil {
		t.Fatal(err)
	}
	return st, vs
}

func indexNotes(t testing.TB, st *store.Store, notes []scopeNote) {
	t.Helper()
	if err := st.Batch(context.Background(), func(ctx context.Context) error {
		indexBatch(ctx, t, st, notes)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func indexBatch(ctx context.Context, t testing.TB, st *store.Store, notes []scopeNote) {
	for _, n := range notes {
		block := "b-" + n.id
		if _, err := st.UpsertChunk(ctx, &schemas.ChunkCreated{ChunkID: chunkOf(n.id), DocID: n.id, DocVersion: 1, Hash: "h" + n.id,
			Text: n.text, BlockIDs: []string{block}, Lang: n.lang, Refs: n.refs}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyStructure(ctx, &schemas.DocStructure{DocID: n.id, Source: schemas.SourceMarkdown, Path: n.path,
			Notebook: n.notebook, NotebookName: n.nbName, Title: n.id, Hash: n.id, Version: 1, Tags: n.tags, Updated: n.updated,
			ChunkIDs: []string{chunkOf(n.id)}, Blocks: []schemas.BlockNode{{ID: block, Type: schemas.BlockParagraph,
				ChunkID: chunkOf(n.id), Refs: n.refs}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func notePoints(notes []scopeNote) []vectors.Point {
	var pts []vectors.Point
	for i, n := range notes {
		pts = append(pts, vectors.Point{ID: chunkOf(n.id), DocID: n.id, Lang: n.lang, Vector: unit(8, i%8)})
	}
	return pts
}

// allAxes is a query vector as near to every note's vector.
func allAxes() []float32 {
	v := make([]float32, 8)
	for i := range v {
		v[i] = 1
	}
	return v
}

func docsOf(cands []schemas.Candidate) []string {
	var out []string
	for _, c := range cands {
		out = append(out, c.DocID)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

var scopeCases = []struct {
	name  string
	scope schemas.Scope
	lang  string // Options.Lang
	want  []string
}{
	{"a notebook by its name keeps its notes", schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"work"}}}, "", []string{"w1", "w2"}},
	{"a notebook by its folder keeps its notes", schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"/vault/home"}}}, "", []string{"p1", "p2"}},
	{"a path prefix within the notebook keeps the folder", schemas.Scope{Include: schemas.ScopeSet{Paths: []string{"projects/atlas"}}}, "", []string{"w1", "w2"}},
	{"a document keeps only it", schemas.Scope{Include: schemas.ScopeSet{Docs: []string{"p2"}}}, "", []string{"p2"}},
	{"a tag keeps its nested tags too", schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"#Work"}}}, "", []string{"w1", "w2"}},
	{"a Russian tag scope finds the recipe", schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"recipe"}}}, "", []string{"p1"}},
	{"a language keeps the Russian notes", schemas.Scope{Include: schemas.ScopeSet{Langs: []string{"ru"}}}, "", []string{"p1", "w2"}},
	{"since keeps the notes from then on", schemas.Scope{Since: "2024-03-01"}, "", []string{"p1", "w1"}},
	{"a bare until date keeps its whole day", schemas.Scope{Since: "2024-03-01", Until: "2024-03-31"}, "", []string{"p1", "w1"}},
	{"until is exclusive of the next day", schemas.Scope{Until: "2024-03-30"}, "", []string{"p2", "w1", "w2"}},
	{"an excluded tag drops its notes", schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"work"}}}, "", []string{"p1", "p2"}},
	{"an excluded language keeps the others", schemas.Scope{Exclude: schemas.ScopeSet{Langs: []string{"en"}}}, "", []string{"p1", "w2"}},
	{"an excluded notebook and path combine", schemas.Scope{Exclude: schemas.ScopeSet{Notebooks: []string{"Work"}, Paths: []string{"recipes"}}}, "", []string{"p2"}},
	{"options.lang is one more included language", schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"work"}}}, "en", []string{"w1"}},
}

func TestScopedRetrievalKeepsEachScopeKindOnEveryEngine(t *testing.T) {
	ctx := context.Background()
	for _, engine := range []string{store.LexicalMemory, store.LexicalFTS5} {
		st, vs := scopeCorpus(t, engine, scopeNotes)
		for _, mode := range []string{schemas.ModeLexical, schemas.ModeVector, schemas.ModeHybrid} {
			r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(allAxes()), Config: retrieval.Config{WeakScore: 0.01}}
			for _, tc := range scopeCases {
				t.Run(engine+"/"+mode+"/"+tc.name, func(t *testing.T) {
					scope := tc.scope
					out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "budget бюджет",
						Options: schemas.QueryOptions{Mode: mode, Lang: tc.lang, Scope: &scope}}})
					if err != nil {
						t.Fatal(err)
					}
					if got := docsOf(out.Candidates); !slices.Equal(got, tc.want) {
						t.Fatalf("notes %v, want %v (reasons %v)", got, tc.want, out.Reasons)
					}
				})
			}
		}
	}
}

func TestAScopeThatMatchesNothingSaysSo(t *testing.T) {
	st, vs := scopeCorpus(t, store.LexicalMemory, scopeNotes)
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(allAxes())}
	for _, scope := range []schemas.Scope{
		{Include: schemas.ScopeSet{Notebooks: []string{"Nowhere"}}},
		{Include: schemas.ScopeSet{Tags: []string{"рецепт"}}},
		{Since: "2030-01-01"},
	} {
		out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "budget",
			Options: schemas.QueryOptions{Scope: &scope}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Candidates) != 0 || len(out.Reasons) == 0 || !strings.HasPrefix(out.Reasons[len(out.Reasons)-1], retrieval.ReasonScopeEmpty+": no note matches the scope") {
			t.Errorf("scope %+v: %d candidates, reasons %v; want none and %s", scope, len(out.Candidates), out.Reasons, retrieval.ReasonScopeEmpty)
		}
	}
}

// TestAnEmptyScopeNamesTheNotebooksAndTagsTheIndexHas: a notebook or tag
// the index lacks is named, with what it has, so the person can correct
// it; a known notebook whose notes miss the rest of the scope says nothing
// more.
func TestAnEmptyScopeNamesTheNotebooksAndTagsTheIndexHas(t *testing.T) {
	st, vs := scopeCorpus(t, store.LexicalMemory, scopeNotes)
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(allAxes())}
	cases := []struct {
		name       string
		scope      schemas.Scope
		want, nope string
	}{
		{"an unknown notebook lists the notebooks", schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Nowhere"}}},
			`the index has no notebook "Nowhere" (its notebooks: `, "no tag"},
		{"an unknown Russian tag lists the tags", schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"рецепты"}}},
			`the index has no tag "рецепты" (its most used tags: `, "no notebook"},
		{"a known notebook and a parent tag name nothing", schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"work"}, Tags: []string{"work"}}, Since: "2030-01-01"},
			"", "the index has no"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "budget",
				Options: schemas.QueryOptions{Scope: &c.scope}}})
			if err != nil {
				t.Fatal(err)
			}
			last := out.Reasons[len(out.Reasons)-1]
			if !strings.HasPrefix(last, retrieval.ReasonScopeEmpty) || !strings.Contains(last, c.want) || strings.Contains(last, c.nope) {
				t.Errorf("reason %q: want %q in it and not %q", last, c.want, c.nope)
			}
			if strings.Contains(c.want, "no notebook") && !strings.Contains(last, "Work (") {
				t.Errorf("reason %q names no notebook of the index", last)
			}
		})
	}
}

// TestANarrowScopeStillReturnsK: 2 notes of 2000 (0.1%) are in the scope,
// and they rank last unscoped in both retrievers; a scoped search returns
// both, from each retriever and each lexical engine.
func TestANarrowScopeStillReturnsK(t *testing.T) {
	ctx := context.Background()
	var notes []scopeNote
	for i := range 2000 {
		n := scopeNote{id: fmt.Sprintf("n%04d", i), notebook: "/vault/big", path: fmt.Sprintf("/vault/big/n%04d.md", i),
			lang: "en", text: "budget budget budget of the atlas project", updated: day("2024-01-01T00:00:00Z")}
		if i%1000 == 7 {
			n.notebook, n.path = "/vault/small", fmt.Sprintf("/vault/small/n%04d.md", i)
			n.text = "the budget, once, among many other words about something else entirely"
		}
		notes = append(notes, n)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	indexNotes(t, st, notes)
	vs, err := vectors.Open(ctx, vectors.Config{Dir: t.TempDir(), Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	pts := notePoints(notes)
	for i := range pts {
		pts[i].Vector = unit(8, 0)
		if strings.Contains(notes[i].notebook, "small") {
			pts[i].Vector = unit(8, 5)
		}
	}
	if err := vs.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(unit(8, 0)),
		Config: retrieval.Config{LexicalK: 2, VectorK: 2, WeakScore: 0.01}}
	scope := &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"/vault/small"}}}
	for _, engine := range []string{store.LexicalMemory, store.LexicalFTS5} {
		st.Lexical = engine
		for _, mode := range []string{schemas.ModeLexical, schemas.ModeVector} {
			for _, sc := range []*schemas.Scope{nil, scope} {
				out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "budget",
					Options: schemas.QueryOptions{Mode: mode, Scope: sc}}})
				if err != nil {
					t.Fatal(err)
				}
				got := docsOf(out.Candidates)
				inScope := slices.Equal(got, []string{"n0007", "n1007"})
				if inScope != (sc != nil) {
					t.Errorf("%s %s scoped %v: notes %v", engine, mode, sc != nil, got)
				}
			}
		}
	}
}

func TestGraphExpansionStaysInsideTheScope(t *testing.T) {
	st, vs := scopeCorpus(t, store.LexicalMemory, scopeNotes)
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(unit(8, 0))}
	for _, tc := range []struct {
		name    string
		outside bool
		want    bool
	}{
		{"a reference out of the scope is not followed", false, false},
		{"expand_outside follows it", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scope := &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Work"}}, ExpandOutside: tc.outside}
			rq, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "Atlas budget quarter",
				Options: schemas.QueryOptions{Mode: schemas.ModeLexical, K: 1, Scope: scope}}})
			if err != nil {
				t.Fatal(err)
			}
			rr, err := r.Rerank(context.Background(), rq)
			if err != nil {
				t.Fatal(err)
			}
			got := false
			for _, c := range rr.Contexts {
				got = got || c.DocID == "p2"
			}
			if len(rr.Contexts) == 0 || rr.Contexts[0].DocID != "w1" || got != tc.want {
				t.Fatalf("contexts %+v: the neighbour p2 added %v, want %v", rr.Contexts, got, tc.want)
			}
		})
	}
}

// TestRecentPutsTheNewerOfTwoEqualNotesFirst: two notes with the same text
// tie; the older one comes first by chunk id without a preference, the
// newer one with Recent.
func TestRecentPutsTheNewerOfTwoEqualNotesFirst(t *testing.T) {
	now := time.Now().UTC()
	notes := []scopeNote{
		{id: "a-old", notebook: "/v", path: "/v/a.md", lang: "ru", text: "Бюджет на отпуск: билеты и гостиница.", updated: now.AddDate(-1, 0, 0)},
		{id: "b-new", notebook: "/v", path: "/v/b.md", lang: "ru", text: "Бюджет на отпуск: билеты и гостиница.", updated: now.AddDate(0, 0, -3)},
		{id: "c-eng", notebook: "/v", path: "/v/c.md", lang: "en", text: "An unrelated note about birds.", updated: now},
	}
	st, vs := scopeCorpus(t, store.LexicalMemory, notes)
	r := &retrieval.Retriever{Index: st, Vectors: vs}
	for _, tc := range []struct {
		name  string
		scope *schemas.Scope
		want  []string
	}{
		{"without recent the tie keeps its order", nil, []string{"a-old", "b-new"}},
		{"with recent the newer note comes first", &schemas.Scope{Recent: true}, []string{"b-new", "a-old"}},
		{"recent within a scope too", &schemas.Scope{Recent: true, Include: schemas.ScopeSet{Langs: []string{"ru"}}}, []string{"b-new", "a-old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "бюджет отпуска",
				Options: schemas.QueryOptions{Mode: schemas.ModeLexical, Scope: tc.scope}}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range out.Candidates {
				got = append(got, c.DocID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v (reasons %v)", got, tc.want, out.Reasons)
			}
		})
	}
}

// TestTheHalfLifeDecidesBetweenABetterMatchAndANewerNote: the note that
// matches better is 60 days old, the weaker one a day; a short half-life
// puts the newer first, a century-long one leaves the better match first.
func TestTheHalfLifeDecidesBetweenABetterMatchAndANewerNote(t *testing.T) {
	now := time.Now().UTC()
	notes := []scopeNote{
		{id: "old", notebook: "/v", path: "/v/old.md", lang: "ru", text: "Бюджет Атласа: пересмотр бюджета Атласа.", updated: now.AddDate(0, 0, -60)},
		{id: "new", notebook: "/v", path: "/v/new.md", lang: "ru", text: "Длинная заметка о поездках, птицах и садах, и один раз о бюджете.", updated: now.AddDate(0, 0, -1)},
		{id: "x1", notebook: "/v", path: "/v/x1.md", lang: "en", text: "Crows crack nuts with tools.", updated: now},
		{id: "x2", notebook: "/v", path: "/v/x2.md", lang: "en", text: "Tomatoes need full sun.", updated: now},
	}
	st, vs := scopeCorpus(t, store.LexicalMemory, notes)
	for _, tc := range []struct {
		name     string
		halfLife time.Duration
		want     []string
	}{
		{"a half-life of 7 days puts the newer note first", 7 * 24 * time.Hour, []string{"new", "old"}},
		{"a half-life of a century leaves the better match first", 36500 * 24 * time.Hour, []string{"old", "new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &retrieval.Retriever{Index: st, Vectors: vs, Config: retrieval.Config{RecencyHalfLife: tc.halfLife}}
			out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "бюджет Атласа",
				Options: schemas.QueryOptions{Mode: schemas.ModeLexical, Scope: &schemas.Scope{Recent: true}}}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range out.Candidates {
				got = append(got, c.DocID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v (reasons %v)", got, tc.want, out.Reasons)
			}
		})
	}
}

func TestRecencyShareHalvesEveryHalfLife(t *testing.T) {
	cfg := retrieval.Config{RecencyHalfLife: 10 * 24 * time.Hour}
	fresh := retrieval.RecencyShare(0, cfg)
	if want := 1.0 / 61; fresh != want {
		t.Errorf("a fresh note's share %v, want a first place's 1/61", fresh)
	}
	if got := retrieval.RecencyShare(10*24*time.Hour, cfg); got != fresh/2 {
		t.Errorf("one half-life: %v, want %v", got, fresh/2)
	}
	if got := retrieval.RecencyShare(-time.Hour, cfg); got != fresh {
		t.Errorf("a note from the future: %v, want a fresh one's %v", got, fresh)
	}
}

// TestQdrantFiltersTheScopeByPayload: the points carry their notes'
// metadata (retrieval.SetMeta, as the index stage writes them) and a
// scoped vector search on Qdrant (the fake) keeps to the scope.
func TestQdrantFiltersTheScopeByPayload(t *testing.T) {
	ctx := context.Background()
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	st, _ := scopeCorpus(t, store.LexicalMemory, scopeNotes)
	vs, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: 8, Qdrant: vectors.QdrantConfig{Addr: fake.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	pts := notePoints(scopeNotes)
	if err := retrieval.SetMeta(ctx, st, pts); err != nil {
		t.Fatal(err)
	}
	if err := vs.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(allAxes()), Config: retrieval.Config{WeakScore: 0.01}}
	for _, tc := range scopeCases {
		t.Run(tc.name, func(t *testing.T) {
			scope := tc.scope
			out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "budget",
				Options: schemas.QueryOptions{Mode: schemas.ModeVector, Lang: tc.lang, Scope: &scope}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := docsOf(out.Candidates); !slices.Equal(got, tc.want) {
				t.Fatalf("notes %v, want %v (reasons %v)", got, tc.want, out.Reasons)
			}
		})
	}
}
