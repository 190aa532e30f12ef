package retrieval_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
)

// fixedQuery is a query embedder that returns a chosen vector, so a test
// decides exactly what the vector retriever ranks first.
type fixedQuery []float32

func (f fixedQuery) EmbedQuery(context.Context, string) ([]float32, error) { return f, nil }
func (fixedQuery) Name() string                                            { return "fixed" }

func unit(dim, axis int) []float32 {
	v := make([]float32, dim)
	v[axis] = 1
	return v
}

// corpus indexes two documents: d1 is a heading h with paragraphs a, b, c
// (b references x), d2 holds x. Each block is its own chunk.
func corpus(t *testing.T) (*store.Store, vectors.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	texts := map[string]string{
		"h": "Corvids", "a": "Ravens are large black birds.", "b": "Crows use tools to get food.",
		"c": "Magpies like shiny things.", "x": "Tool use in animals is rare.",
	}
	doc := map[string]string{"h": "d1", "a": "d1", "b": "d1", "c": "d1", "x": "d2"}
	for i, id := range []string{"h", "a", "b", "c", "x"} {
		c := &schemas.ChunkCreated{ChunkID: "ch-" + id, DocID: doc[id], DocVersion: 1, Ordinal: i, Hash: "h-" + id,
			Text: texts[id], BlockIDs: []string{id}, Lang: "en"}
		if id == "b" {
			c.Refs = []string{"x"}
		}
		if _, err := st.UpsertChunk(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []*schemas.DocStructure{
		{DocID: "d1", Title: "Birds", Path: "birds.md", Hash: "d1", Version: 1, ChunkIDs: []string{"ch-h", "ch-a", "ch-b", "ch-c"},
			Blocks: []schemas.BlockNode{{ID: "h", Type: schemas.BlockHeading, ChunkID: "ch-h"},
				{ID: "a", Type: schemas.BlockParagraph, ParentID: "h", ChunkID: "ch-a"},
				{ID: "b", Type: schemas.BlockParagraph, ParentID: "h", ChunkID: "ch-b", Refs: []string{"x"}},
				{ID: "c", Type: schemas.BlockParagraph, ParentID: "h", ChunkID: "ch-c"}}},
		{DocID: "d2", Title: "Animals", Path: "animals.md", Hash: "d2", Version: 1, ChunkIDs: []string{"ch-x"},
			Blocks: []schemas.BlockNode{{ID: "x", Type: schemas.BlockParagraph, ChunkID: "ch-x"}}},
	} {
		if _, err := st.ApplyStructure(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := vectors.Open(ctx, vectors.Config{Dir: t.TempDir(), Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	var pts []vectors.Point
	for i, id := range []string{"h", "a", "b", "c", "x"} {
		pts = append(pts, vectors.Point{ID: "ch-" + id, DocID: doc[id], Lang: "en", Vector: unit(8, i)})
	}
	if err := vs.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	return st, vs
}

func TestReciprocalRankFusionScoresAndOrdersByBothLists(t *testing.T) {
	st, vs := corpus(t)
	// The query vector points at "a" (axis 1), then leans towards "c" (axis 3).
	q := unit(8, 1)
	q[3] = 0.5
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(q), Config: retrieval.Config{WeakScore: 0.1}}
	out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "crows tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Mode != schemas.ModeHybrid {
		t.Fatalf("mode %s (%v), want hybrid without a reranker", out.Mode, out.Reasons)
	}
	const k = 60
	for _, c := range out.Candidates {
		want := 0.0
		if c.Lexical != nil {
			want += 1 / (k + float64(c.Lexical.Rank))
		}
		if c.Vector != nil {
			want += 1 / (k + float64(c.Vector.Rank))
		}
		if math.Abs(c.Fused-want) > 1e-12 {
			t.Errorf("%s: fused %v, want %v", c.ChunkID, c.Fused, want)
		}
		if c.Text == "" {
			t.Errorf("%s has no text (vector-only candidates are looked up)", c.ChunkID)
		}
	}
	for i := 1; i < len(out.Candidates); i++ {
		if out.Candidates[i].Fused > out.Candidates[i-1].Fused || out.Candidates[i].FusedRank != i+1 {
			t.Fatalf("candidates out of order at %d: %+v", i, out.Candidates)
		}
	}
	// "b" is BM25's best ("crows", "tools") and "a" the vectors' best: a
	// chunk both lists hold ranks above one only a single list holds high.
	first := out.Candidates[0]
	if first.Lexical == nil || first.Vector == nil {
		t.Errorf("top candidate %s was not found by both retrievers: %+v", first.ChunkID, first)
	}
	if first.Vector.Rank == 1 && first.Lexical.Rank == 1 {
		t.Logf("top candidate is first in both lists")
	}
}

func TestModesAreLoweredWhenModelsAreMissingAndSaySo(t *testing.T) {
	st, vs := corpus(t)
	ctx := context.Background()
	lex := &retrieval.Retriever{Index: st}
	out, err := lex.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "crows", Options: schemas.QueryOptions{Mode: schemas.ModeVector}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Mode != schemas.ModeLexical || len(out.Reasons) != 1 || !strings.HasPrefix(out.Reasons[0], retrieval.ReasonNoEmbedder) {
		t.Fatalf("vector asked without an embedder: %s %v", out.Mode, out.Reasons)
	}
	vec := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(unit(8, 4)), Config: retrieval.Config{WeakScore: 0.1}}
	out, err = vec.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "zzz", Options: schemas.QueryOptions{Mode: schemas.ModeVector}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Mode != schemas.ModeVector || out.Candidates[0].ChunkID != "ch-x" || out.Candidates[0].Lexical != nil {
		t.Fatalf("vector mode: %+v", out.Candidates)
	}
	rr, err := vec.Rerank(ctx, &schemas.QueryRetrieved{Query: schemas.Query{QueryID: "q"}, Searched: "zzz", Mode: schemas.ModeRerank, Candidates: out.Candidates})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Mode != schemas.ModeHybrid || !strings.Contains(strings.Join(rr.Reasons, " "), retrieval.ReasonNoReranker) {
		t.Errorf("rerank without a reranker: %s %v", rr.Mode, rr.Reasons)
	}
}

func TestAWeakBestScoreWidensTheSearch(t *testing.T) {
	st, vs := corpus(t)
	q := unit(8, 7) // no stored vector points there: the best cosine is 0
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(q), Config: retrieval.Config{VectorK: 20}}
	out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "nothing"}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(out.Reasons, "\n")
	if !strings.Contains(got, "ef 64 -> 96") || !strings.Contains(got, "ef 96 -> 128") {
		t.Errorf("reasons %q, want widening 64 -> 96 -> 128", got)
	}
}

func TestGraphExpansionAddsParentThenRefThenSiblingsThenNext(t *testing.T) {
	st, _ := corpus(t)
	r := &retrieval.Retriever{Index: st}
	cand := schemas.Candidate{Passage: schemas.Passage{ChunkID: "ch-b", DocID: "d1", BlockID: "b", BlockIDs: []string{"b"}, Text: "Crows use tools"},
		Fused: 1.0 / 61, FusedRank: 1}
	for _, tc := range []struct {
		expand int
		want   string
	}{
		{4, "ch-b ch-h:graph:parent ch-x:graph:ref ch-a:graph:sibling ch-c:graph:sibling"},
		{2, "ch-b ch-h:graph:parent ch-x:graph:ref"},
		{-1, "ch-b"},
	} {
		out, err := r.Rerank(context.Background(), &schemas.QueryRetrieved{Query: schemas.Query{QueryID: "q", Options: schemas.QueryOptions{Expand: tc.expand}}, Mode: schemas.ModeHybrid, Candidates: []schemas.Candidate{cand}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, c := range out.Contexts {
			s := c.ChunkID
			if c.Source != "fused" {
				s += ":" + c.Source
				if c.Of != "ch-b" || c.Text == "" {
					t.Errorf("neighbour %+v", c)
				}
			}
			if c.Rank != i+1 {
				t.Errorf("rank %d at %d", c.Rank, i)
			}
			got = append(got, s)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("expand %d: %s\nwant %s", tc.expand, strings.Join(got, " "), tc.want)
		}
	}
}

func TestQdrantIsAskedWithAWiderEfEachTime(t *testing.T) {
	st, _ := corpus(t)
	fake, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx := context.Background()
	vs, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: 8, Qdrant: vectors.QdrantConfig{Addr: fake.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	if err := vs.Upsert(ctx, []vectors.Point{{ID: "ch-a", DocID: "d1", Lang: "en", Vector: unit(8, 1)}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		vectorK int
		want    string
	}{
		{"each rung above k widens the search", 10, "[64 96 128]"},
		{"rungs at or below k would repeat the same search, so one is made", 200, "[64]"},
		{"only the rungs above k are asked again", 100, "[64 128]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fake.QueryEfs())
			r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(unit(8, 7)), Config: retrieval.Config{VectorK: tc.vectorK}}
			if _, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "nothing"}}); err != nil {
				t.Fatal(err)
			}
			if efs := fmt.Sprint(fake.QueryEfs()[before:]); efs != tc.want {
				t.Errorf("hnsw_ef sent to Qdrant: %v, want %s", efs, tc.want)
			}
		})
	}
}

