// Package hnswlibbench builds and runs hnswlib_bench (vectors/testdata/
// hnswlib_bench.cpp), which measures hnswlib (C++, header-only,
// github.com/nmslib/hnswlib) in its own process, for the benchmarks that put
// the embedded vector store beside it (vectors.BenchmarkHnswlib and the
// scale suite). It is benchmark code: nothing in the product imports it.
package hnswlibbench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Build compiles cpp (hnswlib_bench.cpp) with g++ -O3 -march=native against
// the hnswlib headers in src (src/hnswlib/hnswlib.h) into dir, and returns
// the program's path.
func Build(cpp, src, dir string) (string, error) {
	bin := filepath.Join(dir, "hnswlib_bench")
	if out, err := exec.Command("g++", "-O3", "-march=native", "-std=c++17", "-pthread", "-I", src,
		"-o", bin, cpp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build hnswlib_bench from %s with headers in %s: %v\n%s", cpp, src, err, out)
	}
	return bin, nil
}

// Args are one run's inputs: float32 little-endian vector files, the
// graph's parameters, how many timed passes over the queries, and the efs.
type Args struct {
	Points, Queries  string
	Dim, M, EfConstr int
	Passes           int
	Efs              []int
	// Index, when set, is where the built index is cached: loaded when the
	// file exists (Points is then not read), otherwise built and saved.
	Index string
}

// Latency is one ef's per-query latency percentiles, in milliseconds.
type Latency struct{ P50, P95, P99 float64 }

// Result is what a run printed.
type Result struct {
	// BuildS is the index build's seconds (0 when loaded), LoadS the load's
	// (0 when built).
	BuildS, LoadS float64
	RSSMiB        float64
	Latency       map[int]Latency
	// IDs are the result ids per ef and query, best first.
	IDs map[int][][]int
	// Output is the program's standard output.
	Output string
}

// Run runs bin (from Build) on args, in a temporary file for the ids under
// dir. Every ef of args must have a row in the result.
func Run(bin, dir string, a Args) (Result, error) {
	ids := filepath.Join(dir, "ids.out")
	args := []string{a.Points, a.Queries, strconv.Itoa(a.Dim), strconv.Itoa(a.M), strconv.Itoa(a.EfConstr),
		strconv.Itoa(a.Passes), ids}
	for _, ef := range a.Efs {
		args = append(args, strconv.Itoa(ef))
	}
	cmd := exec.Command(bin, args...)
	if a.Index != "" {
		cmd.Env = append(os.Environ(), "HNSWLIB_BENCH_INDEX="+a.Index)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("run hnswlib_bench: %v\n%s", err, stderr.String())
	}
	r := Result{Latency: map[int]Latency{}, Output: string(out)}
	for _, line := range strings.Split(r.Output, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "build-s":
			r.BuildS, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "load-s":
			r.LoadS, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "rss-mib":
			r.RSSMiB, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 5 && f[0] == "ef":
			ef, _ := strconv.Atoi(f[1])
			var l Latency
			l.P50, _ = strconv.ParseFloat(f[2], 64)
			l.P95, _ = strconv.ParseFloat(f[3], 64)
			l.P99, _ = strconv.ParseFloat(f[4], 64)
			r.Latency[ef] = l
		}
	}
	for _, ef := range a.Efs {
		if _, ok := r.Latency[ef]; !ok {
			return r, fmt.Errorf("hnswlib_bench printed no row for ef %d:\n%s", ef, out)
		}
	}
	if r.IDs, err = readIDs(ids); err != nil {
		return r, err
	}
	return r, nil
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
	sc.Buffer(make([]byte, 1<<16), 1<<20)
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
