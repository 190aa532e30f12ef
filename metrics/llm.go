package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exocortex/exocortex/models/llm"
)

var (
	llmRequests = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_llm_requests_total",
		Help: "Requests sent to a language-model provider, by provider and role.",
	}, []string{"provider", "role"}))
	llmErrors = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_llm_errors_total",
		Help: "Requests to a language-model provider that failed.",
	}, []string{"provider", "role"}))
	llmCancelled = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_llm_requests_cancelled_total",
		Help: "Requests to a language-model provider let go because their query was cancelled (its client left); not errors.",
	}, []string{"provider", "role"}))
	llmDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "exocortex_llm_request_duration_seconds",
		Help:    "How long a request to a language-model provider took (the whole streamed answer).",
		Buckets: durationBuckets,
	}, []string{"provider", "role"}))
)

// LLMAttempt is the router's llm.RouterOptions.OnAttempt hook. A request
// its query's cancellation ended (context.Canceled: the client left) is
// counted as cancelled, not as the provider's error, and its duration is
// not the provider's latency.
func LLMAttempt(provider, role string, took time.Duration, err error) {
	if role == "" {
		role = "default"
	}
	llmRequests.WithLabelValues(provider, role).Inc()
	if errors.Is(err, context.Canceled) {
		llmCancelled.WithLabelValues(provider, role).Inc()
		return
	}
	if err != nil {
		llmErrors.WithLabelValues(provider, role).Inc()
	}
	llmDuration.WithLabelValues(provider, role).Observe(took.Seconds())
}

// InitProviders exports the providers' request, error and cancellation
// counters (and latency histograms) at 0 for every role each serves (all
// roles when its models name none), so rates and ratios exist before the
// first request.
func InitProviders(cfg llm.Config) {
	for _, p := range cfg.Providers {
		roles := make([]string, 0, len(p.Models))
		for r := range p.Models {
			roles = append(roles, r)
		}
		if len(roles) == 0 {
			roles = []string{llm.RoleFast, llm.RoleLongContext, llm.RoleStrategic}
		}
		for _, r := range roles {
			llmRequests.WithLabelValues(p.Name, r)
			llmErrors.WithLabelValues(p.Name, r)
			llmCancelled.WithLabelValues(p.Name, r)
			llmDuration.WithLabelValues(p.Name, r)
		}
	}
}

var routerSource source[func() []llm.ProviderHealth]

// SetRouter makes health (the router's Health) the source of the breaker
// gauges and returns the function that removes it.
func SetRouter(health func() []llm.ProviderHealth) (remove func()) { return routerSource.set(health) }

// BreakerStates are the values of the state label of exocortex_llm_breaker_state.
var BreakerStates = []string{"closed", "half-open", "open"}

var (
	breakerDesc = prometheus.NewDesc("exocortex_llm_breaker_state",
		"1 for the provider's current circuit-breaker state (closed, half-open, open), 0 for the others.",
		[]string{"provider", "state"}, nil)
	errorScoreDesc = prometheus.NewDesc("exocortex_llm_error_score",
		"The provider's recent-error score (decays with a half-life; the router prefers low scores).",
		[]string{"provider"}, nil)
	latencyDesc = prometheus.NewDesc("exocortex_llm_latency_ewma_seconds",
		"The provider's moving average latency, as the router ranks it.", []string{"provider"}, nil)
)

type routerCollector struct{}

var _ = register(routerCollector{})

func (routerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- breakerDesc
	ch <- errorScoreDesc
	ch <- latencyDesc
}

func (routerCollector) Collect(ch chan<- prometheus.Metric) {
	health, ok := routerSource.get()
	if !ok {
		return
	}
	for _, h := range health() {
		for _, s := range BreakerStates {
			v := 0.0
			if h.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, v, h.Name, s)
		}
		ch <- prometheus.MustNewConstMetric(errorScoreDesc, prometheus.GaugeValue, h.ErrorScore, h.Name)
		ch <- prometheus.MustNewConstMetric(latencyDesc, prometheus.GaugeValue, h.LatencyEWMA.Seconds(), h.Name)
	}
}