// linkedNotes indexes two Markdown-style notes (no document block, so a
// wikilink's target is the document id, not a block): "kettle" has a
// paragraph that links to the note "acid", which has two chunks.
func linkedNotes(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	chunks := []*schemas.ChunkCreated{
		{ChunkID: "md-kettle:0", DocID: "md-kettle", Ordinal: 0, Text: "Descale the kettle with vinegar once a month.",
			BlockIDs: []string{"k1"}, Refs: []string{"md-acid"}},
		{ChunkID: "md-acid:0", DocID: "md-acid", Ordinal: 0, Text: "Citric acid is a weak organic acid.", BlockIDs: []string{"a1"}},
		{ChunkID: "md-acid:1", DocID: "md-acid", Ordinal: 1, Text: "It dissolves limescale faster than vinegar does.", BlockIDs: []string{"a2"}},
	}
	for _, c := range chunks {
		c.DocVersion, c.Hash, c.Lang = 1, "h-"+c.ChunkID, "en"
		if _, err := st.UpsertChunk(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []*schemas.DocStructure{
		{DocID: "md-kettle", Title: "Kettle", Path: "kettle.md", Hash: "k", Version: 1, ChunkIDs: []string{"md-kettle:0"},
			Blocks: []schemas.BlockNode{{ID: "k1", Type: schemas.BlockParagraph, ChunkID: "md-kettle:0", Refs: []string{"md-acid"}}}},
		{DocID: "md-acid", Title: "Citric acid", Path: "acid.md", Hash: "a", Version: 1, ChunkIDs: []string{"md-acid:0", "md-acid:1"},
			Blocks: []schemas.BlockNode{{ID: "a1", Type: schemas.BlockParagraph, ChunkID: "md-acid:0"},
				{ID: "a2", Type: schemas.BlockParagraph, ChunkID: "md-acid:1"}}},
	} {
		if _, err := st.ApplyStructure(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestGraphExpansionFollowsLinksToWholeNotes(t *testing.T) {
	st := linkedNotes(t)
	r := &retrieval.Retriever{Index: st}
	ctx := context.Background()
	for _, tc := range []struct {
		name, query, want string
	}{
		// Only the kettle note matches: the linked note comes in by its first chunk.
		{"a link to a note adds the note's first chunk", "descale kettle", "md-kettle:0 md-acid:0:graph:ref"},
		// The acid note's second chunk matched too but fell below k=1: it is
		// the linked note's best chunk for this query, so it is the one added.
		{"a link to a note adds the note's chunk that matched best", "descale kettle vinegar", "md-kettle:0 md-acid:1:graph:ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: tc.query,
				Options: schemas.QueryOptions{Mode: schemas.ModeLexical, K: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Rerank(ctx, rq)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range out.Contexts {
				s := c.ChunkID
				if strings.HasPrefix(c.Source, "graph:") {
					s += ":" + c.Source
					if c.Of != "md-kettle:0" || c.Text == "" || c.Title != "Citric acid" {
						t.Errorf("neighbour %+v", c)
					}
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("contexts %s\nwant     %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestASingleRetrieversModeScoresByThatRetriever(t *testing.T) {
	st, vs := corpus(t)
	ctx := context.Background()
	q := unit(8, 2)
	q[1] = 0.5
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: fixedQuery(q), Config: retrieval.Config{WeakScore: 0.1}}
	for _, mode := range []string{schemas.ModeLexical, schemas.ModeVector, schemas.ModeHybrid} {
		rq, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "crows tools ravens",
			Options: schemas.QueryOptions{Mode: mode, Expand: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Rerank(ctx, rq)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contexts) < 2 {
			t.Fatalf("%s: contexts %+v", mode, out.Contexts)
		}
		for _, c := range out.Contexts {
			var want float64
			var src string
			switch mode {
			case schemas.ModeLexical:
				want, src = c.Lexical.Score, "lexical" // BM25, not 1/(60+rank)
			case schemas.ModeVector:
				want, src = c.Vector.Score, "vector" // the cosine
			default:
				want, src = 0, "fused"
				if c.Lexical != nil {
					want += 1 / (60 + float64(c.Lexical.Rank))
				}
				if c.Vector != nil {
					want += 1 / (60 + float64(c.Vector.Rank))
				}
			}
			if math.Abs(c.Score-want) > 1e-12 || c.Source != src {
				t.Errorf("%s: %s scored %v (%s), want %v (%s)", mode, c.ChunkID, c.Score, c.Source, want, src)
			}
		}
	}
}
