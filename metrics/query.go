package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exocortex/exocortex/schemas"
)

// QuerySteps are the steps of a query whose latency is observed, as named
// in the answer's timings_ms, plus first_token (submission to the first
// streamed token) and total (submission to the finished answer).
var QuerySteps = []string{"reformulate", "translate", "embed", "lexical", "vector", "fuse", "rerank", "expand",
	"cache", "llm", "qa", "first_token", "total"}

var (
	queryStep = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "exocortex_query_step_duration_seconds",
		Help:    "Latency of each step of a query (lexical, vector, fuse, rerank, expand, llm, ...), of its first streamed token and of the whole answer, from submission.",
		Buckets: durationBuckets,
	}, []string{"step"}))
	answers = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_answers_total",
		Help: "Answers given, by mode (llm, cache, extractive, search_only).",
	}, []string{"mode"}))
	answersCancelled = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "exocortex_answers_cancelled_total",
		Help: "Queries their client cancelled (it left) while the answer stage answered them; not counted in exocortex_answers_total.",
	}))
	cacheHits = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "exocortex_answer_cache_hits_total",
		Help: "Answers served from the semantic cache.",
	}))
)

var knownStep = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range QuerySteps {
		m[s] = true
	}
	return m
}()

func init() {
	// Every mode shows from the start, at 0, so rates and ratios exist.
	for _, m := range []string{schemas.AnswerLLM, schemas.AnswerCache, schemas.AnswerExtractive, schemas.AnswerSearchOnly} {
		answers.WithLabelValues(m)
	}
	for _, s := range QuerySteps {
		queryStep.WithLabelValues(s)
	}
}

// ObserveCancelled counts a query its client cancelled while it was
// answered: whatever the answer stage gave up with is not an answer of
// any mode, and its latencies are not the steps'.
func ObserveCancelled() { answersCancelled.Inc() }

// ObserveAnswer counts a finished answer by mode (and a cache hit) and
// observes its steps' latencies from its timings, with firstToken and
// total measured from the query's submission (0: not known, not observed).
func ObserveAnswer(done *schemas.AnswerDone, firstToken, total time.Duration) {
	if done == nil {
		return
	}
	answers.WithLabelValues(done.Mode).Inc()
	if done.Mode == schemas.AnswerCache {
		cacheHits.Inc()
	}
	for step, ms := range done.TimingsMS {
		if knownStep[step] && ms >= 0 {
			queryStep.WithLabelValues(step).Observe(ms / 1000)
		}
	}
	if firstToken > 0 {
		queryStep.WithLabelValues("first_token").Observe(firstToken.Seconds())
	}
	if total > 0 {
		queryStep.WithLabelValues("total").Observe(total.Seconds())
	}
}
