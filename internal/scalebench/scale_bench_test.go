package scalebench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/synth"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// BenchmarkScale is the scale suite (`./task bench:scale`): at 100k chunks
// with EXOCORTEX_BENCH_SCALE=1 (or N chunks with
// EXOCORTEX_BENCH_SCALE=N), and at 1M with EXOCORTEX_BENCH_1M=1, it
// builds (or reuses) the corpus's indexes directly, runs a sample through
// the real pipeline, and measures every engine of LexicalEngines,
// VectorEngines, FusedEngines and RerankEngines on the same questions; it
// writes scale-<size>.json and scale.md into $EXOCORTEX_SCALE_OUT (default
// the temp dir's exocortex-scale/) and prints the Markdown table. Run it
// with -benchtime 1x: each size runs once whatever b.N is.
//
// Knobs: EXOCORTEX_SCALE_QUESTIONS (500), EXOCORTEX_SCALE_RERANK (questions
// reranked, 20), EXOCORTEX_SCALE_PIPELINE_DOCS (notes through the pipeline,
// 250), EXOCORTEX_BENCH_CACHE (where builds are cached, the temp dir),
// EXOCORTEX_SCALE_BUILD_ONLY=1 (build or check the cache, measure nothing),
// EXOCORTEX_SCALE_SCOPES=0 (leave the scoped rows out, scope_bench_test.go),
// EXOCORTEX_HNSWLIB_DIR (a directory holding hnswlib/hnswlib.h: adds
// hnswlib's rows beside the embedded HNSW, hnswlibRows).
func BenchmarkScale(b *testing.B) {
	var sizes []int
	switch v := os.Getenv("EXOCORTEX_BENCH_SCALE"); v {
	case "", "0":
	case "1":
		sizes = append(sizes, 100_000)
	default: // another size, for a quick look
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("EXOCORTEX_BENCH_SCALE=%q: want 1 (100k chunks) or a number of chunks of at least 1000", v)
		}
		sizes = append(sizes, n)
	}
	if os.Getenv("EXOCORTEX_BENCH_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	if len(sizes) == 0 {
		b.Skip("set EXOCORTEX_BENCH_SCALE=1 (100k chunks, minutes) and/or EXOCORTEX_BENCH_1M=1 (1M chunks, about 20 minutes the first time)")
	}
	for _, n := range sizes {
		b.Run(SizeName(n), func(b *testing.B) { runScale(b, n) })
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// settledRSS is VmRSS in MB after a GC has returned what it freed.
func settledRSS() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	return procStatus("VmRSS")
}

