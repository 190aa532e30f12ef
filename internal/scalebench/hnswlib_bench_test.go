package scalebench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	bin := filepath.Join(work, "hnswlib_bench")
	cpp := filepath.Join("..", "..", "vectors", "testdata", "hnswlib_bench.cpp")
	if out, err := exec.Command("g++", "-O3", "-march=native", "-std=c++17", "-pthread", "-I", src,
		"-o", bin, cpp).CombinedOutput(); err != nil {
		b.Fatalf("build hnswlib_bench from %s with headers in %s: %v\n%s", cpp, src, err, out)
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
	ids := filepath.Join(work, "ids.out")
	args := []string{points, qPath, strconv.Itoa(Dim), strconv.Itoa(m), strconv.Itoa(efc), "1", ids}
	for _, ef := range efs {
		args = append(args, strconv.Itoa(ef))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HNSWLIB_BENCH_INDEX="+index)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	os.Remove(points)
	if err != nil {
		b.Fatalf("run hnswlib_bench: %v\n%s", err, stderr.String())
	}
	type lat struct{ p50, p95 float64 }
	lats := map[int]lat{}
	var rss float64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "build-s":
			b.Logf("hnswlib: built the index of %d points in %s s on every core; cached in %s", vg.n, f[1], index)
		case len(f) == 2 && f[0] == "load-s":
			b.Logf("hnswlib: loaded the index from %s in %s s", index, f[1])
		case len(f) == 2 && f[0] == "rss-mib":
			rss, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 5 && f[0] == "ef":
			ef, _ := strconv.Atoi(f[1])
			var l lat
			l.p50, _ = strconv.ParseFloat(f[2], 64)
			l.p95, _ = strconv.ParseFloat(f[3], 64)
			lats[ef] = l
		}
	}
	got, err := readIDs(ids)
	if err != nil {
		b.Fatal(err)
	}
	var rows []Row
	for _, ef := range efs {
		l, ok := lats[ef]
		if !ok {
			b.Fatalf("hnswlib_bench printed no row for ef %d:\n%s", ef, out)
		}
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
		row := Row{Measure: "vector", Engine: fmt.Sprintf("hnswlib ef=%d", ef), Queries: len(qs), P50MS: l.p50, P95MS: l.p95,
			Recall: float64(found) / float64(max(want, 1)), RSSMB: rss,
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

// readIDs parses hnswlib_bench's "<ef> <query> <id>..." lines.
func readIDs(path string) (map[int][][]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hnswlib ids: %w", err)
	}
	defer f.Close()
	got := map[int][][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		ef, _ := strconv.Atoi(fs[0])
		qi, _ := strconv.Atoi(fs[1])
		for len(got[ef]) <= qi {
			got[ef] = append(got[ef], nil)
		}
		for _, s := range fs[2:] {
			id, _ := strconv.Atoi(s)
			got[ef][qi] = append(got[ef][qi], id)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hnswlib ids %s: %w", path, err)
	}
	return got, nil
}
