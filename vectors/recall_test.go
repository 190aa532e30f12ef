package vectors

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/synth"
)

// chunkID names synthetic point i.
func chunkID(i int) string { return fmt.Sprintf("notes/doc%05d.md:%016x", i/8, i) }

// pointID parses chunkID back.
func pointIndex(id string) int {
	n, _ := strconv.ParseInt(id[len(id)-16:], 16, 64)
	return int(n)
}

// loadSynthetic upserts n points of vec into s in batches.
func loadSynthetic(tb testing.TB, s Store, n, dim int, vec func(i int, dst []float32)) time.Duration {
	tb.Helper()
	start := time.Now()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		pts := make([]Point, 0, batch)
		for i := lo; i < min(lo+batch, n); i++ {
			v := make([]float32, dim)
			vec(i, v)
			lang := "en"
			if i%3 == 0 {
				lang = "ru"
			}
			pts = append(pts, Point{ID: chunkID(i), DocID: fmt.Sprintf("notes/doc%05d.md", i/8), Lang: lang, Vector: v})
		}
		if err := s.Upsert(context.Background(), pts); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start)
}

// measureRecall runs the queries against s and returns recall@k against the
// exact neighbours.
func measureRecall(tb testing.TB, s Store, queries [][]float32, exact [][]synth.Neighbor, k, ef int) float64 {
	tb.Helper()
	got := make([][]int, len(queries))
	for qi, q := range queries {
		res, err := s.Search(context.Background(), q, SearchOptions{K: k, Ef: ef})
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range res {
			got[qi] = append(got[qi], pointIndex(r.ID))
		}
	}
	return synth.Recall(exact, got, k)
}

func queriesOf(n, dim int, q func(j int, dst []float32)) [][]float32 {
	qs := make([][]float32, n)
	for j := range qs {
		qs[j] = make([]float32, dim)
		q(j, qs[j])
	}
	return qs
}

func TestRecallSynthetic(t *testing.T) {
	n, dim, nq := 20000, 384, 200
	if raceEnabled {
		n, nq = 3000, 50
	}
	gen := synth.New(synth.Default(1, dim, n))
	s, err := OpenEmbedded(context.Background(), t.TempDir(), dim, EmbeddedConfig{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	took := loadSynthetic(t, s, n, dim, func(i int, dst []float32) { gen.Vector(i, dst) })
	checkGraph(t, s)
	qs := queriesOf(nq, dim, func(j int, dst []float32) { gen.Query(j, dst) })
	exact := synth.ExactTopK(n, dim, func(i int, dst []float32) { gen.Vector(i, dst) }, qs, 10)
	// Filtered: the en two thirds of the points (i%3 != 0), which the graph
	// walk serves (a rarer language would be scanned exactly).
	enPoint := func(j int) int { return 3*(j/2) + 1 + j%2 }
	if p := s.planFilter(Filter{Lang: "en"}, DefaultEfSearch); p.exact && !raceEnabled {
		t.Fatal("the en filter is planned as a scan; the test wants the graph walk")
	}
	exactEn := synth.ExactTopK(n-(n+2)/3, dim, func(j int, dst []float32) { gen.Vector(enPoint(j), dst) }, qs, 10)
	for qi := range exactEn {
		for i := range exactEn[qi] {
			exactEn[qi][i].ID = enPoint(exactEn[qi][i].ID)
		}
	}
	got := make([][]int, nq)
	for qi, q := range qs {
		res, err := s.Search(context.Background(), q, SearchOptions{K: 10, Filter: Filter{Lang: "en"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if pointIndex(r.ID)%3 == 0 {
				t.Fatalf("lang filter returned %s", r.ID)
			}
			got[qi] = append(got[qi], pointIndex(r.ID))
		}
	}
	if r := synth.Recall(exactEn, got, 10); r < 0.98 {
		t.Errorf("recall@10 with a lang filter = %.4f, want >= 0.98", r)
	} else {
		t.Logf("lang filter recall@10=%.4f", r)
	}
	for _, ef := range []int{0, 96, 128} {
		r := measureRecall(t, s, qs, exact, 10, ef)
		t.Logf("n=%d built in %v (%.0f/s); ef=%d recall@10=%.4f", n, took, float64(n)/took.Seconds(), ef, r)
		if ef == 0 && r < 0.98 {
			t.Errorf("recall@10 = %.4f at the default ef, want >= 0.98", r)
		}
	}
}
