package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var sourceLag = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "exocortex_source_index_lag_seconds",
	Help: "Time from a document's change at its source (the SiYuan kernel's updated time, a file's modification time) " +
		"to its structure being indexed; only changes made while this process runs are observed.",
	Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
}, []string{"source"}))

// ObserveSourceLag observes the lag of a document of source changed at
// changed and indexed now. A change from before this process started (an
// old note sent by a first sync or a reconciliation) says nothing about the
// lag and is not observed.
func ObserveSourceLag(source string, changed time.Time) {
	if source == "" || changed.Before(started) {
		return
	}
	lag := time.Since(changed)
	if lag < 0 {
		lag = 0 // the source's clock (or one-second resolution) is ahead
	}
	sourceLag.WithLabelValues(source).Observe(lag.Seconds())
}

// Bridge is the SiYuan bridge's state as the gauges show it.
type Bridge struct {
	Connected     bool
	LastEvent     time.Time
	LastReconcile time.Time
	DocsSynced    int
	Sent          int
	Deleted       int
}

var bridgeSource source[func() Bridge]

// SetBridge makes state the source of the SiYuan bridge's gauges and
// returns the function that removes it.
func SetBridge(state func() Bridge) (remove func()) { return bridgeSource.set(state) }

var (
	bridgeConnectedDesc = prometheus.NewDesc("exocortex_siyuan_connected",
		"1 while the SiYuan bridge is connected to the kernel's event stream.", nil, nil)
	bridgeLastEventDesc = prometheus.NewDesc("exocortex_siyuan_last_event_timestamp_seconds",
		"Unix time of the last change event the bridge received from the kernel (0: none yet).", nil, nil)
	bridgeLastReconcileDesc = prometheus.NewDesc("exocortex_siyuan_last_reconcile_timestamp_seconds",
		"Unix time of the bridge's last completed reconciliation with the kernel (0: none yet).", nil, nil)
	bridgeDocsDesc = prometheus.NewDesc("exocortex_siyuan_docs_synced",
		"The kernel's documents indexed now.", nil, nil)
	bridgeSentDesc = prometheus.NewDesc("exocortex_siyuan_docs_sent_total",
		"Documents the bridge sent to the pipeline since it started.", nil, nil)
	bridgeDeletedDesc = prometheus.NewDesc("exocortex_siyuan_docs_deleted_total",
		"Document deletions the bridge sent since it started.", nil, nil)
)

type bridgeCollector struct{}

var _ = register(bridgeCollector{})

func (bridgeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{bridgeConnectedDesc, bridgeLastEventDesc, bridgeLastReconcileDesc, bridgeDocsDesc, bridgeSentDesc, bridgeDeletedDesc} {
		ch <- d
	}
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func (bridgeCollector) Collect(ch chan<- prometheus.Metric) {
	state, ok := bridgeSource.get()
	if !ok {
		return
	}
	b := state()
	connected := 0.0
	if b.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(bridgeConnectedDesc, prometheus.GaugeValue, connected)
	ch <- prometheus.MustNewConstMetric(bridgeLastEventDesc, prometheus.GaugeValue, unix(b.LastEvent))
	ch <- prometheus.MustNewConstMetric(bridgeLastReconcileDesc, prometheus.GaugeValue, unix(b.LastReconcile))
	ch <- prometheus.MustNewConstMetric(bridgeDocsDesc, prometheus.GaugeValue, float64(b.DocsSynced))
	ch <- prometheus.MustNewConstMetric(bridgeSentDesc, prometheus.CounterValue, float64(b.Sent))
	ch <- prometheus.MustNewConstMetric(bridgeDeletedDesc, prometheus.CounterValue, float64(b.Deleted))
}
