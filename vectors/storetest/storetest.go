// Package storetest is the contract every vectors.Store implementation
// passes: Run it from the implementation's tests with a function that opens
// a fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/vectors"
)

// Opener opens a fresh, empty store for one subtest; it registers its own
// cleanup (the store is closed by the suite, and Close must tolerate a
// second call).
type Opener func(t *testing.T) vectors.Store

// Run runs the contract's subtests, each on a store from open.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		run  func(t *testing.T, s vectors.Store)
	}{
		{"an empty store finds nothing and counts zero", testEmpty},
		{"search finds a stored point as its own nearest neighbour", testFindsSelf},
		{"results are ordered by cosine similarity", testOrdered},
		{"upsert of an existing id replaces the point", testUpsertReplaces},
		{"upserting the same points twice leaves the count unchanged", testUpsertIdempotent},
		{"delete removes points from results and from the count", testDelete},
		{"deleting unknown ids is fine", testDeleteUnknown},
		{"a store emptied by deletes takes new points", testRefill},
		{"a lang filter returns only that language", testFilterLang},
		{"a doc filter returns only those documents and the best match among them", testFilterDocs},
		{"lang and doc filters combine", testFilterBoth},
		{"K limits the results and zero means the default", testK},
		{"a wrong dimension is a clear error", testDimMismatch},
		{"invalid points and queries are rejected", testInvalid},
		{"searches run concurrently with upserts", testConcurrent},
		{"points are listed once each with their document", testPoints},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			tc.run(t, s)
		})
	}
}

// data makes reproducible unit vectors; nearby ids are not similar.
type data struct {
	r   *rand.Rand
	dim int
}

func newData(dim int, seed uint64) *data {
	return &data{r: rand.New(rand.NewPCG(seed, 99)), dim: dim}
}

func (d *data) vec() []float32 {
	v := make([]float32, d.dim)
	for i := range v {
		v[i] = float32(d.r.NormFloat64())
	}
	return unit(v)
}

// near returns a unit vector at cosine about 1-eps² /2 from v.
func (d *data) near(v []float32, eps float64) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = v[i] + float32(eps*d.r.NormFloat64()/math.Sqrt(float64(len(v))))
	}
	return unit(out)
}

func unit(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(ss)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

func cosine(a, b []float32) float32 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return float32(s)
}

var langs = []string{"en", "ru", ""}

// points makes n points over n/4 documents, languages cycling en, ru, "".
func (d *data) points(prefix string, n int) []vectors.Point {
	pts := make([]vectors.Point, n)
	for i := range pts {
		pts[i] = vectors.Point{
			ID:     fmt.Sprintf("%s/doc%03d.md:%016x", prefix, i/4, i),
			DocID:  fmt.Sprintf("%s/doc%03d.md", prefix, i/4),
			Lang:   langs[i%3],
			Vector: d.vec(),
		}
	}
	return pts
}

func upsert(t *testing.T, s vectors.Store, pts ...vectors.Point) {
	t.Helper()
	if err := s.Upsert(context.Background(), pts); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
}

func search(t *testing.T, s vectors.Store, q []float32, opts vectors.SearchOptions) []vectors.Result {
	t.Helper()
	res, err := s.Search(context.Background(), q, opts)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range res {
		if seen[r.ID] {
			t.Fatalf("Search returned %s twice: %v", r.ID, res)
		}
		seen[r.ID] = true
	}
	return res
}

func count(t *testing.T, s vectors.Store) int {
	t.Helper()
	n, err := s.Count(context.Background())
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return n
}

func ids(res []vectors.Result) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

// bruteForce ranks pts by cosine to q among those keep accepts.
func bruteForce(pts []vectors.Point, q []float32, keep func(vectors.Point) bool) []vectors.Point {
	var out []vectors.Point
	for _, p := range pts {
		if keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b vectors.Point) int {
		ca, cb := cosine(q, a.Vector), cosine(q, b.Vector)
		switch {
		case ca > cb:
			return -1
		case ca < cb:
			return 1
		}
		return 0
	})
	return out
}

func testEmpty(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 1)
	if n := count(t, s); n != 0 {
		t.Fatalf("Count = %d on an empty store", n)
	}
	if res := search(t, s, d.vec(), vectors.SearchOptions{}); len(res) != 0 {
		t.Fatalf("Search on an empty store = %v", res)
	}
	if s.Name() == "" || s.Dim() <= 0 {
		t.Fatalf("Name %q, Dim %d", s.Name(), s.Dim())
	}
}

