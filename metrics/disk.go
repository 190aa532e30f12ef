package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exocortex/exocortex/bus"
)

// DiskState reads the embedded JetStream store's disk (bus.Bus.DiskState);
// ok is false with an external NATS server.
type DiskState func(ctx context.Context) (bus.DiskState, bool)

var diskSource source[DiskState]

// SetDiskState makes read the source of the disk gauges and returns the
// function that removes it.
func SetDiskState(read DiskState) (remove func()) { return diskSource.set(read) }

var (
	diskFullDesc = prometheus.NewDesc("exocortex_disk_full",
		"1 while the embedded JetStream store's disk is out of space and intake is paused, else 0.", nil, nil)
	diskFreeDesc = prometheus.NewDesc("exocortex_disk_free_bytes",
		"Free space of the volume that holds the embedded JetStream store.", nil, nil)
	diskEpisodesDesc = prometheus.NewDesc("exocortex_disk_full_episodes_total",
		"Times the embedded JetStream store's disk was found full since start.", nil, nil)
)

type diskCollector struct{}

var _ = register(diskCollector{})

func (diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- diskFullDesc
	ch <- diskFreeDesc
	ch <- diskEpisodesDesc
}

func (diskCollector) Collect(ch chan<- prometheus.Metric) {
	read, ok := diskSource.get()
	if !ok {
		return
	}
	st, ok := read(context.Background())
	if !ok {
		return
	}
	full := 0.0
	if st.Full {
		full = 1
	}
	ch <- prometheus.MustNewConstMetric(diskFullDesc, prometheus.GaugeValue, full)
	ch <- prometheus.MustNewConstMetric(diskFreeDesc, prometheus.GaugeValue, float64(st.FreeBytes))
	ch <- prometheus.MustNewConstMetric(diskEpisodesDesc, prometheus.CounterValue, float64(st.Episodes))
}
