package vectors

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/internal/synth"
)

// BenchmarkHnswlib compares the embedded store with hnswlib (C++, built here
// with g++ -O3 -march=native from testdata/hnswlib_bench.cpp) on the same
// points and queries as BenchmarkSearch: M = 16, ef construction 128, inner
// product on unit vectors, K = 10, one query at a time on one thread. It
// runs only where EXOCORTEX_HNSWLIB_DIR names a directory holding hnswlib's
// headers (hnswlib/hnswlib.h: github.com/nmslib/hnswlib, header-only), and
// the 1M set only with EXOCORTEX_BENCH_1M=1:
//
//	EXOCORTEX_HNSWLIB_DIR=/path/to/hnswlib go test -run '^$' -bench Hnswlib/synthetic-100k ./vectors
//
// hnswlib runs in its own process, before the Go side; both report p50-ms,
// p95-ms, p99-ms and recall@10 per ef, and rss-MiB (hnswlib: after its build
// with the input freed; Go: after opening the snapshot).
func BenchmarkHnswlib(b *testing.B) {
	src := os.Getenv("EXOCORTEX_HNSWLIB_DIR")
	for _, n := range []int{100_000, 1_000_000} {
		b.Run("synthetic-"+sizeName(n), func(b *testing.B) {
			if src == "" {
				b.Skip("set EXOCORTEX_HNSWLIB_DIR to a directory with hnswlib/hnswlib.h to compare with hnswlib")
			}
			if n >= 1_000_000 && os.Getenv("EXOCORTEX_BENCH_1M") == "" {
				b.Skip("set EXOCORTEX_BENCH_1M=1 for the 1M benchmarks")
			}
			benchHnswlib(b, src, n)
		})
	}
}

func benchHnswlib(b *testing.B, src string, n int) {
	dir, _, qs, exact := benchSetup(b, "synthetic", n)
	efs := []int{64, 96, 128}
	cfg := EmbeddedConfig{}.withDefaults()

	// The points as hnswlib reads them: the store's raw file is exactly
	// that (point i is node i in a store built by upserts only).
	e, err := OpenEmbedded(context.Background(), dir, benchDim, EmbeddedConfig{})
	if err != nil {
		b.Fatal(err)
	}
	if st := e.Stats(); st.Nodes != n || st.Deleted != 0 {
		b.Fatalf("bench store has %d nodes (%d deleted), want %d and none", st.Nodes, st.Deleted, n)
	}
	points := e.raw.f.Name()
	e.Close()

	work := b.TempDir()
	qPath := filepath.Join(work, "queries.f32")
	var qb []byte
	for _, q := range qs {
		qn, err := normalize(q)
		if err != nil {
			b.Fatal(err)
		}
		qb = append(qb, floatBytes(qn)...)
	}
	if err := os.WriteFile(qPath, qb, 0o600); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(work, "hnswlib_bench")
	if out, err := exec.Command("g++", "-O3", "-march=native", "-std=c++17", "-pthread", "-I", src,
		"-o", bin, filepath.Join("testdata", "hnswlib_bench.cpp")).CombinedOutput(); err != nil {
		b.Fatalf("build hnswlib_bench: %v\n%s", err, out)
	}
	idsPath := filepath.Join(work, "ids.out")
	args := []string{points, qPath, strconv.Itoa(benchDim), strconv.Itoa(cfg.M), strconv.Itoa(cfg.EfConstruction), "3", idsPath}
	for _, ef := range efs {
		args = append(args, strconv.Itoa(ef))
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		b.Fatalf("run hnswlib_bench: %v", err)
	}
	type row struct{ p50, p95, p99 float64 }
	rows := map[int]row{}
	var buildS, rss float64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "build-s":
			buildS, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "rss-mib":
			rss, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 5 && f[0] == "ef":
			ef, _ := strconv.Atoi(f[1])
			var r row
			r.p50, _ = strconv.ParseFloat(f[2], 64)
			r.p95, _ = strconv.ParseFloat(f[3], 64)
			r.p99, _ = strconv.ParseFloat(f[4], 64)
			rows[ef] = r
		}
	}
	got := readHnswlibIDs(b, idsPath, len(qs))
	b.Logf("hnswlib built %d points in %.1fs on all threads; RSS %.0f MiB", n, buildS, rss)
	for _, ef := range efs {
		r, ok := rows[ef]
		if !ok {
			b.Fatalf("hnswlib_bench printed no row for ef %d:\n%s", ef, out)
		}
		b.Run(fmt.Sprintf("hnswlib/ef=%d", ef), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(r.p50, "p50-ms")
			b.ReportMetric(r.p95, "p95-ms")
			b.ReportMetric(r.p99, "p99-ms")
			b.ReportMetric(synth.Recall(exact, got[ef], 10), "recall@10")
			b.ReportMetric(rss, "rss-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}

	e, err = OpenEmbedded(context.Background(), dir, benchDim, EmbeddedConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	mem := measureMemory(e)
	for _, ef := range efs {
		b.Run(fmt.Sprintf("exocortex/ef=%d", ef), func(b *testing.B) {
			runQueries(b, e, qs, exact, SearchOptions{K: 10, Ef: ef})
			b.ReportMetric(mem.rssMiB, "rss-MiB")
		})
	}
}

// readHnswlibIDs parses hnswlib_bench's "<ef> <query> <id>..." lines.
func readHnswlibIDs(b *testing.B, path string, nq int) map[int][][]int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
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
		if got[ef] == nil {
			got[ef] = make([][]int, nq)
		}
		for _, s := range fs[2:] {
			id, _ := strconv.Atoi(s)
			got[ef][qi] = append(got[ef][qi], id)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return got
}
