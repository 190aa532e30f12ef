// Package metrics holds the system's Prometheus metrics: every metric is
// declared here, on a registry the system owns (Registry, with the Go and
// process collectors), and served by Handler at /metrics. The stages, the
// bus and the language-model router report through small hooks (an
// Observer for the bus, an OnAttempt function for the router, functions
// the answer and index stages call); the pipeline wires them where it
// starts the stages, and points the scrape-time collectors (consumer
// gauges, breaker states, the SiYuan bridge) at what runs in the process.
//
// Names follow exocortex_<area>_<what>_<unit>; durations are histograms in
// seconds.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds every metric of the system, the Go runtime's and the
// process's.
var Registry = prometheus.NewRegistry()

// started is when this process started reporting: source lag is only
// measured for changes made after it (see ObserveSourceLag).
var started = time.Now()

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	Registry.MustRegister(all...)
}

// all is every collector this package declares, registered at init.
var all []prometheus.Collector

func register[C prometheus.Collector](c C) C {
	all = append(all, c)
	return c
}

// Handler serves the registry in the Prometheus exposition format (text, or
// OpenMetrics / protobuf when the scraper asks for them).
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry, ErrorHandling: promhttp.ContinueOnError})
}

// Collectors are the collectors this package declares (for tests and for a
// program that wants them on a registry of its own).
func Collectors() []prometheus.Collector { return append([]prometheus.Collector(nil), all...) }

// durationBuckets span 1 ms to ~65 s.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// source is what a scrape-time collector reads: the latest one set wins
// (one process may start several systems, as tests do); clearing it
// restores the one set before.
type source[T any] struct {
	mu    sync.Mutex
	stack []*T
}

// set makes v the current source and returns the function that removes it.
func (s *source[T]) set(v T) (remove func()) {
	p := &v
	s.mu.Lock()
	s.stack = append(s.stack, p)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, q := range s.stack {
			if q == p {
				s.stack = append(s.stack[:i], s.stack[i+1:]...)
				return
			}
		}
	}
}

func (s *source[T]) get() (T, bool) {
	p := s.current()
	if p == nil {
		var zero T
		return zero, false
	}
	return *p, true
}

// current is the current source's identity (nil when none is set).
func (s *source[T]) current() *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.stack) == 0 {
		return nil
	}
	return s.stack[len(s.stack)-1]
}