func testFindsSelf(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 2)
	pts := d.points("self", 300)
	upsert(t, s, pts...)
	for _, i := range []int{0, 17, 150, 299} {
		res := search(t, s, pts[i].Vector, vectors.SearchOptions{K: 3})
		if len(res) == 0 || res[0].ID != pts[i].ID || res[0].DocID != pts[i].DocID {
			t.Fatalf("query = point %s: got %v", pts[i].ID, res)
		}
		if math.Abs(float64(res[0].Score)-1) > 1e-3 {
			t.Fatalf("self score = %v, want 1", res[0].Score)
		}
	}
}

func testOrdered(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 3)
	base := d.vec()
	var pts []vectors.Point
	for i, eps := range []float64{0.1, 0.3, 0.5, 0.7, 0.9, 1.2} {
		pts = append(pts, vectors.Point{ID: fmt.Sprintf("o:%d", i), DocID: "o", Lang: "en", Vector: d.near(base, eps)})
	}
	pts = append(pts, d.points("noise", 50)...)
	upsert(t, s, pts...)
	res := search(t, s, base, vectors.SearchOptions{K: 6})
	want := bruteForce(pts, base, nil)[:6]
	for i := range want {
		if res[i].ID != want[i].ID {
			t.Fatalf("rank %d = %s, want %s (all: %v)", i, res[i].ID, want[i].ID, ids(res))
		}
		if c := cosine(base, want[i].Vector); math.Abs(float64(res[i].Score-c)) > 2e-3 {
			t.Fatalf("rank %d score %v, cosine %v", i, res[i].Score, c)
		}
		if i > 0 && res[i].Score > res[i-1].Score {
			t.Fatalf("scores not descending: %v", res)
		}
	}
}

func testUpsertReplaces(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 4)
	pts := d.points("r", 200)
	upsert(t, s, pts...)
	old := pts[42]
	moved := vectors.Point{ID: old.ID, DocID: "r/moved.md", Lang: "ru", Vector: d.vec()}
	upsert(t, s, moved)
	if n := count(t, s); n != 200 {
		t.Fatalf("Count after replacing = %d, want 200", n)
	}
	res := search(t, s, moved.Vector, vectors.SearchOptions{K: 1})
	if len(res) != 1 || res[0].ID != old.ID || res[0].DocID != "r/moved.md" || res[0].Score < 0.999 {
		t.Fatalf("search for the new vector = %v", res)
	}
	for _, r := range search(t, s, old.Vector, vectors.SearchOptions{K: 10}) {
		if r.ID == old.ID {
			t.Fatalf("the old vector still finds %s with score %v", r.ID, r.Score)
		}
	}
	if res := search(t, s, moved.Vector, vectors.SearchOptions{K: 1, Filter: vectors.Filter{DocIDs: []string{old.DocID}}}); len(res) > 0 && res[0].ID == old.ID {
		t.Fatalf("the point is still filed under its old document: %v", res)
	}
}

func testUpsertIdempotent(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 5)
	pts := d.points("i", 100)
	upsert(t, s, pts...)
	upsert(t, s, pts...)
	upsert(t, s, pts[:10]...)
	if n := count(t, s); n != 100 {
		t.Fatalf("Count = %d, want 100", n)
	}
	// Duplicates within one batch: the last wins.
	a, b := d.vec(), d.vec()
	upsert(t, s, vectors.Point{ID: "dup", DocID: "x", Vector: a}, vectors.Point{ID: "dup", DocID: "x", Vector: b})
	if n := count(t, s); n != 101 {
		t.Fatalf("Count after a batch with a duplicate = %d, want 101", n)
	}
	if res := search(t, s, b, vectors.SearchOptions{K: 1}); len(res) != 1 || res[0].ID != "dup" {
		t.Fatalf("search for the last duplicate = %v", res)
	}
}

func testDelete(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 6)
	pts := d.points("d", 200)
	upsert(t, s, pts...)
	var gone []string
	for i := 0; i < 200; i += 5 {
		gone = append(gone, pts[i].ID)
	}
	if err := s.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s); n != 160 {
		t.Fatalf("Count after deleting 40 = %d, want 160", n)
	}
	for i := 0; i < 200; i += 5 {
		for _, r := range search(t, s, pts[i].Vector, vectors.SearchOptions{K: 5}) {
			if slices.Contains(gone, r.ID) {
				t.Fatalf("deleted %s still found", r.ID)
			}
		}
	}
	if res := search(t, s, pts[1].Vector, vectors.SearchOptions{K: 1}); len(res) != 1 || res[0].ID != pts[1].ID {
		t.Fatalf("a kept point is not found: %v", res)
	}
	// Deleted ids can come back.
	upsert(t, s, pts[0])
	if res := search(t, s, pts[0].Vector, vectors.SearchOptions{K: 1}); len(res) != 1 || res[0].ID != pts[0].ID {
		t.Fatalf("a re-added point is not found: %v", res)
	}
}

