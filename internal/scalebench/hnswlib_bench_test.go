package scalebench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/hnswlibbench"
	"github.com/exocortex/exocortex/vectors"
)

// hnswlibRows measures hnswlib (C++, built here with g++ -O3 -march=native
// from vectors/testdata/hnswlib_bench.cpp against the headers in src) on
// the suite's points and queries, in its own process: M 16, ef
// construction 128, inner product on unit vectors, one query at a time on
// one thread, at each of efs; recall against the same exact top-10. Its
// index is built once (on every core) and cached in dir as
// hnswlib-<VectorStamp>-M16-efc128.bin; later runs load it.
func hnswlibRows(b *testing.B, src, dir string, vg *Vectors, qs [][]float32, truth [][]string, efs []int) []Row {
	work := b.TempDir()
	bin, err := hnswlibbench.Build(filepath.Join("..", "..", "vectors", "testdata", "hnswlib_bench.cpp"), src, work)
	if err != nil {
		b.Fatal(err)
	}
	qPath := filepath.Join(work, "queries.f32")
	if err := writeFloats(qPath, len(qs), func(j int, dst []float32) { copy(dst, qs[j]) }); err != nil {
		b.Fatal(err)
	}
	m, efc := vectors.DefaultM, vectors.DefaultEfConstruction
	index := filepath.Join(dir, fmt.Sprintf("hnswlib-%s-M%d-efc%d.bin", VectorStamp, m, efc))
	points := filepath.Join(work, "points.f32")
	if _, err := os.Stat(index); err != nil {
		t0 := time.Now()
		if err := writeFloats(points, vg.n, func(i int, dst []float32) { vg.Vector(i, dst) }); err != nil {
			b.Fatal(err)
		}
		b.Logf("hnswlib: no index cached in %s: building it from %d points (written in %s)", index, vg.n, time.Since(t0).Round(time.Second))
	}
	res, err := hnswlibbench.Run(bin, work, hnswlibbench.Args{Points: points, Queries: qPath, Dim: Dim, M: m, EfConstr: efc,
		Passes: 1, Efs: efs, Index: index})
	os.Remove(points)
	if err != nil {
		b.Fatal(err)
	}
	if res.BuildS > 0 {
		b.Logf("hnswlib: built the index of %d points in %.1f s on every core; cached in %s", vg.n, res.BuildS, index)
	} else {
		b.Logf("hnswlib: loaded the index from %s in %.1f s", index, res.LoadS)
	}
	got := res.IDs
	var rows []Row
	for _, ef := range efs {
		l := res.Latency[ef]
		var found, want int
		for j := range truth {
			want += len(truth[j])
			if j >= len(got[ef]) {
				b.Fatalf("hnswlib_bench answered %d queries at ef %d, want %d", len(got[ef]), ef, len(qs))
			}
			for _, id := range got[ef][j] {
				if slices.Contains(truth[j], fmt.Sprintf("c%07d", id)) {
					found++
				}
			}
		}
		row := Row{Measure: "vector", Engine: fmt.Sprintf("hnswlib ef=%d", ef), Queries: len(qs), P50MS: l.P50, P95MS: l.P95,
			Recall: float64(found) / float64(max(want, 1)), RSSMB: res.RSSMiB,
			Note: "hnswlib (C++, g++ -O3 -march=native) in its own process on the same points and queries: M 16, ef construction 128, one query at a time on one thread, k=10"}
		b.Logf("vector %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f, RSS %.0f MB", row.Engine, row.P50MS, row.P95MS, row.Recall, row.RSSMB)
		rows = append(rows, row)
	}
	return rows
}

// writeFloats writes n vectors of Dim float32s, little-endian, one after
// the other (hnswlib_bench's input).
func writeFloats(path string, n int, vec func(i int, dst []float32)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	v := make([]float32, Dim)
	buf := make([]byte, 4*Dim)
	for i := range n {
		vec(i, v)
		for d, x := range v {
			binary.LittleEndian.PutUint32(buf[4*d:], math.Float32bits(x))
		}
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
