package metrics_test

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/schemas"
)

// BenchmarkStageObserver is what the bus adds to every settled message.
func BenchmarkStageObserver(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			metrics.Stages.Settled("bench", bus.SettledAcked, 3*time.Millisecond, false)
		}
	})
}

// BenchmarkObserveAnswer is what the answer stage adds to every answer.
func BenchmarkObserveAnswer(b *testing.B) {
	done := &schemas.AnswerDone{QueryID: "q", Mode: schemas.AnswerLLM,
		TimingsMS: map[string]float64{"lexical": 2, "vector": 5, "fuse": 0.3, "rerank": 40, "expand": 1, "llm": 900}}
	b.ReportAllocs()
	for b.Loop() {
		metrics.ObserveAnswer(done, 300*time.Millisecond, time.Second)
	}
}

// BenchmarkScrape renders the whole registry as one /metrics request does
// (no stage source set: the consumer gauges are not read).
func BenchmarkScrape(b *testing.B) {
	h := metrics.Handler()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		_, _ = io.Copy(io.Discard, rec.Body)
	}
}
