package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/schemas"
)

// timedBackend records how long each Ask spent in the backend.
type timedBackend struct {
	gateway.Backend
	mu   sync.Mutex
	took map[string]time.Duration
}

func (tb *timedBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	start := time.Now()
	d, err := tb.Backend.Ask(ctx, q, onToken)
	tb.mu.Lock()
	tb.took[q.QueryID] = time.Since(start)
	tb.mu.Unlock()
	return d, err
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkGateway50ConcurrentSSEAsks sends 50 questions at once through
// POST /v1/ask over a real pipeline with the fake provider, and reports the
// first-token latency (p50, p95), the whole answer's, and the gateway's own
// overhead per request: the client's time to the done event minus the time
// the backend spent in Ask (HTTP, JSON, SSE writing).
func BenchmarkGateway50ConcurrentSSEAsks(b *testing.B) {
	const n = 50
	e := startEnv(b)
	tb := &timedBackend{Backend: e.backend, took: map[string]time.Duration{}}
	_, hs := e.serve(b, gateway.Config{}, tb)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	var first, total, overhead []time.Duration
	completed := 0
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				body := fmt.Sprintf(`{"question":"What do crows use to get food, question %d of round %d?"}`, i, it)
				start := time.Now()
				resp, err := client.Post(hs.URL+"/v1/ask", "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				var tFirst, tDone time.Duration
				readSSE(b, resp.Body, func(ev sseEvent) bool {
					switch ev.Name {
					case "token":
						if tFirst == 0 {
							tFirst = time.Since(start)
						}
					case "done":
						tDone = time.Since(start)
					case "error":
						b.Errorf("error event: %s", ev.Data)
					}
					return true
				})
				id := resp.Header.Get("X-Exocortex-Query-Id")
				mu.Lock()
				defer mu.Unlock()
				if tDone == 0 {
					b.Errorf("query %s: no done event", id)
					return
				}
				completed++
				first = append(first, tFirst)
				total = append(total, tDone)
				tb.mu.Lock()
				overhead = append(overhead, tDone-tb.took[id])
				tb.mu.Unlock()
			}(i)
		}
		wg.Wait()
	}
	b.StopTimer()
	if completed != n*b.N {
		b.Fatalf("%d of %d answers completed", completed, n*b.N)
	}
	b.ReportMetric(float64(completed), "answers")
	b.ReportMetric(ms(pct(first, 0.50)), "first-token-p50-ms")
	b.ReportMetric(ms(pct(first, 0.95)), "first-token-p95-ms")
	b.ReportMetric(ms(pct(total, 0.50)), "answer-p50-ms")
	b.ReportMetric(ms(pct(total, 0.95)), "answer-p95-ms")
	b.ReportMetric(ms(pct(overhead, 0.50)), "gateway-overhead-p50-ms")
	b.ReportMetric(ms(pct(overhead, 0.95)), "gateway-overhead-p95-ms")
}
