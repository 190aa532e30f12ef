package system_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// corpus loads XQuAD ru + en and the SiYuan guide as document events.
func corpus(b *testing.B) []*schemas.DocChanged {
	b.Helper()
	var docs []*schemas.DocChanged
	for _, f := range []string{"../../../shared/eval/xquad.en.json", "../../../shared/eval/xquad.ru.json"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		set, err := eval.ParseSQuAD(raw, f)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, set.Docs...)
	}
	err := notes.Walk([]string{guide}, func(d *schemas.DocChanged) error {
		docs = append(docs, d)
		return nil
	}, func(p string, err error) { b.Fatalf("%s: %v", p, err) })
	if err != nil {
		b.Skipf("SiYuan guide not found: %v", err)
	}
	return docs
}

// BenchmarkIngestPipeline publishes the XQuAD (ru + en) and SiYuan guide
// corpus onto a fresh system and waits until every chunk is indexed: the
// whole event path, source event -> chunk stage -> index stage -> SQLite.
func BenchmarkIngestPipeline(b *testing.B) {
	docs := corpus(b)
	ctx := context.Background()
	var chunks int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		sys, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: testLog(&testing.T{})})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		for _, d := range docs {
			d.Envelope = schemas.Envelope{}
			if _, err := sys.Bus.Publish(ctx, d, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 10*time.Millisecond, nil); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		_, n, _ := sys.Store.Counts(ctx)
		chunks += n
		_ = sys.Stop()
	}
	b.ReportMetric(float64(chunks)/elapsed.Seconds(), "chunks/s")
	b.ReportMetric(float64(len(docs)*b.N)/elapsed.Seconds(), "docs/s")
	b.ReportMetric(float64(chunks/b.N), "chunks")
}

// BenchmarkAskOverTheBus asks XQuAD questions of a running system holding
// the benchmark corpus (lexical, no models) through the bus: kb.query.submitted
// -> retrieve -> rerank -> answer -> kb.answer.tokens.<id>, with a fake
// provider that answers at once. It reports the time to the first token at
// the client and how much of it is the stages' own work (the rest is the
// JetStream and core NATS hops, the prompt and the provider's HTTP exchange).
func BenchmarkAskOverTheBus(b *testing.B) {
	docs := corpus(b)
	var questions []string
	for _, f := range []string{"../../../shared/eval/xquad.en.json", "../../../shared/eval/xquad.ru.json"} {
		set, err := eval.Load(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		for _, q := range set.Questions {
			questions = append(questions, q.Question)
		}
	}
	ctx := context.Background()
	srv := llmtest.New(b)
	srv.SetAnswer("An answer [1].")
	sys, err := system.Start(ctx, system.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
		LLM: &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(), Models: map[string]string{llm.RoleFast: "m"}}}},
		Log: testLog(&testing.T{})})
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Stop()
	for _, d := range docs {
		d.Envelope = schemas.Envelope{}
		if _, err := sys.Bus.Publish(ctx, d, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 10*time.Millisecond, nil); err != nil {
		b.Fatal(err)
	}
	_, chunks, _ := sys.Store.Counts(ctx)
	var ttft, stages []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var mu sync.Mutex
		var first time.Time
		t0 := time.Now()
		done, _, err := client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("bench-%d", i),
			Question: questions[i%len(questions)]}}, client.AskOptions{OnToken: func(tok *schemas.AnswerToken) {
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() && tok.Text != "" {
				first = time.Now()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		f := first
		mu.Unlock()
		if f.IsZero() {
			f = time.Now() // the tokens are core NATS: the first may trail the final answer
		}
		ttft = append(ttft, float64(f.Sub(t0).Microseconds())/1000)
		var s float64
		for _, k := range []string{"embed", "vector", "lexical", "fuse", "rerank", "expand"} {
			s += done.TimingsMS[k]
		}
		stages = append(stages, s)
	}
	b.StopTimer()
	b.ReportMetric(eval.Percentile(ttft, 50), "first-token-p50-ms")
	b.ReportMetric(eval.Percentile(ttft, 95), "first-token-p95-ms")
	b.ReportMetric(eval.Percentile(stages, 50), "stages-p50-ms")
	b.ReportMetric(float64(chunks), "chunks")
}
