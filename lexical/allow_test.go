package lexical

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// allowedFraction picks about frac of the ids below n at random.
func allowedFraction(rng *rand.Rand, n int, frac float64) []int64 {
	var ids []int64
	for id := range int64(n) {
		if rng.Float64() < frac {
			ids = append(ids, id)
		}
	}
	return ids
}

// bruteForce is the unfiltered ranking of every matching row restricted to
// the allowed ones, cut at k: what a filtered search must return.
func bruteForce(x *Index, q Query, k int, w Weights, lang string, allow *Allow) []Hit {
	var out []Hit
	for _, h := range x.Search(q, x.Len()+1, w, lang) {
		if allow.Has(h.ID) && len(out) < k {
			out = append(out, h)
		}
	}
	return out
}

// TestAFilteredSearchEqualsBruteForceOverTheAllowedRows checks that a
// search with Allow returns exactly the best k allowed rows, with their
// unfiltered scores, at every selectivity, in English and Russian, over an
// index with tombstones and a compaction behind it.
func TestAFilteredSearchEqualsBruteForceOverTheAllowedRows(t *testing.T) {
	defer func(m int) { CompactMin = m }(CompactMin)
	CompactMin = 100
	rng := rand.New(rand.NewPCG(29, 3))
	const n = 4000
	x := New()
	for id := range int64(n) {
		x.Put(randomRow(rng, id))
	}
	for range 1500 { // replacements and deletes: tombstones, a compaction
		id := int64(rng.IntN(n))
		if rng.IntN(2) == 0 {
			x.Delete(id)
		} else {
			x.Put(randomRow(rng, id))
		}
	}
	w := Weights{0.25, 3, 1, 0.75, 1}
	queries := []struct {
		name string
		q    Query
	}{
		{"an English question finds its words", Query{Words: []string{"budget", "committee"}, Terms: []string{"budget"}}},
		{"a Russian question finds its words", Query{Words: []string{"бюджет", "комитет"}, Terms: []string{"река", "вода"}}},
		{"a mixed question finds both", Query{Words: []string{"river", "река"}, Terms: []string{"water"}}},
	}
	for _, frac := range []float64{0.5, 0.05, 0.001} {
		allow := NewAllow(allowedFraction(rng, n, frac))
		for _, tc := range queries {
			for _, lang := range []string{"", "ru"} {
				t.Run(fmt.Sprintf("%s, %.1f%% allowed, lang %q", tc.name, 100*frac, lang), func(t *testing.T) {
					got := x.SearchWith(tc.q, 10, w, SearchOptions{Lang: lang, Allow: allow})
					want := bruteForce(x, tc.q, 10, w, lang, allow)
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("got  %v\nwant %v", got, want)
					}
					if frac >= 0.05 && len(got) != 10 {
						t.Fatalf("a scope of %d rows returned %d hits, want 10", allow.Len(), len(got))
					}
				})
			}
		}
	}
}

func TestAllowSets(t *testing.T) {
	x := New()
	for id := int64(1); id <= 50; id++ {
		x.Put(Row{ID: id, Lang: "en", Cols: [NumColumns]string{"river water"}})
	}
	w := Weights{1, 1, 1, 1, 1}
	q := Query{Words: []string{"river"}}
	cases := []struct {
		name  string
		allow *Allow
		want  int
	}{
		{"no set searches every row", nil, 10},
		{"an empty set allows nothing", NewAllow(nil), 0},
		{"a set of three rows returns those three", NewAllow([]int64{3, 17, 44}), 3},
		{"ids no row has and negative ids are left out", NewAllow([]int64{-5, 7, 900}), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := x.SearchWith(q, 10, w, SearchOptions{Allow: tc.allow})
			if len(got) != tc.want {
				t.Fatalf("got %d hits %v, want %d", len(got), got, tc.want)
			}
			for _, h := range got {
				if tc.allow != nil && !tc.allow.Has(h.ID) {
					t.Fatalf("hit %d is not allowed", h.ID)
				}
			}
		})
	}
	a := NewAllow([]int64{5, 5, 64, 1 << 20})
	a.Add(64)
	a.Add(70)
	if a.Len() != 4 || a.count() != 4 || !a.Has(1<<20) || a.Has(6) || a.Has(-1) || (*Allow)(nil).Has(5) {
		t.Fatalf("Allow: Len %d count %d", a.Len(), a.count())
	}
}

// BenchmarkSearchAllow times a search of a 100k-row index unfiltered and
// with Allow at 50%, 5% and 0.1% of the rows.
func BenchmarkSearchAllow(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 100_000
	x := New()
	for id := range int64(n) {
		x.Put(randomRow(rng, id))
	}
	x.Trim()
	w := Weights{0.25, 3, 1, 0.75, 1}
	qs := make([]Query, 256)
	for i := range qs {
		qs[i] = randomQuery(rng)
	}
	for _, frac := range []float64{1, 0.5, 0.05, 0.001} {
		var allow *Allow
		if frac < 1 {
			allow = NewAllow(allowedFraction(rng, n, frac))
		}
		b.Run(fmt.Sprintf("allowed=%g%%", 100*frac), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				x.SearchWith(qs[i%len(qs)], 10, w, SearchOptions{Allow: allow})
			}
		})
	}
}
