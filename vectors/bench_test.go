package vectors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/synth"
)

// Search benchmarks over 384-d data sets. Each iteration runs every query
// once, one at a time on one goroutine, and reports the latency percentiles
// of single queries (p50-ms, p95-ms, p99-ms) and recall@10 against an exact
// float32 brute-force search (recall@10).
//
// The index is built once per data set and cached, as a store directory, in
// $EXOCORTEX_BENCH_CACHE (default: the system temp dir)/exocortex-vectors-bench/
// under a name made of the data set, its size, the generator seed and the
// index parameters; a re-run opens the snapshot instead of rebuilding. The
// build rate (build-vec/s: upserts of 4096 points, NoSync, linking on all
// cores) is measured when the cache is filled and stored beside it.
//
//	go test -run '^$' -bench 'Search/synthetic-100k' ./vectors
//	EXOCORTEX_BENCH_1M=1 go test -run '^$' -bench 'Search/synthetic-1M' -timeout 60m ./vectors
//
// The 1M data sets (about 5 minutes to build on 2 cores) only run with
// EXOCORTEX_BENCH_1M=1. "synthetic" is synth.Default (clustered, low
// intrinsic dimension, like sentence embeddings); "uniform" is uniformly
// random unit vectors, the worst case for any graph index.

const benchDim = 384

// benchCacheVersion changes whenever the index or the data generator changes
// in a way that makes cached builds stale.
const benchCacheVersion = 4

type benchMeta struct {
	N            int
	BuildSeconds float64
}

func BenchmarkSearch(b *testing.B) {
	for _, tc := range []struct {
		data string
		n    int
	}{
		{"synthetic", 100_000},
		{"uniform", 100_000},
		{"synthetic", 1_000_000},
		{"uniform", 1_000_000},
	} {
		name := fmt.Sprintf("%s-%s", tc.data, sizeName(tc.n))
		b.Run(name, func(b *testing.B) {
			if tc.n >= 1_000_000 && os.Getenv("EXOCORTEX_BENCH_1M") == "" {
				b.Skip("set EXOCORTEX_BENCH_1M=1 for the 1M benchmarks (minutes to build, cached after)")
			}
			benchSearch(b, tc.data, tc.n)
		})
	}
}

func sizeName(n int) string {
	if n >= 1_000_000 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	return strconv.Itoa(n/1000) + "k"
}

const benchSeed = 20240601

// benchData returns the point and query generators of a data set.
func benchData(data string, n int) (vec, query func(i int, dst []float32)) {
	switch data {
	case "synthetic":
		g := synth.New(synth.Default(benchSeed, benchDim, n))
		return func(i int, dst []float32) { g.Vector(i, dst) }, func(j int, dst []float32) { g.Query(j, dst) }
	case "uniform":
		return func(i int, dst []float32) { synth.Uniform(benchSeed, i, dst) },
			func(j int, dst []float32) { synth.Uniform(benchSeed+1, j, dst) }
	}
	panic(data)
}

func benchCacheDir(data string, n int) string {
	root := os.Getenv("EXOCORTEX_BENCH_CACHE")
	if root == "" {
		root = os.TempDir()
	}
	cfg := EmbeddedConfig{}.withDefaults()
	return filepath.Join(root, "exocortex-vectors-bench", fmt.Sprintf("%s-%d-d%d-seed%d-m%d-efc%d-v%d",
		data, n, benchDim, benchSeed, cfg.M, cfg.EfConstruction, benchCacheVersion))
}

// buildBench fills dir with an n-point store of data, in upserts of 4096.
func buildBench(b *testing.B, dir, data string, n int) benchMeta {
	vec, _ := benchData(data, n)
	os.RemoveAll(dir)
	e, err := OpenEmbedded(context.Background(), dir, benchDim, EmbeddedConfig{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	const batch = maxBatch
	start := time.Now()
	var linkTime time.Duration
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		pts := make([]Point, hi-lo)
		var wg sync.WaitGroup
		for w := range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := lo + w; i < hi; i += runtime.GOMAXPROCS(0) {
					v := make([]float32, benchDim)
					vec(i, v)
					pts[i-lo] = benchPoint(i, v)
				}
			})
		}
		wg.Wait()
		t0 := time.Now()
		if err := e.Upsert(context.Background(), pts); err != nil {
			b.Fatal(err)
		}
		linkTime += time.Since(t0)
		if lo%(20*batch) == 0 && lo > 0 {
			b.Logf("built %d/%d in %v", lo, n, time.Since(start).Round(time.Second))
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	meta := benchMeta{N: n, BuildSeconds: linkTime.Seconds()}
	b.Logf("built %d points in %v (upserts %v, snapshot and data generation the rest)", n, time.Since(start).Round(time.Second), linkTime.Round(time.Second))
	writeJSON(b, filepath.Join(dir, "bench-meta.json"), meta)
	return meta
}

