package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/exocortex/exocortex/bus"
)

var (
	slowConsumerDesc = prometheus.NewDesc("exocortex_bus_slow_consumer_total",
		"Times a subscription of this process fell behind and the NATS client began dropping its messages, by subject "+
			"(per-request subjects as kb.answer.tokens.*); every reply subject is exported from the start.",
		[]string{"subject"}, nil)
	droppedDesc = prometheus.NewDesc("exocortex_bus_dropped_messages_total",
		"Messages the NATS client of this process dropped for a subscription that could not keep up, by subject.",
		[]string{"subject"}, nil)
)

// busCollector reads the bus's slow-consumer counts at scrape time.
type busCollector struct{}

var _ = register(busCollector{})

func (busCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- slowConsumerDesc
	ch <- droppedDesc
}

func (busCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range bus.SlowConsumerStats() {
		ch <- prometheus.MustNewConstMetric(slowConsumerDesc, prometheus.CounterValue, float64(s.Episodes), s.Subject)
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(s.Dropped), s.Subject)
	}
}
