package openai_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/exocortex/exocortex/gateway/openai"
)

// BenchmarkStreamedChatCompletions: 16 chat clients at once stream cited
// answers through the endpoint from the real pipeline (lexical, the fake
// provider); reports the time to the first content chunk (p50, p95) and
// to the last.
func BenchmarkStreamedChatCompletions(b *testing.B) {
	be, pv := startPipeline(b, birds)
	pv.Fast.SetAnswer(crowsAnswer)
	srv := httptest.NewServer(openai.Handler(be))
	defer srv.Close()
	c := oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	const clients = 16
	var mu sync.Mutex
	var first, total []float64
	jobs := make(chan int)
	var wg sync.WaitGroup
	b.ResetTimer()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				start := time.Now()
				var ft time.Duration
				stream := c.Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{Model: openai.ModelAsk,
					Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage(fmt.Sprintf("What do crows use? (%d)", i))}})
				for stream.Next() {
					if ch := stream.Current(); ft == 0 && len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
						ft = time.Since(start)
					}
				}
				if err := stream.Err(); err != nil {
					b.Error(err)
				}
				stream.Close()
				mu.Lock()
				first, total = append(first, ms(ft)), append(total, ms(time.Since(start)))
				mu.Unlock()
			}
		}()
	}
	for i := range b.N {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(pct(first, 50), "first-token-p50-ms")
	b.ReportMetric(pct(first, 95), "first-token-p95-ms")
	b.ReportMetric(pct(total, 50), "total-p50-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
