package metrics

import (
	"sync"
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

// Source names a live source for its gauges: Name is in the metric names
// (exocortex_<name>_connected...), Noun and Upstream in their help ("the
// folder watcher", "its folders").
type Source struct {
	Name, Noun, Upstream string
}

// SourceState is a live source's state as its gauges show it.
type SourceState struct {
	Connected     bool
	LastEvent     time.Time
	LastReconcile time.Time
	DocsSynced    int
	Sent          int
	Deleted       int
}

// SourceGauges are one source's gauges, declared once by its package
// (DeclareSource) and pointed at the running source by Set.
type SourceGauges struct {
	descs [6]*prometheus.Desc
	state source[func() SourceState]
}

var declareMu sync.Mutex

// DeclareSource declares the gauges of a live source (in a package-level
// var of the source's package, so that they are declared before any
// scrape) and registers them.
func DeclareSource(src Source) *SourceGauges {
	g := &SourceGauges{descs: sourceDescs(src)}
	declareMu.Lock()
	defer declareMu.Unlock()
	all = append(all, g)
	Registry.MustRegister(g)
	return g
}

// Set makes state the source of the gauges and returns the function that
// removes it.
func (g *SourceGauges) Set(state func() SourceState) (remove func()) { return g.state.set(state) }

func sourceDescs(s Source) [6]*prometheus.Desc {
	name := func(n string) string { return "exocortex_" + s.Name + "_" + n }
	return [6]*prometheus.Desc{
		prometheus.NewDesc(name("connected"), "1 while "+s.Noun+" is connected to "+s.Upstream+"'s event stream.", nil, nil),
		prometheus.NewDesc(name("last_event_timestamp_seconds"), "Unix time of the last change event "+s.Noun+" received from "+s.Upstream+" (0: none yet).", nil, nil),
		prometheus.NewDesc(name("last_reconcile_timestamp_seconds"), "Unix time of "+s.Noun+"'s last completed reconciliation with "+s.Upstream+" (0: none yet).", nil, nil),
		prometheus.NewDesc(name("docs_synced"), "The documents of "+s.Upstream+" indexed now.", nil, nil),
		prometheus.NewDesc(name("docs_sent_total"), "Documents "+s.Noun+" sent to the pipeline since it started.", nil, nil),
		prometheus.NewDesc(name("docs_deleted_total"), "Document deletions "+s.Noun+" sent since it started.", nil, nil),
	}
}

func (g *SourceGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range g.descs {
		ch <- d
	}
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func (g *SourceGauges) Collect(ch chan<- prometheus.Metric) {
	state, ok := g.state.get()
	if !ok {
		return
	}
	b := state()
	connected := 0.0
	if b.Connected {
		connected = 1
	}
	d := g.descs
	ch <- prometheus.MustNewConstMetric(d[0], prometheus.GaugeValue, connected)
	ch <- prometheus.MustNewConstMetric(d[1], prometheus.GaugeValue, unix(b.LastEvent))
	ch <- prometheus.MustNewConstMetric(d[2], prometheus.GaugeValue, unix(b.LastReconcile))
	ch <- prometheus.MustNewConstMetric(d[3], prometheus.GaugeValue, float64(b.DocsSynced))
	ch <- prometheus.MustNewConstMetric(d[4], prometheus.CounterValue, float64(b.Sent))
	ch <- prometheus.MustNewConstMetric(d[5], prometheus.CounterValue, float64(b.Deleted))
}
