package answer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// BenchmarkFirstVerifiedSentence measures what showing only verified
// sentences adds before the client's first token: the provider streams a
// three-sentence answer at 25 ms a token (a model's pace); interleaved in
// each iteration, the time at which the raw stream completes its first
// sentence (the model's own first sentence) and the time at which the
// answer stage sends its first token. Reported: added-ms/op (p50 over the
// iterations is printed too).
func BenchmarkFirstVerifiedSentence(b *testing.B) {
	ctxs := guideContexts(&testing.T{}, searchPage)
	quote := "Configurable in Settings - Search - Case Sensitive"
	text := "According to the notes, search is «" + quote + "» [1]. It applies to every search of the workspace [1]. Nothing else is needed [1]."
	srv := llmtest.New(b)
	srv.SetAnswer(text)
	srv.SetTokenDelay(25 * time.Millisecond)
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{{Name: "p", BaseURL: srv.URL(), Models: map[string]string{llm.RoleFast: "m"}}}}, llm.RouterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	a := analyzer(&testing.T{})
	q := &schemas.QueryReranked{Query: schemas.Query{QueryID: "q", Question: "How do I make search case sensitive?", Lang: "en"}, Mode: schemas.ModeHybrid, Contexts: ctxs}
	var added []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The model's own first sentence: the raw stream up to "[1].".
		start := time.Now()
		var raw strings.Builder
		var ownFirst time.Duration
		_, _ = r.Stream(context.Background(), llm.Request{Role: llm.RoleFast, Messages: []llm.Message{{Role: "user", Content: "q"}}}, func(tok string) error {
			raw.WriteString(tok)
			if ownFirst == 0 && strings.Contains(raw.String(), "[1].") {
				ownFirst = time.Since(start)
			}
			return nil
		})
		// The answer stage's first token.
		start = time.Now()
		var first time.Duration
		ans := &answer.Answerer{Router: r, Analyzer: a, Emit: func(_ context.Context, t *schemas.AnswerToken) error {
			if first == 0 && t.Text != "" {
				first = time.Since(start)
			}
			return nil
		}}
		done := ans.Respond(context.Background(), q)
		if done.Mode != schemas.AnswerLLM || first == 0 {
			b.Fatalf("mode %s reasons %q", done.Mode, done.Reasons)
		}
		added = append(added, float64(first-ownFirst)/float64(time.Millisecond))
	}
	b.StopTimer()
	sum := 0.0
	for _, x := range added {
		sum += x
	}
	b.ReportMetric(sum/float64(len(added)), "added-ms/op")
	b.ReportMetric(percentile(added, 0.5), "added-p50-ms")
	b.ReportMetric(percentile(added, 0.95), "added-p95-ms")
}

func percentile(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