func testDeleteUnknown(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 7)
	upsert(t, s, d.points("u", 10)...)
	if err := s.Delete(context.Background(), []string{"no-such-id", "u/doc000.md:0000000000000000", "u/doc000.md:0000000000000000"}); err != nil {
		t.Fatalf("Delete with unknown ids: %v", err)
	}
	if err := s.Delete(context.Background(), nil); err != nil {
		t.Fatalf("Delete(nil): %v", err)
	}
	if n := count(t, s); n != 9 {
		t.Fatalf("Count = %d, want 9", n)
	}
}

func testRefill(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 14)
	pts := d.points("e", 40)
	upsert(t, s, pts...)
	all := make([]string, len(pts))
	for i, p := range pts {
		all[i] = p.ID
	}
	if err := s.Delete(context.Background(), all); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s); n != 0 {
		t.Fatalf("Count after deleting all = %d", n)
	}
	if res := search(t, s, pts[0].Vector, vectors.SearchOptions{}); len(res) != 0 {
		t.Fatalf("search after deleting all = %v", res)
	}
	fresh := d.points("f", 30)
	upsert(t, s, fresh...)
	for _, p := range fresh {
		if res := search(t, s, p.Vector, vectors.SearchOptions{K: 1}); len(res) != 1 || res[0].ID != p.ID {
			t.Fatalf("new point %s not found: %v", p.ID, res)
		}
	}
}

func testFilterLang(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 8)
	pts := d.points("l", 300)
	upsert(t, s, pts...)
	for _, lang := range []string{"en", "ru"} {
		for _, q := range []vectors.Point{pts[0], pts[1], pts[2]} {
			res := search(t, s, q.Vector, vectors.SearchOptions{K: 10, Filter: vectors.Filter{Lang: lang}})
			if len(res) != 10 {
				t.Fatalf("lang %s: %d results, want 10", lang, len(res))
			}
			want := bruteForce(pts, q.Vector, func(p vectors.Point) bool { return p.Lang == lang })
			if res[0].ID != want[0].ID {
				t.Fatalf("lang %s: best = %s, want %s", lang, res[0].ID, want[0].ID)
			}
			for _, r := range res {
				if i := slices.IndexFunc(pts, func(p vectors.Point) bool { return p.ID == r.ID }); pts[i].Lang != lang {
					t.Fatalf("lang %s filter returned %s in %q", lang, r.ID, pts[i].Lang)
				}
			}
		}
	}
	if res := search(t, s, pts[0].Vector, vectors.SearchOptions{Filter: vectors.Filter{Lang: "de"}}); len(res) != 0 {
		t.Fatalf("a language no point has matched %v", res)
	}
}

func testFilterDocs(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 9)
	pts := d.points("f", 400)
	upsert(t, s, pts...)
	docs := []string{pts[40].DocID, pts[200].DocID}
	keep := func(p vectors.Point) bool { return slices.Contains(docs, p.DocID) }
	for _, q := range [][]float32{pts[0].Vector, pts[399].Vector, d.vec()} {
		res := search(t, s, q, vectors.SearchOptions{K: 5, Filter: vectors.Filter{DocIDs: docs}})
		want := bruteForce(pts, q, keep)
		if len(res) != 5 {
			t.Fatalf("%d results, want 5", len(res))
		}
		if res[0].ID != want[0].ID {
			t.Fatalf("best match in %v = %s, want %s", docs, res[0].ID, want[0].ID)
		}
		for _, r := range res {
			if !slices.Contains(docs, r.DocID) {
				t.Fatalf("doc filter %v returned %s of %s", docs, r.ID, r.DocID)
			}
		}
	}
	dup := []string{docs[0], docs[0], docs[1]}
	if res := search(t, s, pts[40].Vector, vectors.SearchOptions{K: 20, Filter: vectors.Filter{DocIDs: dup}}); len(res) != 8 {
		t.Fatalf("a filter naming a document twice gave %d results, want its 8 points", len(res))
	}
	if res := search(t, s, pts[0].Vector, vectors.SearchOptions{Filter: vectors.Filter{DocIDs: []string{"nope.md"}}}); len(res) != 0 {
		t.Fatalf("an unknown document matched %v", res)
	}
}

