package retrieve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/index"
	"github.com/exocortex/exocortex/workers/retrieve"
)

const (
	guideNotes = "../../../shared/eval/siyuan-guide"
	guideSet   = "../../eval/testdata/siyuan-guide-answers.jsonl"
	xquadRu    = "../../../shared/eval/xquad.ru.json"
	xquadEn    = "../../../shared/eval/xquad.en.json"
	testDim    = 8
)

func msgOf(t testing.TB, ev schemas.Event) *bus.Msg {
	t.Helper()
	subject := schemas.Stamp(ev, "trace")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &bus.Msg{Subject: subject, Data: data, Delivered: 1, TraceID: "trace"}
}

// pseudoVector is a chunk's stand-in embedding: the lexical leg is what is
// compared, the dense vectors only have to be there.
func pseudoVector(id string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(id))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]float32, testDim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// indexBoth runs docs through the chunk stage and the index stage writing
// to a SQLite file and to a (fake) Qdrant collection, then sends the index
// stage an embedding of every chunk, as the embed stage would. It returns
// the SQLite store and the fake's address.
func indexBoth(t *testing.T, docs func(fn func(*schemas.DocChanged) error) error) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	vs, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: testDim, Qdrant: vectors.QdrantConfig{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	ch := chunk.NewHandler(chunking.DefaultConfig(), bus.NewMemKV())
	ix, err := index.NewWithVectors(index.DefaultConfig(), st, vs)
	if err != nil {
		t.Fatal(err)
	}
	var items []schemas.EmbeddedChunk
	err = docs(func(doc *schemas.DocChanged) error {
		evs, err := ch.Handle(ctx, msgOf(t, doc))
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := ix.Handle(ctx, msgOf(t, ev)); err != nil {
				return err
			}
			if c, ok := ev.(*schemas.ChunkCreated); ok && !c.Tombstone {
				items = append(items, schemas.EmbeddedChunk{ChunkID: c.ChunkID, DocID: c.DocID, Hash: c.Hash, Lang: c.Lang,
					DocVersion: c.DocVersion, Vector: pseudoVector(c.ChunkID)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < len(items); lo += 64 {
		e := &schemas.EmbedDone{Model: "pseudo", Dim: testDim, Items: items[lo:min(lo+64, len(items))]}
		if _, err := ix.Handle(ctx, msgOf(t, e)); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := vs.Count(ctx); n != len(items) || n == 0 {
		t.Fatalf("%d points in Qdrant, want one per chunk (%d)", n, len(items))
	}
	return st, srv.Addr()
}

// statelessRetrieve is a retrieve worker as on another machine: the retrieve
// stage over a Qdrant connection of its own and the analyzer, no SQLite.
func statelessRetrieve(t *testing.T, addr string) (bus.Handler, *retrieval.VectorIndex) {
	t.Helper()
	vs, err := vectors.Open(context.Background(), vectors.Config{Kind: vectors.KindQdrant, Dim: testDim, Qdrant: vectors.QdrantConfig{Addr: addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	ls := vs.(vectors.LexicalStore)
	if ok, why := ls.HasLexical(); !ok {
		t.Fatalf("the collection has no lexical vectors: %s", why)
	}
	x := &retrieval.VectorIndex{Store: ls, Analyzer: a}
	return retrieve.NewRetrieve(&retrieval.Retriever{Index: x}), x
}

func top(cands []schemas.Candidate, k int) []string {
	var out []string
	for _, c := range cands[:min(k, len(cands))] {
		out = append(out, c.ChunkID)
	}
	return out
}

// compareLexical asks each question of the lexical leg both ways (the
// SQLite index; the stateless retrieve stage on Qdrant) and returns the
// mean overlap of the top 10, the share of questions with the same first
// hit, and the share of questions whose gold the SQLite top 10 holds that
// the Qdrant top 10 holds too.
func compareLexical(t *testing.T, st *store.Store, stage bus.Handler, qs []eval.Question) (overlap, first float64) {
	var recallSQL, recallQd, golds float64
	t.Helper()
	ctx := context.Background()
	sqlite := &retrieval.Retriever{Index: st}
	worst, worstQ := 2.0, ""
	n := 0
	for i, q := range qs {
		// Literal, as the doors send it: the eval's questions are compared
		// word for word, not read for a scope ("in 2019" would be one).
		sub := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("q%d", i), Question: q.Question, Lang: q.Lang,
			Options: schemas.QueryOptions{Mode: schemas.ModeLexical, Literal: true}}}
		want, err := sqlite.Retrieve(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := stage.Handle(ctx, msgOf(t, sub))
		if err != nil {
			t.Fatalf("retrieve on Qdrant %q: %v", q.Question, err)
		}
		got := evs[0].(*schemas.QueryRetrieved)
		a, b := top(want.Candidates, 10), top(got.Candidates, 10)
		if len(a) == 0 {
			continue
		}
		n++
		common := 0
		for _, id := range b {
			if slices.Contains(a, id) {
				common++
			}
		}
		o := float64(common) / float64(len(a))
		overlap += o
		if len(b) > 0 && a[0] == b[0] {
			first++
		}
		if len(q.Gold) > 0 {
			golds++
			if holdsGold(want.Candidates, q.Gold) {
				recallSQL++
			}
			if holdsGold(got.Candidates, q.Gold) {
				recallQd++
			}
		}
		if o < worst {
			worst, worstQ = o, q.Question
		}
		// The passages come whole from Qdrant.
		if len(got.Candidates) > 0 {
			c := got.Candidates[0]
			if c.Text == "" || c.DocID == "" || len(c.BlockIDs) == 0 {
				t.Fatalf("%q: the first candidate from Qdrant lacks its passage: %+v", q.Question, c.Passage)
			}
		}
	}
	if n == 0 {
		t.Fatal("no question found anything in SQLite")
	}
	t.Logf("%d questions: mean overlap@10 %.3f, same first hit %.3f; lowest overlap %.1f for %q", n, overlap/float64(n), first/float64(n), worst, worstQ)
	t.Logf("recall@10 of the gold over %.0f questions: SQLite %.3f, Qdrant %.3f", golds, recallSQL/golds, recallQd/golds)
	if recallQd < recallSQL-0.05*golds {
		t.Errorf("recall@10 on Qdrant %.3f is more than 0.05 under SQLite's %.3f", recallQd/golds, recallSQL/golds)
	}
	return overlap / float64(n), first / float64(n)
}

// holdsGold reports whether the top 10 holds a chunk of a gold document or
// block.
func holdsGold(cands []schemas.Candidate, gold []string) bool {
	for _, c := range cands[:min(10, len(cands))] {
		if slices.Contains(gold, c.DocID) {
			return true
		}
		for _, b := range c.BlockIDs {
			if slices.Contains(gold, b) {
				return true
			}
		}
	}
	return false
}

func TestRetrieveOnQdrantWithoutSQLiteMatchesTheIndexOnTheSiYuanGuide(t *testing.T) {
	if _, err := os.Stat(guideNotes); err != nil {
		t.Skipf("the SiYuan guide is not here (%v): it lives in shared/eval/siyuan-guide", err)
	}
	set, err := eval.Load(guideSet)
	if err != nil {
		t.Fatal(err)
	}
	st, addr := indexBoth(t, func(fn func(*schemas.DocChanged) error) error {
		return notes.Walk([]string{guideNotes}, fn, func(path string, err error) { t.Errorf("%s: %v", path, err) })
	})
	stage, _ := statelessRetrieve(t, addr)
	overlap, first := compareLexical(t, st, stage, set.Questions)
	if overlap < 0.95 || first < 0.95 {
		t.Errorf("overlap@10 %.3f, same first hit %.3f; want both at least 0.95", overlap, first)
	}
}

func TestRetrieveOnQdrantWithoutSQLiteMatchesTheIndexOnXQuAD(t *testing.T) {
	var docs []*schemas.DocChanged
	var qs []eval.Question
	for _, path := range []string{xquadRu, xquadEn} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("XQuAD is not here (%v): it lives in shared/eval", err)
		}
		set, err := eval.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, set.Docs...)
		// Every 8th question: 150 per language keep the test short.
		for i := 0; i < len(set.Questions); i += 8 {
			qs = append(qs, set.Questions[i])
		}
	}
	st, addr := indexBoth(t, func(fn func(*schemas.DocChanged) error) error {
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	})
	stage, x := statelessRetrieve(t, addr)
	// The notes' languages (which translations are searched) are counted
	// on Qdrant as in SQLite.
	want, err := st.ChunkLangs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.ChunkLangs(context.Background())
	if err != nil || !maps.Equal(got, want) || got["ru"] == 0 || got["en"] == 0 {
		t.Fatalf("chunk languages on Qdrant %v (%v), in SQLite %v", got, err, want)
	}
	overlap, first := compareLexical(t, st, stage, qs)
	if overlap < 0.95 || first < 0.95 {
		t.Errorf("overlap@10 %.3f, same first hit %.3f; want both at least 0.95", overlap, first)
	}
}