func benchPoint(i int, v []float32) Point {
	return Point{ID: chunkID(i), DocID: fmt.Sprintf("notes/doc%05d.md", i/8), Lang: []string{"ru", "en", "en"}[i%3], Vector: v}
}

func writeJSON(b *testing.B, path string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

func readJSON(path string, v any) bool {
	data, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(data, v) == nil
}

func benchSearch(b *testing.B, data string, n int) {
	dir, meta, qs, exact := benchSetup(b, data, n)

	runtime.GC()
	t0 := time.Now()
	e, err := OpenEmbedded(context.Background(), dir, benchDim, EmbeddedConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	openTime := time.Since(t0)
	mem := measureMemory(e)
	b.Logf("opened %d points in %v; %s", n, openTime.Round(time.Millisecond), mem)

	for _, ef := range []int{0, 96, 128} {
		b.Run(fmt.Sprintf("ef=%d", max(ef, e.cfg.EfSearch)), func(b *testing.B) {
			runQueries(b, e, qs, exact, SearchOptions{K: 10, Ef: ef})
			b.ReportMetric(float64(n)/meta.BuildSeconds, "build-vec/s")
			b.ReportMetric(mem.rssMiB, "rss-MiB")
			b.ReportMetric(mem.heapInuseMiB, "heap-MiB")
			b.ReportMetric(mem.offHeapMiB, "offheap-MiB")
		})
	}
	// Today's search beside the one before selective rescoring, query by
	// query in alternating order, so both see the same machine load.
	for _, ef := range []int{0, 128} {
		b.Run(fmt.Sprintf("ab/ef=%d", max(ef, e.cfg.EfSearch)), func(b *testing.B) {
			runQueriesAB(b, e, qs, exact, SearchOptions{K: 10, Ef: ef}, []variant{
				{"before", func() { e.rescoreAll = true }},
				{"after", func() { e.rescoreAll = false }},
			})
		})
	}
	// K = 200 as the retrieve stage asks (ef is then 200 too, and every
	// candidate is rescored: selective rescoring has nothing to leave out).
	b.Run("ab/k=200", func(b *testing.B) {
		runQueriesAB(b, e, qs, nil, SearchOptions{K: 200}, []variant{
			{"before", func() { e.rescoreAll = true }},
			{"after", func() { e.rescoreAll = false }},
		})
	})
	// The same with the raw file dropped from the page cache before every
	// query (where the file system lets it go): the disk-bound case.
	if err := e.raw.sync(); err != nil {
		b.Fatal(err)
	}
	drop := func() {
		if err := e.raw.dropCache(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("ab-cold/ef=64", func(b *testing.B) {
		runQueriesAB(b, e, qs[:min(len(qs), 300)], exact[:min(len(qs), 300)], SearchOptions{K: 10}, []variant{
			{"before", func() { e.rescoreAll = true; drop() }},
			{"after", func() { e.rescoreAll = false; drop() }},
		})
	})
	b.Run("filter=lang", func(b *testing.B) {
		runQueries(b, e, qs, nil, SearchOptions{K: 10, Filter: Filter{Lang: "ru"}})
	})
	b.Run("filter=3docs", func(b *testing.B) {
		runQueries(b, e, qs, nil, SearchOptions{K: 10, Filter: Filter{DocIDs: []string{"notes/doc00001.md", "notes/doc01234.md", "notes/doc09999.md"}}})
	})
}

// benchSetup builds (or finds cached) the store of a data set and returns
// its directory, build metadata, queries and their exact top 10.
func benchSetup(b *testing.B, data string, n int) (string, benchMeta, [][]float32, [][]synth.Neighbor) {
	dir := benchCacheDir(data, n)
	var meta benchMeta
	if !readJSON(filepath.Join(dir, "bench-meta.json"), &meta) || meta.N != n {
		meta = buildBench(b, dir, data, n)
	}
	nq := 1000
	if n >= 1_000_000 {
		nq = 500
	}
	vec, query := benchData(data, n)
	qs := queriesOf(nq, benchDim, query)
	var exact [][]synth.Neighbor
	gtPath := filepath.Join(dir, fmt.Sprintf("truth-%d.json", nq))
	if !readJSON(gtPath, &exact) || len(exact) != nq {
		t0 := time.Now()
		exact = synth.ExactTopK(n, benchDim, vec, qs, 10)
		b.Logf("exact top-10 of %d queries in %v", nq, time.Since(t0).Round(time.Millisecond))
		writeJSON(b, gtPath, exact)
	}

	return dir, meta, qs, exact
}

// runQueries times every query once per iteration on this goroutine.
func runQueries(b *testing.B, e *Embedded, qs [][]float32, exact [][]synth.Neighbor, opts SearchOptions) {
	ctx := context.Background()
	for _, q := range qs[:min(len(qs), 100)] { // warm up the page cache and the pools
		e.Search(ctx, q, opts)
	}
	lat := make([]time.Duration, 0, len(qs))
	got := make([][]int, len(qs))
	for b.Loop() {
		for qi, q := range qs {
			t0 := time.Now()
			res, err := e.Search(ctx, q, opts)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			got[qi] = got[qi][:0]
			for _, r := range res {
				got[qi] = append(got[qi], pointIndex(r.ID))
			}
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	if exact != nil {
		b.ReportMetric(synth.Recall(exact, got, 10), "recall@10")
	}
	b.ReportMetric(0, "ns/op")
}

// variant is one way of searching that runQueriesAB compares; set switches
// the store to it.
type variant struct {
	name string
	set  func()
}

// runQueriesAB times every query once per variant per iteration, the
// variants in turn and their order rotating from query to query, and
// reports each variant's percentiles and recall as <name>-p50-ms etc.
func runQueriesAB(b *testing.B, e *Embedded, qs [][]float32, exact [][]synth.Neighbor, opts SearchOptions, vs []variant) {
	ctx := context.Background()
	defer vs[len(vs)-1].set()
	for _, v := range vs {
		v.set()
		for _, q := range qs[:min(len(qs), 100)] {
			e.Search(ctx, q, opts)
		}
	}
	lat := make([][]time.Duration, len(vs))
	got := make([][][]int, len(vs))
	for i := range vs {
		got[i] = make([][]int, len(qs))
	}
	for b.Loop() {
		for qi, q := range qs {
			for j := range vs {
				vi := (qi + j) % len(vs)
				vs[vi].set()
				t0 := time.Now()
				res, err := e.Search(ctx, q, opts)
				lat[vi] = append(lat[vi], time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				got[vi][qi] = got[vi][qi][:0]
				for _, r := range res {
					got[vi][qi] = append(got[vi][qi], pointIndex(r.ID))
				}
			}
		}
	}
	for vi, v := range vs {
		l := lat[vi]
		slices.Sort(l)
		pct := func(p float64) float64 { return float64(l[int(p*float64(len(l)-1))].Microseconds()) / 1000 }
		b.ReportMetric(pct(0.50), v.name+"-p50-ms")
		b.ReportMetric(pct(0.95), v.name+"-p95-ms")
		b.ReportMetric(pct(0.99), v.name+"-p99-ms")
		if exact != nil {
			b.ReportMetric(synth.Recall(exact, got[vi], 10), v.name+"-recall@10")
		}
	}
	b.ReportMetric(0, "ns/op")
}

type memReport struct {
	heapInuseMiB, sysMiB, offHeapMiB, rssMiB, hwmMiB float64
}

func (m memReport) String() string {
	return fmt.Sprintf("Go heap in use %.0f MiB, Go runtime Sys %.0f MiB, off-heap blocks %.0f MiB, process RSS %.0f MiB (peak %.0f MiB)",
		m.heapInuseMiB, m.sysMiB, m.offHeapMiB, m.rssMiB, m.hwmMiB)
}

// measureMemory collects garbage, returns freed memory to the OS, and reads
// the Go runtime's numbers and the process RSS.
func measureMemory(e *Embedded) memReport {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	const mib = 1 << 20
	r := memReport{
		heapInuseMiB: float64(ms.HeapInuse) / mib,
		sysMiB:       float64(ms.Sys) / mib,
		offHeapMiB:   float64(e.Stats().OffHeapBytes) / mib,
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				r.rssMiB = kb / 1024
			case "VmHWM:":
				r.hwmMiB = kb / 1024
			}
		}
	}
	return r
}
