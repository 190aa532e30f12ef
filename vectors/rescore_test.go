package vectors

import (
	"context"
	"slices"
	"testing"

	"github.com/exocortex/exocortex/internal/synth"
)

// TestRescoreKeepsTopK checks selective rescoring against rescoring every
// candidate: the same ids in the same order with the same scores, for plain,
// lang-filtered and document-filtered searches at several k and ef, while
// reading fewer raw vectors than ef.
func TestRescoreKeepsTopK(t *testing.T) {
	n, dim, nq := 6000, 384, 300
	if raceEnabled {
		n, nq = 2000, 60
	}
	gen := synth.New(synth.Default(7, dim, n))
	s, err := OpenEmbedded(context.Background(), t.TempDir(), dim, EmbeddedConfig{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loadSynthetic(t, s, n, dim, func(i int, dst []float32) { gen.Vector(i, dst) })
	qs := queriesOf(nq, dim, func(j int, dst []float32) { gen.Query(j, dst) })
	ctx := context.Background()
	for _, opts := range []SearchOptions{
		{K: 10},
		{K: 1},
		{K: 10, Ef: 128},
		{K: 40, Ef: 64},
		{K: 10, Filter: Filter{Lang: "en"}},
		{K: 5, Filter: Filter{DocIDs: []string{"notes/doc00001.md", "notes/doc00100.md", "notes/doc00200.md"}}},
	} {
		for qi, q := range qs {
			s.rescoreAll = true
			want, err := s.Search(ctx, q, opts)
			if err != nil {
				t.Fatal(err)
			}
			s.rescoreAll = false
			got, err := s.Search(ctx, q, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%+v, query %d: selective rescoring returned\n%v\nrescoring all returned\n%v", opts, qi, got, want)
			}
		}
	}

	// It reads fewer vectors than ef: count what it keeps of a plain search.
	sc := s.g.getScratch()
	defer s.g.putScratch(sc)
	var kept, total int
	for _, q := range qs {
		qn, err := normalize(q)
		if err != nil {
			t.Fatal(err)
		}
		cands := s.g.search(sc, qn, DefaultEfSearch, s.accept(s.planFilter(Filter{}, DefaultEfSearch)))
		total += len(cands)
		kept += len(s.g.rescoreCandidates(sc, cands, 10))
	}
	t.Logf("rescored %d of %d candidates (%.1f%%)", kept, total, 100*float64(kept)/float64(total))
	if kept*2 > total {
		t.Errorf("selective rescoring kept %d of %d candidates, want under half", kept, total)
	}
	if kept < 10*nq {
		t.Errorf("selective rescoring kept %d candidates for %d queries, want at least k=10 each", kept, nq)
	}
}

// TestRescoreCandidatesBound checks the rule itself on made-up candidates:
// with k=2, a candidate whose upper end is below the second-largest lower end
// is dropped, one whose upper end reaches it is kept.
func TestRescoreCandidatesBound(t *testing.T) {
	g := newGraph(4, 16, 64)
	if err := g.grow(4); err != nil {
		t.Fatal(err)
	}
	defer g.release()
	// Scale 0.01 for every record: z·σ = 6·0.01/√12 ≈ 0.0173.
	for range 4 {
		g.addNode(recordWithScale(4, 0.01), 0)
	}
	cands := []candidate{{0.90, 0}, {0.85, 1}, {0.85 - 2*0.0173 + 0.001, 2}, {0.85 - 2*0.0173 - 0.001, 3}}
	sc := g.getScratch()
	got := g.rescoreCandidates(sc, slices.Clone(cands), 2)
	var ids []uint32
	for _, c := range got {
		ids = append(ids, c.id)
	}
	if !slices.Equal(ids, []uint32{0, 1, 2}) {
		t.Fatalf("kept %v, want [0 1 2]", ids)
	}
}

func recordWithScale(dim int, scale float32) []byte {
	x := make([]float32, dim)
	x[0] = scale * 127
	rec := make([]byte, recordSize(dim))
	quantize(x, rec)
	return rec
}

// TestRescoreColdPageCache checks that rescoring reads the same vectors when
// they are not in the page cache: every read treated as a miss (advised
// together, then read), and the raw file's pages really dropped.
func TestRescoreColdPageCache(t *testing.T) {
	n, dim, nq := 4000, 384, 100
	gen := synth.New(synth.Default(11, dim, n))
	s, err := OpenEmbedded(context.Background(), t.TempDir(), dim, EmbeddedConfig{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loadSynthetic(t, s, n, dim, func(i int, dst []float32) { gen.Vector(i, dst) })
	qs := queriesOf(nq, dim, func(j int, dst []float32) { gen.Query(j, dst) })
	ctx := context.Background()
	opts := SearchOptions{K: 10, Ef: 96}
	warm := make([][]Result, nq)
	for qi, q := range qs {
		if warm[qi], err = s.Search(ctx, q, opts); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what string) {
		t.Helper()
		for qi, q := range qs {
			got, err := s.Search(ctx, q, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, warm[qi]) {
				t.Fatalf("%s, query %d: got\n%v\nwant\n%v", what, qi, got, warm[qi])
			}
		}
	}

	before := s.raw.coldReads.Load()
	s.raw.forceCold = true
	same("every read a miss")
	s.raw.forceCold = false
	if got := s.raw.coldReads.Load() - before; got < int64(10*nq) {
		t.Errorf("with every read a miss, %d cold reads counted, want at least %d", got, 10*nq)
	}

	if err := s.raw.sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.raw.dropCache(); err != nil {
		t.Fatal(err)
	}
	before = s.raw.coldReads.Load()
	same("page cache dropped")
	// Whether pages were really dropped depends on the file system (tmpfs
	// keeps them); the results above must match either way.
	t.Logf("after dropping the page cache: %d cold reads, RWF_NOWAIT unsupported: %v", s.raw.coldReads.Load()-before, s.raw.noNowait.Load())
}
