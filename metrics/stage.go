package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exocortex/exocortex/bus"
)

var (
	stageHandled = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_stage_messages_handled_total",
		Help: "Messages a stage handled and settled (acked, retried or dead-lettered).",
	}, []string{"stage"}))
	stageFailed = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_stage_messages_failed_total",
		Help: "Messages whose handler (or the publishing of its output) failed.",
	}, []string{"stage"}))
	stageRetried = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_stage_messages_retried_total",
		Help: "Messages nak'ed for redelivery after a failure.",
	}, []string{"stage"}))
	stageDeadLettered = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "exocortex_stage_messages_dead_lettered_total",
		Help: "Messages sent to kb.dlq.<stage> (permanent failure or deliveries exhausted).",
	}, []string{"stage"}))
	stageDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "exocortex_stage_handler_duration_seconds",
		Help:    "How long a stage's handler ran per message (a batch's time shared among its messages).",
		Buckets: durationBuckets,
	}, []string{"stage"}))
)

// InitStages exports every stage's counters (handled, failed, retried,
// dead-lettered) and handler histogram at 0, so the dashboard's rates exist
// before the first message or failure; the pipeline calls it with the
// catalog's stage names.
func InitStages(names []string) {
	for _, st := range names {
		stageHandled.WithLabelValues(st)
		stageFailed.WithLabelValues(st)
		stageRetried.WithLabelValues(st)
		stageDeadLettered.WithLabelValues(st)
		stageDuration.WithLabelValues(st)
	}
}

// Stages is the bus.Observer that counts every settled message by stage;
// the pipeline sets it in each stage's bus.RunOptions.
var Stages bus.Observer = stageObserver{}

type stageObserver struct{}

func (stageObserver) Settled(stage string, outcome bus.Settlement, took time.Duration, failed bool) {
	stageHandled.WithLabelValues(stage).Inc()
	if failed {
		stageFailed.WithLabelValues(stage).Inc()
	}
	switch outcome {
	case bus.SettledRetried:
		stageRetried.WithLabelValues(stage).Inc()
	case bus.SettledDeadLettered:
		stageDeadLettered.WithLabelValues(stage).Inc()
	}
	if took > 0 {
		stageDuration.WithLabelValues(stage).Observe(took.Seconds())
	}
}

// StageStates reads the consumers' states (bus.Bus.StageStates over the
// system's stage specs).
type StageStates func(ctx context.Context) ([]bus.StageState, error)

var stageSource source[StageStates]

// SetStageStates makes read the source of the consumer gauges and returns
// the function that removes it (call it when the bus closes).
func SetStageStates(read StageStates) (remove func()) { return stageSource.set(read) }

// stageStateCacheFor is how long a scrape reuses the consumers' states read
// by the one before (each read asks the server about every consumer).
const stageStateCacheFor = 2 * time.Second

var (
	pendingDesc = prometheus.NewDesc("exocortex_stage_pending_messages",
		"Messages in the stage's stream not yet delivered to its consumer.", []string{"stage"}, nil)
	ackPendingDesc = prometheus.NewDesc("exocortex_stage_ack_pending_messages",
		"Messages delivered to the stage and not yet acknowledged.", []string{"stage"}, nil)
	redeliveredDesc = prometheus.NewDesc("exocortex_stage_redelivered_messages",
		"Messages delivered to the stage more than once and not yet acknowledged.", []string{"stage"}, nil)
)

type consumerCollector struct {
	mu     sync.Mutex
	src    *StageStates // the source the cached states came from
	at     time.Time
	states []bus.StageState
}

var _ = register(&consumerCollector{})

func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- ackPendingDesc
	ch <- redeliveredDesc
}

func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	src := stageSource.current()
	if src == nil {
		return
	}
	c.mu.Lock()
	if c.src != src || time.Since(c.at) > stageStateCacheFor {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		states, err := (*src)(ctx)
		cancel()
		// A consumer that cannot be read (not created yet) leaves out the
		// ones after it; what was read is shown.
		if err == nil || len(states) > 0 {
			c.src, c.states, c.at = src, states, time.Now()
		}
	}
	states := c.states
	c.mu.Unlock()
	for _, s := range states {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(s.Pending), s.Stage)
		ch <- prometheus.MustNewConstMetric(ackPendingDesc, prometheus.GaugeValue, float64(s.AckPending), s.Stage)
		ch <- prometheus.MustNewConstMetric(redeliveredDesc, prometheus.GaugeValue, float64(s.Redelivered), s.Stage)
	}
}
