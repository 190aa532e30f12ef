package retrieval_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// BenchmarkRetrieve100k measures the query side before reranking at 100k
// chunks: embed the question (e5-small architecture, int8, random weights),
// vector top-200 (embedded store), BM25 top-200 (SQLite FTS5, full
// analyzer), RRF to top-80 with the passages looked up. Set
// EXOCORTEX_BENCH_100K=1 to run it: building the corpus takes minutes the
// first time (it is kept in the temp dir and reused).
//
// The chunks are sentences of real XQuAD paragraphs (ru and en) recombined
// at random, about 80 words each; the vectors are synthetic (clustered unit
// vectors: embedding 100k chunks with the real-shape model would take hours
// on two cores, and random weights would give no better vectors).
func BenchmarkRetrieve100k(b *testing.B) {
	if os.Getenv("EXOCORTEX_BENCH_100K") != "1" {
		b.Skip("set EXOCORTEX_BENCH_100K=1 to build and search a 100k-chunk corpus")
	}
	const n = 100_000
	sents, questions := xquadSentences(b)
	dir := filepath.Join(os.TempDir(), "exocortex-bench-100k-v2")
	ctx := context.Background()
	st, vs := build100k(b, dir, n, sents)
	defer st.Close()
	defer vs.Close()
	mdir := modeltest.Dir(b, modeltest.Options{RealShapes: true, NoQA: true,
		Into: filepath.Join(os.TempDir(), "exocortex-bench-models-v1")})
	m, _ := models.ManifestFor(mdir)
	spec, _ := m.Spec(models.RoleEmbed)
	emb, err := models.OpenEmbedder(mdir, spec, models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Close()
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: emb}
	steps := map[string][]float64{}
	var total []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprint(i), Question: questions[i%len(questions)],
			Options: schemas.QueryOptions{Mode: schemas.ModeHybrid}}})
		if err != nil {
			b.Fatal(err)
		}
		total = append(total, float64(time.Since(t).Microseconds())/1000)
		for k, v := range out.TimingsMS {
			steps[k] = append(steps[k], v)
		}
		if len(out.Candidates) == 0 {
			b.Fatalf("no candidates for %q", questions[i%len(questions)])
		}
	}
	b.StopTimer()
	p50, p95 := pct(total)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p95, "p95-ms")
	for _, k := range []string{"embed", "vector", "lexical", "fuse"} {
		s50, s95 := pct(steps[k])
		b.ReportMetric(s50, k+"-p50-ms")
		b.ReportMetric(s95, k+"-p95-ms")
	}
}

func pct(xs []float64) (p50, p95 float64) {
	return eval.Percentile(xs, 50), eval.Percentile(xs, 95)
}

var sentenceEnd = regexp.MustCompile(`([.!?])\s+`)

func xquadSentences(b *testing.B) (sents, questions []string) {
	for _, f := range []string{"../../shared/eval/xquad.ru.json", "../../shared/eval/xquad.en.json"} {
		set, err := eval.Load(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		for _, d := range set.Docs {
			for _, s := range strings.Split(sentenceEnd.ReplaceAllString(d.Blocks[0].Text, "$1\n"), "\n") {
				if s = strings.TrimSpace(s); s != "" {
					sents = append(sents, s)
				}
			}
		}
		for _, q := range set.Questions {
			questions = append(questions, q.Question)
		}
	}
	return sents, questions
}

// build100k opens (or first builds) the store and the vector index.
func build100k(b *testing.B, dir string, n int, sents []string) (*store.Store, vectors.Store) {
	ctx := context.Background()
	dbPath := filepath.Join(dir, "exocortex.db")
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err != nil {
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	st, err := store.Open(dbPath)
	if err != nil {
		b.Fatal(err)
	}
	vs, err := vectors.Open(ctx, vectors.Config{Dir: filepath.Join(dir, "vectors"), Dim: 384,
		Embedded: vectors.EmbeddedConfig{NoSync: true}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(done); err == nil {
		return st, vs
	}
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	const topics, dim = 2000, 384
	centres := make([][]float32, topics)
	for i := range centres {
		centres[i] = randUnit(rng, dim)
	}
	const perDoc = 20
	for lo := 0; lo < n; lo += 1000 {
		var pts []vectors.Point
		err := st.Batch(ctx, func(ctx context.Context) error {
			for i := lo; i < lo+1000 && i < n; i++ {
				var words []string
				for len(strings.Fields(strings.Join(words, " "))) < 80 {
					words = append(words, sents[rng.IntN(len(sents))])
				}
				c := &schemas.ChunkCreated{ChunkID: fmt.Sprintf("c%06d", i), DocID: fmt.Sprintf("d%05d", i/perDoc), DocVersion: 1,
					Ordinal: i % perDoc, Hash: fmt.Sprint(i), Text: strings.Join(words, " "), SectionPath: []string{fmt.Sprintf("Doc %d", i/perDoc)},
					BlockIDs: []string{fmt.Sprintf("b%06d", i)}}
				if _, err := st.UpsertChunk(ctx, c); err != nil {
					return err
				}
				v := centres[rng.IntN(topics)]
				noisy := make([]float32, dim)
				for j := range noisy {
					noisy[j] = v[j] + float32(rng.NormFloat64())*0.05
				}
				pts = append(pts, vectors.Point{ID: c.ChunkID, DocID: c.DocID, Vector: noisy})
			}
			// Each document's structure (a batch holds whole documents): a
			// chunk is searchable once its document is indexed.
			for d := lo / perDoc; d*perDoc < lo+1000 && d*perDoc < n; d++ {
				doc := &schemas.DocStructure{DocID: fmt.Sprintf("d%05d", d), Title: fmt.Sprintf("Doc %d", d), Hash: fmt.Sprint(d), Version: 1}
				for i := d * perDoc; i < (d+1)*perDoc && i < n; i++ {
					doc.ChunkIDs = append(doc.ChunkIDs, fmt.Sprintf("c%06d", i))
				}
				if _, err := st.ApplyStructure(ctx, doc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := vs.Upsert(ctx, pts); err != nil {
			b.Fatal(err)
		}
		if lo%20000 == 0 {
			b.Logf("built %d chunks in %s", lo, time.Since(t0).Round(time.Second))
		}
	}
	if err := vs.Close(); err != nil {
		b.Fatal(err)
	}
	if vs, err = vectors.Open(ctx, vectors.Config{Dir: filepath.Join(dir, "vectors"), Dim: 384}); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d chunks and vectors in %s", n, time.Since(t0).Round(time.Second))
	return st, vs
}

func randUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var s float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		s += x * x
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}
