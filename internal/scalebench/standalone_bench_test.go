package scalebench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/system"
)

// BenchmarkStandaloneSearch times exocortex search with nothing running on
// the data directory, as a user meets it: the binary's wall time, process
// start included, on the scale suite's corpus (EXOCORTEX_BENCH_SCALE=1:
// 100k chunks, built or reused as BenchmarkScale does). Two paths,
// interleaved query by query (which one goes first alternates) in one data
// directory holding a copy of the built index:
//
//   - old: EXOCORTEX_LOCAL_PIPELINE=1, the in-process pipeline (an embedded
//     NATS server, every stage, the answer cache), as search ran before;
//   - new: the data directory read in place (system.OpenLocal).
//
// No model is installed: the search is lexical, the case measured in issue
// 24. Before the timed runs, one search of each path: the old path builds
// the lexical index and saves its snapshot (as an ingest leaves it), both
// warm the page cache. The queries are the corpus's XQuAD questions, half
// Russian, half English. Both paths must print the same results. It
// reports p50, p95 and the largest time of each path.
//
// Knobs: EXOCORTEX_STANDALONE_RUNS (searches per path, 40).
func BenchmarkStandaloneSearch(b *testing.B) {
	n := 0
	switch v := os.Getenv("EXOCORTEX_BENCH_SCALE"); v {
	case "", "0":
		b.Skip("set EXOCORTEX_BENCH_SCALE=1 (100k chunks) or a number of chunks")
	case "1":
		n = 100_000
	default:
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			b.Fatalf("EXOCORTEX_BENCH_SCALE=%q: want 1 (100k chunks) or a number of chunks of at least 1000", v)
		}
	}
	runs := envInt("EXOCORTEX_STANDALONE_RUNS", 40)
	evalDir, err := EvalDir()
	if err != nil {
		b.Skip(err)
	}
	cfg := Config{Chunks: n, Seed: 17, Questions: max(runs, 2)}
	c, err := Load(evalDir, cfg)
	if err != nil {
		b.Fatal(err)
	}
	root := os.Getenv("EXOCORTEX_BENCH_CACHE")
	if root == "" {
		root = os.TempDir()
	}
	built := filepath.Join(root, "exocortex-scale", cfg.Stamp())
	if _, err := Build(b.Context(), built, c, b.Logf); err != nil {
		b.Fatal(err)
	}

	tmp := b.TempDir()
	data := filepath.Join(tmp, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	for _, suffix := range []string{"", "-wal"} { // the -shm is rebuilt from the WAL
		if err := copyFile(StorePath(built)+suffix, filepath.Join(data, "exocortex.db"+suffix)); err != nil && suffix == "" {
			b.Fatal(err)
		}
	}
	b.Logf("copied the index of %s to %s in %s", built, data, time.Since(t0).Round(time.Millisecond))
	bin := filepath.Join(tmp, "exocortex")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/exocortex/exocortex/cmd/exocortex").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS="+filepath.Join(tmp, "no-models"),
		"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG=", "EXOCORTEX_LEXICAL=", "EXOCORTEX_HTTP=127.0.0.1:0")
	oldEnv := append(slices.Clone(env), system.EnvLocalPipeline+"=1")
	newEnv := append(slices.Clone(env), system.EnvLocalPipeline+"=")
	search := func(env []string, q string) (string, time.Duration) {
		cmd := exec.Command(bin, "search", q, "--data", data)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Env = &out, &errOut, env
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if err != nil {
			b.Fatalf("search %q: %v\n%s", q, err, errOut.String())
		}
		return out.String(), took
	}
	_, warmOld := search(oldEnv, "warm up")
	_, warmNew := search(newEnv, "warm up")
	b.Logf("warm-up: old path %s (builds and saves the lexical snapshot), new path %s", warmOld.Round(time.Millisecond), warmNew.Round(time.Millisecond))

	load0 := loadavg()
	var olds, news []float64
	differ := 0
	for i := 0; i < runs; i++ {
		q := c.Questions[i%len(c.Questions)].Question
		var outOld, outNew string
		var tOld, tNew time.Duration
		if i%2 == 0 {
			outOld, tOld = search(oldEnv, q)
			outNew, tNew = search(newEnv, q)
		} else {
			outNew, tNew = search(newEnv, q)
			outOld, tOld = search(oldEnv, q)
		}
		olds, news = append(olds, tOld.Seconds()), append(news, tNew.Seconds())
		if outOld != outNew {
			differ++
			if differ == 1 {
				b.Errorf("%q: the paths print different results:\nold:\n%s\nnew:\n%s", q, outOld, outNew)
			}
		}
	}
	if differ > 0 {
		b.Errorf("%d of %d queries printed different results on the two paths", differ, runs)
	}
	po, pn := percentiles(olds), percentiles(news)
	b.Logf("exocortex search at %s chunks, nothing running, %d searches per path interleaved, %s, load %s -> %s:\n"+
		"| path | p50 s | p95 s | max s |\n|---|---|---|---|\n"+
		"| old (in-process pipeline) | %.3f | %.3f | %.3f |\n| new (read in place) | %.3f | %.3f | %.3f |",
		SizeName(n), runs, fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()), load0, loadavg(),
		po[0], po[1], po[2], pn[0], pn[1], pn[2])
	b.ReportMetric(pn[0], "new-p50-s")
	b.ReportMetric(pn[1], "new-p95-s")
	b.ReportMetric(po[0], "old-p50-s")
	b.ReportMetric(po[1], "old-p95-s")
}

// percentiles are the p50, p95 and largest of xs (nearest rank).
func percentiles(xs []float64) [3]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return [3]float64{at(0.50), at(0.95), s[len(s)-1]}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
