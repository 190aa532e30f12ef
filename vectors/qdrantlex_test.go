package vectors_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/vectors"
)

// unit returns a dim-dimensional unit vector along axis i.
func unit(dim, i int) []float32 {
	v := make([]float32, dim)
	v[i%dim] = 1
	return v
}

func sparse(pairs ...float32) vectors.SparseVector {
	var v vectors.SparseVector
	for i := 0; i < len(pairs); i += 2 {
		v.Indices = append(v.Indices, uint32(pairs[i]))
		v.Values = append(v.Values, pairs[i+1])
	}
	return v
}

func ids(rs []vectors.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// qdrantIDF is Qdrant's IDF (lib/segment, sparse vector index with
// modifier idf): ln(1 + (N - n + 0.5)/(n + 0.5)).
func qdrantIDF(n, N float64) float64 { return math.Log(1 + (N-n+0.5)/(n+0.5)) }

func TestQdrantCreatesTheLexicalSparseVectorWithIDF(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_create", 8)
	defer s.Close()
	sp := srv.CreateRequests()[0].GetSparseVectorsConfig().GetMap()[vectors.QdrantLexicalVector]
	if sp == nil || sp.GetModifier() != qdrant.Modifier_Idf {
		t.Fatalf("sparse vector %q = %v, want one with the Idf modifier", vectors.QdrantLexicalVector, sp)
	}
	if ok, why := s.HasLexical(); !ok {
		t.Fatalf("HasLexical = false (%s) on a new collection", why)
	}
}

func TestQdrantLexicalScoresAreTheIDFWeightedDotProduct(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_scores", 8)
	defer s.Close()
	lexicalScores(t, s)
}

// TestIntegrationQdrantLexical checks the fake's sparse scoring against a
// real Qdrant at EXOCORTEX_QDRANT_ADDR (host:gRPC port), in a throwaway
// collection.
func TestIntegrationQdrantLexical(t *testing.T) {
	addr := os.Getenv("EXOCORTEX_QDRANT_ADDR")
	if addr == "" {
		t.Skip("set EXOCORTEX_QDRANT_ADDR=host:6334 to run against a real Qdrant")
	}
	name := fmt.Sprintf("exocortex_lex_%d", time.Now().UnixNano())
	s := openQdrant(t, addr, name, 8)
	t.Cleanup(func() {
		c, err := qdrant.NewClient(&qdrant.Config{Host: strings.Split(addr, ":")[0], Port: portOf(t, addr), SkipCompatibilityCheck: true})
		if err == nil {
			c.DeleteCollection(context.Background(), name)
			c.Close()
		}
		s.Close()
	})
	lexicalScores(t, s)
	c, err := qdrant.NewClient(&qdrant.Config{Host: strings.Split(addr, ":")[0], Port: portOf(t, addr), SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lexicalStates(t, s, c, name)
}

func TestQdrantPointsSayWhichLackTheCurrentLexicalFormat(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_states", 8)
	defer s.Close()
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: portOf(t, srv.Addr()), SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lexicalStates(t, s, c, "lex_states")
}

// lexicalStates checks Points' Lexical state: a point written with its
// lexical vector and passage is current, one written with the dense
// vector alone (before lexical search on Qdrant) misses them, one written
// without the lex_format marker (the first format) is outdated.
func lexicalStates(t *testing.T, s *vectors.Qdrant, c *qdrant.Client, coll string) {
	t.Helper()
	ctx := context.Background()
	err := s.Upsert(ctx, []vectors.Point{
		{ID: "now", DocID: "d", Vector: unit(8, 0), Sparse: sparse(1, 1), Passage: "p"},
		{ID: "empty", DocID: "d", Vector: unit(8, 1), Passage: "p"}, // a chunk without terms
		{ID: "dense", DocID: "d", Vector: unit(8, 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// As exocortex wrote points in the first lexical format: no marker.
	_, err = c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: coll, Wait: qdrant.PtrOf(true), Points: []*qdrant.PointStruct{{
		Id: qdrant.NewID(vectors.PointUUID("first")),
		Vectors: qdrant.NewVectorsMap(map[string]*qdrant.Vector{"": qdrant.NewVectorDense(unit(8, 3)),
			vectors.QdrantLexicalVector: qdrant.NewVectorSparse([]uint32{1}, []float32{1})}),
		Payload: qdrant.NewValueMap(map[string]any{"chunk_id": "first", "doc_id": "d", "lang": "", "passage": "p"}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := s.Points(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]vectors.PointRef{}
	for _, r := range refs {
		got[r.ID] = r
	}
	want := map[string]vectors.PointRef{
		"now":   {ID: "now", DocID: "d", Lexical: vectors.LexicalCurrent, LexFormat: vectors.LexicalFormat},
		"empty": {ID: "empty", DocID: "d", Lexical: vectors.LexicalCurrent, LexFormat: vectors.LexicalFormat},
		"dense": {ID: "dense", DocID: "d", Lexical: vectors.LexicalMissing},
		"first": {ID: "first", DocID: "d", Lexical: vectors.LexicalOutdated},
	}
	if len(got) != len(want) {
		t.Fatalf("points %+v, want %+v", refs, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("point %s: %+v, want %+v", id, got[id], w)
		}
	}
}

func lexicalScores(t *testing.T, s *vectors.Qdrant) {
	t.Helper()
	ctx := context.Background()
	// Term 1 is in three of five points, term 2 in one, term 3 in none.
	pts := []vectors.Point{
		{ID: "a", DocID: "d1", Vector: unit(8, 0), Sparse: sparse(1, 1.0, 2, 0.5), Passage: `{"text":"a"}`},
		{ID: "b", DocID: "d1", Vector: unit(8, 1), Sparse: sparse(1, 2.0)},
		{ID: "c", DocID: "d2", Vector: unit(8, 2), Sparse: sparse(1, 0.5, 7, 4)},
		{ID: "d", DocID: "d2", Vector: unit(8, 3), Sparse: sparse(7, 1)},
		// A point without a lexical vector counts in N all the same
		// (Qdrant's available point count).
		{ID: "e", DocID: "d3", Vector: unit(8, 4)},
	}
	if err := s.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	res, err := s.SearchLexical(ctx, sparse(1, 1, 2, 2, 3, 1), vectors.SearchOptions{K: 10})
	if err != nil {
		t.Fatal(err)
	}
	idf1, idf2 := qdrantIDF(3, 5), qdrantIDF(1, 5)
	want := map[string]float64{"a": 1*1.0*idf1 + 2*0.5*idf2, "b": 2.0 * idf1, "c": 0.5 * idf1}
	if got := strings.Join(ids(res), ","); got != "a,b,c" {
		t.Fatalf("order %s, want a,b,c (d shares no term with the query, e has none: both left out); scores %+v", got, res)
	}
	for _, r := range res {
		if math.Abs(float64(r.Score)-want[r.ID]) > 1e-5 {
			t.Errorf("%s: score %.6f, want %.6f", r.ID, r.Score, want[r.ID])
		}
	}
	if res[0].Passage != `{"text":"a"}` || res[1].Passage != "" {
		t.Errorf("passages %q, %q; want a's stored passage and none for b", res[0].Passage, res[1].Passage)
	}

	// A delete takes the point out of the results and out of the IDF.
	if err := s.Delete(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	res, err = s.SearchLexical(ctx, sparse(1, 1), vectors.SearchOptions{K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(res), ","); got != "b,c" {
		t.Fatalf("after deleting a: %s, want b,c", got)
	}
	if w := 2.0 * qdrantIDF(2, 4); math.Abs(float64(res[0].Score)-w) > 1e-5 {
		t.Errorf("after deleting a: b scores %.6f, want %.6f (N=4, n=2)", res[0].Score, w)
	}
	// The dense search still sees every point.
	if n, _ := s.Count(ctx); n != 4 {
		t.Errorf("count %d, want 4", n)
	}
	dense, err := s.Search(ctx, unit(8, 3), vectors.SearchOptions{K: 1})
	if err != nil || len(dense) != 1 || dense[0].ID != "d" {
		t.Errorf("dense search for d: %v, %v", dense, err)
	}
}

func TestQdrantLexicalFiltersKeepTheLanguageAndTheUndetermined(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_filter", 8)
	defer s.Close()
	ctx := context.Background()
	err := s.Upsert(ctx, []vectors.Point{
		{ID: "ru", DocID: "d1", Lang: "ru", Vector: unit(8, 0), Sparse: sparse(5, 1)},
		{ID: "en", DocID: "d2", Lang: "en", Vector: unit(8, 1), Sparse: sparse(5, 1)},
		{ID: "none", DocID: "d3", Vector: unit(8, 2), Sparse: sparse(5, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.SearchLexical(ctx, sparse(5, 1), vectors.SearchOptions{K: 10, Filter: vectors.Filter{Lang: "ru"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(res), ","); got != "none,ru" && got != "ru,none" {
		t.Errorf("lang ru: %s, want ru and none", got)
	}
	res, err = s.SearchLexical(ctx, sparse(5, 1), vectors.SearchOptions{K: 10, Filter: vectors.Filter{DocIDs: []string{"d2"}}})
	if err != nil || strings.Join(ids(res), ",") != "en" {
		t.Errorf("doc d2: %v, %v; want en", ids(res), err)
	}
}

func TestQdrantLexicalBM25FavoursRareTermsAndShortChunks(t *testing.T) {
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_bm25", 8)
	defer s.Close()
	ctx := context.Background()
	filler := strings.Repeat("The weather report mentions clouds and rain over the hills. ", 20)
	docs := map[string]string{
		"short":  "Hedgehogs hibernate through the winter.",
		"long":   filler + "Hedgehogs hibernate through the winter." + filler,
		"common": "Winter is cold. The winter nights are long in winter.",
		"other":  "Кошки спят на солнце.",
		"other2": "Winter sports and winter holidays.",
	}
	var pts []vectors.Point
	i := 0
	for id, text := range docs {
		pts = append(pts, vectors.Point{ID: id, DocID: id, Vector: unit(8, i),
			Sparse: vectors.LexicalDoc(a, vectors.LexicalFields{Text: text, Title: "Notes"})})
		i++
	}
	if err := s.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	res, err := s.SearchLexical(ctx, vectors.LexicalQuery(a.Query("hedgehog winter")), vectors.SearchOptions{K: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(res)
	if len(got) != 4 || got[0] != "short" || got[1] != "long" {
		t.Fatalf("hedgehog winter: %v, want short then long (the rare term) then the winter-only chunks; the Russian one not at all", got)
	}
	// Russian lemmas: a query in another form of the word finds it.
	res, err = s.SearchLexical(ctx, vectors.LexicalQuery(a.Query("кошка")), vectors.SearchOptions{K: 10})
	if err != nil || len(res) != 1 || res[0].ID != "other" {
		t.Fatalf("кошка: %v, %v; want the chunk about кошки", ids(res), err)
	}
}

func TestQdrantPassagesByID(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_passages", 8)
	defer s.Close()
	ctx := context.Background()
	err := s.Upsert(ctx, []vectors.Point{
		{ID: "a", DocID: "d", Vector: unit(8, 0), Sparse: sparse(1, 1), Passage: "pa"},
		{ID: "b", DocID: "d", Vector: unit(8, 1), Passage: "pb"}, // no terms (an empty chunk)
		{ID: "c", DocID: "d", Vector: unit(8, 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Passages(ctx, []string{"a", "b", "c", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"] != "pa" || got["b"] != "pb" {
		t.Errorf("passages %q, want a=pa b=pb (c has none, missing is unknown)", got)
	}
}

func TestQdrantLexicalRejectsABadSparseVector(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "lex_bad", 8)
	defer s.Close()
	ctx := context.Background()
	for name, sv := range map[string]vectors.SparseVector{
		"repeated index": {Indices: []uint32{3, 3}, Values: []float32{1, 1}},
		"lengths differ": {Indices: []uint32{3}, Values: []float32{1, 2}},
		"NaN value":      {Indices: []uint32{3}, Values: []float32{float32(math.NaN())}},
	} {
		err := s.Upsert(ctx, []vectors.Point{{ID: "x", Vector: unit(8, 0), Sparse: sv}})
		if !errors.Is(err, vectors.ErrInvalid) {
			t.Errorf("upsert with %s: %v, want ErrInvalid", name, err)
		}
		if _, err := s.SearchLexical(ctx, sv, vectors.SearchOptions{}); !errors.Is(err, vectors.ErrInvalid) {
			t.Errorf("search with %s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestQdrantCollectionWithoutTheSparseVectorOpensDenseOnly(t *testing.T) {
	srv := startFake(t)
	ctx := context.Background()
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: portOf(t, srv.Addr()), SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A collection as the store created it before lexical search on Qdrant.
	err = c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: "old",
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 8, Distance: qdrant.Distance_Cosine})})
	if err != nil {
		t.Fatal(err)
	}
	s := openQdrant(t, srv.Addr(), "old", 8)
	defer s.Close()
	ok, why := s.HasLexical()
	if ok || !strings.Contains(why, "no sparse vector") {
		t.Fatalf("HasLexical = %v, %q; want false, saying the collection has no sparse vector", ok, why)
	}
	// Writes still work (the sparse part is left out) and a lexical search says why it cannot run.
	if err := s.Upsert(ctx, []vectors.Point{{ID: "a", Vector: unit(8, 0), Sparse: sparse(1, 1), Passage: "p"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SearchLexical(ctx, sparse(1, 1), vectors.SearchOptions{}); !errors.Is(err, vectors.ErrNoLexical) {
		t.Errorf("lexical search on the old collection: %v, want ErrNoLexical", err)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The term ids of every stored lexical vector depend on this hash: it must
// stay 32-bit FNV-1a of field + term.
func TestLexicalTermIDIsFNV1aOfFieldAndTerm(t *testing.T) {
	for _, tc := range []struct{ field, term string }{{"w:", "history"}, {"l:", "москва"}, {"w:", ""}, {"l:", "санкт-петербург"}} {
		h := fnv.New32a()
		h.Write([]byte(tc.field + tc.term))
		if got := vectors.LexicalTermID(tc.field, tc.term); got != h.Sum32() {
			t.Errorf("LexicalTermID(%q, %q) = %d, FNV-1a gives %d", tc.field, tc.term, got, h.Sum32())
		}
	}
	if vectors.LexicalTermID("w:", "москва") == vectors.LexicalTermID("l:", "москва") {
		t.Error("a word and a lemma of the same spelling share an id")
	}
}