func testFilterBoth(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 10)
	pts := d.points("b", 120)
	upsert(t, s, pts...)
	docs := []string{pts[0].DocID, pts[4].DocID, pts[8].DocID}
	res := search(t, s, d.vec(), vectors.SearchOptions{K: 10, Filter: vectors.Filter{Lang: "ru", DocIDs: docs}})
	want := 0
	for _, p := range pts {
		if p.Lang == "ru" && slices.Contains(docs, p.DocID) {
			want++
		}
	}
	if len(res) != want {
		t.Fatalf("%d results, want all %d ru points of %v", len(res), want, docs)
	}
	for _, r := range res {
		i := slices.IndexFunc(pts, func(p vectors.Point) bool { return p.ID == r.ID })
		if pts[i].Lang != "ru" || !slices.Contains(docs, r.DocID) {
			t.Fatalf("filter let through %s (%s, %q)", r.ID, r.DocID, pts[i].Lang)
		}
	}
}

func testK(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 11)
	upsert(t, s, d.points("k", 50)...)
	q := d.vec()
	if res := search(t, s, q, vectors.SearchOptions{}); len(res) != vectors.DefaultK {
		t.Fatalf("K=0 gave %d results, want %d", len(res), vectors.DefaultK)
	}
	if res := search(t, s, q, vectors.SearchOptions{K: 3, Ef: 128}); len(res) != 3 {
		t.Fatalf("K=3 gave %d results", len(res))
	}
	if res := search(t, s, q, vectors.SearchOptions{K: 80}); len(res) != 50 {
		t.Fatalf("K=80 over 50 points gave %d results", len(res))
	}
	if _, err := s.Search(context.Background(), q, vectors.SearchOptions{K: -1}); !errors.Is(err, vectors.ErrInvalid) {
		t.Fatalf("K=-1: err = %v, want ErrInvalid", err)
	}
}

func testDimMismatch(t *testing.T, s vectors.Store) {
	short := make([]float32, s.Dim()-1)
	short[0] = 1
	err := s.Upsert(context.Background(), []vectors.Point{{ID: "bad-dim", DocID: "x", Vector: short}})
	if !errors.Is(err, vectors.ErrDimMismatch) {
		t.Fatalf("Upsert with %d dims: err = %v, want ErrDimMismatch", len(short), err)
	}
	if err == nil || !containsAll(err.Error(), "bad-dim", s.Name()) {
		t.Fatalf("error %q should name the point and the store", err)
	}
	if _, err := s.Search(context.Background(), short, vectors.SearchOptions{}); !errors.Is(err, vectors.ErrDimMismatch) {
		t.Fatalf("Search with %d dims: err = %v, want ErrDimMismatch", len(short), err)
	}
	if n := count(t, s); n != 0 {
		t.Fatalf("a rejected upsert stored %d points", n)
	}
}

func testInvalid(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 12)
	zero := make([]float32, s.Dim())
	nan := d.vec()
	nan[3] = float32(math.NaN())
	for name, p := range map[string]vectors.Point{
		"empty id":    {ID: "", Vector: d.vec()},
		"zero vector": {ID: "z", Vector: zero},
		"NaN":         {ID: "n", Vector: nan},
	} {
		if err := s.Upsert(context.Background(), []vectors.Point{p}); !errors.Is(err, vectors.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.Search(context.Background(), zero, vectors.SearchOptions{}); !errors.Is(err, vectors.ErrInvalid) {
		t.Errorf("zero query: err = %v, want ErrInvalid", err)
	}
}

func testConcurrent(t *testing.T, s vectors.Store) {
	d := newData(s.Dim(), 13)
	pts := d.points("c", 600)
	upsert(t, s, pts[:100]...)
	queries := make([][]float32, 20)
	for i := range queries {
		queries[i] = d.vec()
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := s.Search(ctx, queries[(i+w)%len(queries)], vectors.SearchOptions{K: 5, Filter: vectors.Filter{Lang: langs[i%2]}})
				if err != nil {
					errs <- err
					return
				}
				for j := 1; j < len(res); j++ {
					if res[j].Score > res[j-1].Score {
						errs <- fmt.Errorf("unordered results %v", res)
						return
					}
				}
			}
		})
	}
	for lo := 100; lo < len(pts); lo += 50 {
		if err := s.Upsert(ctx, pts[lo:lo+50]); err != nil {
			t.Error(err)
		}
		if err := s.Delete(ctx, []string{pts[lo-100].ID}); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := count(t, s); n != 590 {
		t.Fatalf("Count = %d, want 590", n)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
