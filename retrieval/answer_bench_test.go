package retrieval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// BenchmarkAnswer100k measures what the pipeline adds to an answer at 100k
// chunks, on the corpus of BenchmarkRetrieve100k (EXOCORTEX_BENCH_100K=1)
// with real-shape random-weight models:
//
//   - first-token: from the question to the first answer token, with a
//     provider (the fake, over loopback HTTP) that answers at once, so the
//     time is everything but the provider: embed, vector and BM25 search,
//     fusion, cross-encoder rerank of 80, graph expansion, the prompt and
//     the HTTP exchange. Per mode: lexical (no models), hybrid and rerank (the default with models).
//   - extractive: no provider; from the question to the final answer of
//     the extractive rung (XLM-R base QA over the top 4 contexts).
//
// The NATS hops between the stages are not in it (BenchmarkAskOverTheBus
// in internal/system measures those).
func BenchmarkAnswer100k(b *testing.B) {
	if os.Getenv("EXOCORTEX_BENCH_100K") != "1" {
		b.Skip("set EXOCORTEX_BENCH_100K=1 to build and search a 100k-chunk corpus")
	}
	const n = 100_000
	sents, questions := xquadSentences(b)
	st, vs := build100k(b, filepath.Join(os.TempDir(), "exocortex-bench-100k-v1"), n, sents)
	defer st.Close()
	defer vs.Close()
	mdir := modeltest.Dir(b, modeltest.Options{RealShapes: true,
		Into: filepath.Join(os.TempDir(), "exocortex-bench-models-qa-v1")})
	m, _ := models.ManifestFor(mdir)
	spec := func(role string) models.Spec {
		s, ok := m.Spec(role)
		if !ok {
			b.Fatalf("no %s model in %s", role, mdir)
		}
		return s
	}
	emb, err := models.OpenEmbedder(mdir, spec(models.RoleEmbed), models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Close()
	ce, err := models.OpenCrossEncoder(mdir, spec(models.RoleRerank), models.RerankOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer ce.Close()
	qa, err := models.OpenQA(mdir, spec(models.RoleQA), models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer qa.Close()
	an, err := analysis.New(analysis.Full)
	if err != nil {
		b.Fatal(err)
	}
	srv := llmtest.New(b)
	srv.SetAnswer("Ответ по заметкам [1].")
	router, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleFast: "m"}}}}, llm.RouterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: emb, Reranker: ce}
	ctx := context.Background()

	run := func(b *testing.B, mode string, a *answer.Answerer, want string, untilFinal bool) {
		var total []float64
		steps := map[string][]float64{}
		for i := 0; i < b.N; i++ {
			var first time.Time
			a.Emit = func(_ context.Context, t *schemas.AnswerToken) error {
				if first.IsZero() && (t.Text != "" && !untilFinal || t.Final && untilFinal) {
					first = time.Now()
				}
				return nil
			}
			t0 := time.Now()
			rq, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprint(i), Question: questions[i%len(questions)],
				Options: schemas.QueryOptions{Mode: mode}}})
			if err != nil {
				b.Fatal(err)
			}
			rr, err := r.Rerank(ctx, rq)
			if err != nil {
				b.Fatal(err)
			}
			done := a.Answer(ctx, rr)
			if first.IsZero() || want != "" && done.Mode != want {
				b.Fatalf("%q: mode %s (want %s), a token: %v", rq.Question, done.Mode, want, !first.IsZero())
			}
			total = append(total, float64(first.Sub(t0).Microseconds())/1000)
			for k, v := range done.TimingsMS {
				steps[k] = append(steps[k], v)
			}
		}
		b.StopTimer()
		p50, p95 := pct(total)
		b.ReportMetric(p50, "p50-ms")
		b.ReportMetric(p95, "p95-ms")
		for _, k := range []string{"embed", "vector", "lexical", "fuse", "rerank", "expand", "llm", "qa"} {
			if len(steps[k]) > 0 {
				s50, _ := pct(steps[k])
				b.ReportMetric(s50, k+"-p50-ms")
			}
		}
	}
	for _, mode := range []string{schemas.ModeLexical, schemas.ModeHybrid, schemas.ModeRerank} {
		b.Run("first-token/"+mode, func(b *testing.B) {
			// The fake's answer is not verified against these contexts, so the
			// mode is search-only after it: the first token is the provider's.
			run(b, mode, &answer.Answerer{Router: router, Analyzer: an}, "", false)
		})
	}
	b.Run("extractive/rerank", func(b *testing.B) {
		// Random weights: the threshold is lowered so that the span is
		// given (the work is the same at any threshold).
		run(b, schemas.ModeRerank, &answer.Answerer{QA: qa, Analyzer: an, Config: answer.Config{QAThreshold: 1e-6}},
			schemas.AnswerExtractive, true)
	})
}
