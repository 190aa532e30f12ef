package pipeline_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
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
	err := files.Walk([]string{guide}, func(d *schemas.DocChanged) error {
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
		sys, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, Listen: "127.0.0.1:-1", Log: testLog(&testing.T{})})
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
		if err := pipeline.WaitIdle(ctx, sys.Bus, bus.Stages(), 10*time.Millisecond, nil); err != nil {
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