// procStatus reads a kB field of /proc/self/status in MB.
func procStatus(field string) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func runScale(b *testing.B, n int) {
	ctx := context.Background()
	evalDir, err := EvalDir()
	if err != nil {
		b.Skip(err)
	}
	cfg := Config{Chunks: n, Seed: 17, Questions: envInt("EXOCORTEX_SCALE_QUESTIONS", 500)}
	c, err := Load(evalDir, cfg)
	if err != nil {
		b.Fatal(err)
	}
	root := os.Getenv("EXOCORTEX_BENCH_CACHE")
	if root == "" {
		root = os.TempDir()
	}
	out := os.Getenv("EXOCORTEX_SCALE_OUT")
	if out == "" {
		out = filepath.Join(os.TempDir(), "exocortex-scale")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	res := &Result{Corpus: cfg.Stamp(), Chunks: n, Questions: len(c.Questions), Started: time.Now().UTC().Format(time.RFC3339),
		Machine: fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()), GoVersion: runtime.Version()}
	if v, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		res.GitVersion = strings.TrimSpace(string(v))
	}
	load0 := loadavg()
	dir := filepath.Join(root, "exocortex-scale", cfg.Stamp())
	b.Logf("corpus %s: %d questions, vocabulary ru %d, en %d words; indexes in %s", cfg.Stamp(), len(c.Questions),
		c.VocabSize("ru"), c.VocabSize("en"), dir)
	info, err := Build(ctx, dir, c, b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	res.Build, res.Words = info, info.Words
	b.Logf("build: %+v", info)
	if os.Getenv("EXOCORTEX_SCALE_BUILD_ONLY") == "1" {
		b.Skipf("EXOCORTEX_SCALE_BUILD_ONLY=1: built %s, measured nothing", dir)
	}

	if docs := envInt("EXOCORTEX_SCALE_PIPELINE_DOCS", 250); docs > 0 {
		res.Pipeline = pipelineSample(b, c, docs)
	}

	runtime.GC()
	st, err := store.Open(StorePath(dir))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	env := &Env{Dir: dir, Corpus: c, Store: st}
	res.DiskBytes = Disk{SQLite: DirSize(StorePath(dir)) + DirSize(StorePath(dir)+"-wal"), Vectors: DirSize(VectorsPath(dir))}

	// Lexical at scale, then on the XQuAD paragraphs alone (the reference).
	for _, e := range LexicalEngines {
		res.Rows = append(res.Rows, measureLexical(b, "lexical", e, env, c.Questions))
	}
	ref := referenceStore(b, c)
	for _, e := range LexicalEngines {
		res.Rows = append(res.Rows, measureLexical(b, "xquad-only", e, &Env{Dir: filepath.Dir(ref.Path()), Store: ref}, c.Questions))
	}
	ref.Close()

	vg := NewVectors(c)
	nq := len(c.Questions)
	qs := make([][]float32, nq)
	for j := range qs {
		qs[j] = vg.Query(j)
	}
	truth := exactTop10(b, dir, vg, qs[:min(nq, 100)])
	// Each vector row first runs 200 other queries of the same stream, then
	// a pass of its own (timed and logged, not in the row): the first row
	// would otherwise pay alone for bringing the float32 vectors it
	// rescores into the page cache (hnswlib holds its in memory).
	warm := make([][]float32, 200)
	for j := range warm {
		warm[j] = vg.Query(nq + j)
	}
	// The vector index is opened after the lexical rows, so that the RSS
	// it adds is its own.
	rss0 := settledRSS()
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim})
	if err != nil {
		b.Fatal(err)
	}
	defer vs.Close()
	env.Vectors = vs
	first := len(res.Rows)
	var efs []int
	for _, e := range VectorEngines {
		res.Rows = append(res.Rows, measureVector(b, e, env, warm, qs, truth))
		if e.Ef > 0 && !slices.Contains(efs, e.Ef) {
			efs = append(efs, e.Ef)
		}
	}
	res.Rows[first].RSSMB = settledRSS() - rss0
	if src := os.Getenv("EXOCORTEX_HNSWLIB_DIR"); src != "" {
		res.Rows = append(res.Rows, hnswlibRows(b, src, dir, vg, qs, truth, efs)...)
	} else {
		res.Skipped = append(res.Skipped, "hnswlib: set EXOCORTEX_HNSWLIB_DIR to a directory with hnswlib/hnswlib.h")
	}

	indexesRSS := procStatus("VmRSS")
	mdir := modeltest.Dir(b, modeltest.Options{RealShapes: true, NoQA: true,
		Into: filepath.Join(root, "exocortex-bench-models-v1")})
	m, err := models.ManifestFor(mdir)
	if err != nil {
		b.Fatal(err)
	}
	spec, _ := m.Spec(models.RoleEmbed)
	emb, err := models.OpenEmbedder(mdir, spec, models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Close()
	rspec, _ := m.Spec(models.RoleRerank)
	ce, err := models.OpenCrossEncoder(mdir, rspec, models.RerankOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ce.Close()
	env.Embedder, env.CrossEncoder = emb, ce
	env.OpenCrossEncoder = func(o models.Options) (retrieval.CrossEncoder, error) {
		x, err := models.OpenCrossEncoder(mdir, rspec, o)
		if err != nil {
			return nil, err
		}
		b.Cleanup(func() { x.Close() })
		return x, nil
	}
	for _, e := range FusedEngines {
		res.Rows = append(res.Rows, measureRetrieval(b, "fused", e, env, c.Questions))
	}
	if os.Getenv("EXOCORTEX_SCALE_SCOPES") != "0" {
		res.Rows = append(res.Rows, measureScoped(b, env, c.Questions, vg, warm, qs)...)
	}
	if k := envInt("EXOCORTEX_SCALE_RERANK", 20); k > 0 {
		for _, e := range RerankEngines {
			res.Rows = append(res.Rows, measureRetrieval(b, "rerank", e, env, c.Questions[:min(k, nq)]))
		}
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.Memory = Memory{IndexesRSSMB: indexesRSS, RSSMB: procStatus("VmRSS"), PeakRSSMB: procStatus("VmHWM"), HeapMB: float64(ms.HeapInuse) / (1 << 20)}
	res.Load = load0 + " -> " + loadavg()
	for _, r := range res.Rows {
		name := strings.ReplaceAll(r.Measure+"/"+r.Engine, " ", "_")
		b.ReportMetric(r.P95MS, name+"-p95-ms")
	}
	path := filepath.Join(out, "scale-"+SizeName(n)+".json")
	if err := res.WriteJSON(path); err != nil {
		b.Fatal(err)
	}
	// The table of every result in out, so 100k and 1M runs made apart
	// still print side by side.
	var all []*Result
	files, _ := filepath.Glob(filepath.Join(out, "scale-*.json"))
	for _, f := range files {
		if r, err := ReadResult(f); err == nil {
			all = append(all, r)
		}
	}
	table := Markdown(all)
	if err := os.WriteFile(filepath.Join(out, "scale.md"), []byte(table), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nscale results: %s\n\n%s\n", path, table)
}

func pcts(ms []float64) (p50, p95 float64) {
	return eval.Percentile(ms, 50), eval.Percentile(ms, 95)
}

func since(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// recallOf turns gold ranks (0: missing) into recall@10 and MRR.
func recallOf(ranks []int) (recall, mrr float64) {
	for _, r := range ranks {
		if r > 0 && r <= 10 {
			recall++
		}
		if r > 0 {
			mrr += 1 / float64(r)
		}
	}
	return recall / float64(len(ranks)), mrr / float64(len(ranks))
}

func measureLexical(b *testing.B, measure string, e LexicalEngine, env *Env, qs []eval.Question) Row {
	ctx := context.Background()
	lx, err := e.Open(ctx, env)
	if err != nil {
		b.Fatalf("open lexical engine %s: %v", e.Name, err)
	}
	defer lx.Close()
	for _, q := range qs[:min(20, len(qs))] { // warm the caches
		if _, err := lx.Search(ctx, q.Question, 10); err != nil {
			b.Fatalf("%s: search %q: %v", e.Name, q.Question, err)
		}
	}
	var lat []float64
	var ranks []int
	for _, q := range qs {
		t := time.Now()
		hits, err := lx.Search(ctx, q.Question, 10)
		if err != nil {
			b.Fatalf("%s: search %q: %v", e.Name, q.Question, err)
		}
		lat = append(lat, since(t))
		ranks = append(ranks, eval.GoldRank(hits, q.Gold))
	}
	row := Row{Measure: measure, Engine: e.Name, Queries: len(qs), Note: e.Note + ", k=10"}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall, row.MRR = recallOf(ranks)
	b.Logf("%s %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f, MRR %.3f", measure, e.Name, row.P50MS, row.P95MS, row.Recall, row.MRR)
	return row
}

// referenceStore indexes the XQuAD paragraphs alone, as `exocortex eval`
// does, for the recall the scale corpus must keep.
func referenceStore(b *testing.B, c *Corpus) *store.Store {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(b.TempDir(), "exocortex.db"))
	if err != nil {
		b.Fatal(err)
	}
	err = st.Batch(ctx, func(ctx context.Context) error {
		for i, d := range c.Paragraphs {
			id := fmt.Sprintf("x%04d", i)
			cc := &schemas.ChunkCreated{ChunkID: id, DocID: d.DocID, DocVersion: 1, Hash: id, Text: d.Blocks[0].Text,
				SectionPath: []string{d.Title}, Lang: langOf(d), BlockIDs: []string{d.Blocks[0].ID}}
			if _, err := st.UpsertChunk(ctx, cc); err != nil {
				return err
			}
			if _, err := st.ApplyStructure(ctx, &schemas.DocStructure{DocID: d.DocID, Title: d.Title, Hash: d.Hash,
				Version: 1, ChunkIDs: []string{id}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// exactTop10 is the float32 brute-force top-10 of each query over every
// chunk's vector (synth.ExactTopK), cached beside the build under the
// vector generator's stamp.
func exactTop10(b *testing.B, dir string, vg *Vectors, qs [][]float32) [][]string {
	path := filepath.Join(dir, fmt.Sprintf("truth-%s-%d.json", VectorStamp, len(qs)))
	var truth [][]string
	if readJSONFile(path, &truth) && len(truth) == len(qs) {
		return truth
	}
	t0 := time.Now()
	exact := synth.ExactTopK(vg.n, Dim, func(i int, dst []float32) { vg.Vector(i, dst) }, qs, 10)
	truth = make([][]string, len(qs))
	for j, nb := range exact {
		for _, x := range nb {
			truth[j] = append(truth[j], fmt.Sprintf("c%07d", x.ID))
		}
	}
	b.Logf("exact top-10 of %d queries in %s", len(qs), time.Since(t0).Round(time.Second))
	writeJSONFile(b, path, truth)
	return truth
}

func measureVector(b *testing.B, e VectorEngine, env *Env, warm, qs [][]float32, truth [][]string) Row {
	ctx := context.Background()
	vx, err := e.Open(ctx, env)
	if err != nil {
		b.Fatalf("open vector engine %s: %v", e.Name, err)
	}
	defer vx.Close()
	for _, q := range warm {
		if _, err := vx.Search(ctx, q, 10); err != nil {
			b.Fatalf("%s: search: %v", e.Name, err)
		}
	}
	var first []float64
	for _, q := range qs {
		t := time.Now()
		if _, err := vx.Search(ctx, q, 10); err != nil {
			b.Fatalf("%s: search: %v", e.Name, err)
		}
		first = append(first, since(t))
	}
	p50, p95 := pcts(first)
	b.Logf("vector %s, first pass: p50 %.2f ms, p95 %.2f ms", e.Name, p50, p95)
	var lat []float64
	var found, want int
	for j, q := range qs {
		t := time.Now()
		ids, err := vx.Search(ctx, q, 10)
		if err != nil {
			b.Fatalf("%s: search: %v", e.Name, err)
		}
		lat = append(lat, since(t))
		if j < len(truth) {
			want += len(truth[j])
			for _, id := range ids {
				if slices.Contains(truth[j], id) {
					found++
				}
			}
		}
	}
	row := Row{Measure: "vector", Engine: e.Name, Queries: len(qs), Note: e.Note + ", k=10, recall against exact float32, the second pass of the queries"}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(want, 1))
	b.Logf("vector %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f", e.Name, row.P50MS, row.P95MS, row.Recall)
	return row
}

func measureRetrieval(b *testing.B, measure string, e RetrievalEngine, env *Env, qs []eval.Question) Row {
	ctx := context.Background()
	r, err := e.Open(ctx, env)
	if err != nil {
		b.Fatalf("open %s engine %s: %v", measure, e.Name, err)
	}
	mode := schemas.ModeHybrid
	if measure == "rerank" {
		mode = schemas.ModeRerank
	}
	if measure == "rerank" && len(qs) > 0 { // the first run of a model session is slow
		out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "warm", Question: qs[0].Question,
			Options: schemas.QueryOptions{Mode: mode}}})
		if err == nil {
			_, err = r.Rerank(ctx, out)
		}
		if err != nil {
			b.Fatalf("%s: warm up: %v", e.Name, err)
		}
	}
	var lat []float64
	var ranks []int
	for i, q := range qs {
		t := time.Now()
		out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprint(i), Question: q.Question,
			Options: schemas.QueryOptions{Mode: mode}}})
		if err != nil {
			b.Fatalf("%s: retrieve %q: %v", e.Name, q.Question, err)
		}
		var hits []store.Hit
		if measure == "rerank" {
			t = time.Now()
			rr, err := r.Rerank(ctx, out)
			if err != nil {
				b.Fatalf("%s: rerank %q: %v", e.Name, q.Question, err)
			}
			if rr.Mode != schemas.ModeRerank {
				b.Fatalf("%s: %q was answered in mode %s (%v), not reranked", e.Name, q.Question, rr.Mode, rr.Reasons)
			}
			for _, x := range rr.Contexts {
				hits = append(hits, store.Hit{DocID: x.DocID, BlockIDs: x.BlockIDs})
			}
		} else {
			for _, x := range out.Candidates {
				hits = append(hits, store.Hit{DocID: x.DocID, BlockIDs: x.BlockIDs})
			}
		}
		lat = append(lat, since(t))
		ranks = append(ranks, eval.GoldRank(hits, q.Gold))
	}
	row := Row{Measure: measure, Engine: e.Name, Queries: len(qs),
		Note: e.Note + "; models of the real shapes with random weights, vectors synthetic: recall is not the models'"}
	row.P50MS, row.P95MS = pcts(lat)
	if measure != "rerank" { // a cross-encoder with random weights orders at random
		row.Recall, row.MRR = recallOf(ranks)
	}
	b.Logf("%s %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f", measure, e.Name, row.P50MS, row.P95MS, row.Recall)
	return row
}

// pipelineSample publishes docs generated notes onto a fresh system (the
// embedded JetStream server, chunk and index stages, no models) and waits
// until every chunk is indexed.
func pipelineSample(b *testing.B, c *Corpus, docs int) *Ingest {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:-1", Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Stop()
	evs := make([]*schemas.DocChanged, docs)
	for d := range evs {
		evs[d] = c.Doc(d)
	}
	start := time.Now()
	for _, d := range evs {
		if _, err := sys.Bus.Publish(ctx, d, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 10*time.Millisecond, nil); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	_, chunks, err := sys.Store.Counts(ctx)
	if err != nil {
		b.Fatal(err)
	}
	in := &Ingest{Docs: docs, Chunks: chunks, Seconds: el.Seconds(), ChunksPerSec: float64(chunks) / el.Seconds()}
	b.Logf("pipeline sample: %d notes, %d chunks in %s (%.0f chunks/s)", docs, chunks, el.Round(time.Millisecond), in.ChunksPerSec)
	return in
}

func readJSONFile(path string, v any) bool {
	raw, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(raw, v) == nil
}

func writeJSONFile(b *testing.B, path string, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
}
