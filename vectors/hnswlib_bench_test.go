package vectors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/internal/hnswlibbench"
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
	bin, err := hnswlibbench.Build(filepath.Join("testdata", "hnswlib_bench.cpp"), src, work)
	if err != nil {
		b.Fatal(err)
	}
	res, err := hnswlibbench.Run(bin, work, hnswlibbench.Args{Points: points, Queries: qPath, Dim: benchDim,
		M: cfg.M, EfConstr: cfg.EfConstruction, Passes: 3, Efs: efs})
	if err != nil {
		b.Fatal(err)
	}
	got, rss := res.IDs, res.RSSMiB
	b.Logf("hnswlib built %d points in %.1fs on all threads; RSS %.0f MiB", n, res.BuildS, rss)
	for _, ef := range efs {
		r := res.Latency[ef]
		if len(got[ef]) != len(qs) {
			b.Fatalf("hnswlib_bench answered %d queries at ef %d, want %d", len(got[ef]), ef, len(qs))
		}
		b.Run(fmt.Sprintf("hnswlib/ef=%d", ef), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(r.P50, "p50-ms")
			b.ReportMetric(r.P95, "p95-ms")
			b.ReportMetric(r.P99, "p99-ms")
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
