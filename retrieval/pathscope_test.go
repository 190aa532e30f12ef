package retrieval_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
)

// pathNotes share folder names and their beginnings, in two notebooks.
var pathNotes = []scopeNote{
	{id: "a", notebook: "/vault/work", nbName: "Work", path: "/vault/work/projects/atlas/budget.md", lang: "en", text: "Atlas budget."},
	{id: "b", notebook: "/vault/work", nbName: "Work", path: "/vault/work/projects/atlas.md", lang: "en", text: "Atlas overview."},
	{id: "c", notebook: "/vault/work", nbName: "Work", path: "/vault/work/projects/atlas-old/plan.md", lang: "ru", text: "Старый план Атласа."},
	{id: "d", notebook: "/vault/work", nbName: "Work", path: "/vault/work/proj/notes.md", lang: "en", text: "Proj notes."},
	{id: "e", notebook: "/vault/home", nbName: "Home", path: "/vault/home/projects/atlas/list.md", lang: "ru", text: "Список дел Атласа."},
}

var pathCases = []struct {
	name string
	in   []string // path scopes
	out  []string // not-path scopes
	want []string
}{
	{"a folder keeps the notes below it and the note of its name in every notebook", []string{"projects/atlas"}, nil, []string{"a", "b", "e"}},
	{"case and slashes around a folder do not matter", []string{"/Projects/Atlas/"}, nil, []string{"a", "b", "e"}},
	{"a partial folder name matches no longer folder", []string{"proj"}, nil, []string{"d"}},
	{"the beginning of a folder's name matches nothing", []string{"projects/atl"}, nil, nil},
	{"a note by its file name keeps only it", []string{"projects/atlas.md"}, nil, []string{"b"}},
	{"a note by its path keeps only it", []string{"projects/atlas/budget.md"}, nil, []string{"a"}},
	{"a whole path names one notebook's folder", []string{"/vault/work/projects"}, nil, []string{"a", "b", "c"}},
	{"a notebook's whole folder keeps all of it", []string{"/vault/home"}, nil, []string{"e"}},
	{"two folders keep either", []string{"proj", "projects/atlas-old"}, nil, []string{"c", "d"}},
	{"an excluded folder drops the note of its name and what is below it", nil, []string{"projects/atlas"}, []string{"c", "d"}},
	{"an excluded partial folder name drops only its own folder", nil, []string{"proj"}, []string{"a", "b", "c", "e"}},
	{"an excluded whole path drops one notebook's folder", nil, []string{"/vault/work/projects/atlas"}, []string{"c", "d", "e"}},
	{"a folder less an inner note", []string{"projects"}, []string{"projects/atlas/budget.md"}, []string{"b", "c", "e"}},
	{"an empty path narrows nothing", []string{"/"}, nil, []string{"a", "b", "c", "d", "e"}},
}

// TestPathScopesMatchTheSameNotesInTheStoreAndOnQdrant runs each path
// case on the store's chunk set and on the fake Qdrant's payload filter
// (no store in between), so that the two cannot drift apart.
func TestPathScopesMatchTheSameNotesInTheStoreAndOnQdrant(t *testing.T) {
	ctx := context.Background()
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	for i := range pathNotes {
		pathNotes[i].updated = time.Date(2024, 3, 1+i, 9, 0, 0, 0, time.UTC)
	}
	st, _ := scopeCorpus(t, store.LexicalMemory, pathNotes)
	vs, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: 8, Qdrant: vectors.QdrantConfig{Addr: fake.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	pts := notePoints(pathNotes)
	if err := retrieval.SetMeta(ctx, st, pts); err != nil {
		t.Fatal(err)
	}
	if err := vs.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	for _, tc := range pathCases {
		t.Run(tc.name, func(t *testing.T) {
			scope := &schemas.Scope{Include: schemas.ScopeSet{Paths: tc.in}, Exclude: schemas.ScopeSet{Paths: tc.out}}
			f, err := retrieval.DocFilter(scope)
			if err != nil {
				t.Fatal(err)
			}
			set, err := st.AllowedChunks(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var inStore []string
			for _, n := range pathNotes {
				if f.IsZero() || set.HasDoc(n.id) {
					inStore = append(inStore, n.id)
				}
			}
			if !slices.Equal(inStore, tc.want) {
				t.Errorf("store: notes %v, want %v", inStore, tc.want)
			}
			meta, err := retrieval.ScopeMeta(scope)
			if err != nil {
				t.Fatal(err)
			}
			res, err := vs.Search(ctx, allAxes(), vectors.SearchOptions{K: 10, Filter: vectors.Filter{Meta: meta}})
			if err != nil {
				t.Fatal(err)
			}
			var onQdrant []string
			for _, r := range res {
				onQdrant = append(onQdrant, r.DocID)
			}
			sort.Strings(onQdrant)
			if !slices.Equal(onQdrant, tc.want) {
				t.Errorf("qdrant: notes %v, want %v (filter %+v)", onQdrant, tc.want, meta)
			}
		})
	}
}
