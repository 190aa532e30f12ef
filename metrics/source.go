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

// liveSource is a registered source's gauges.
type liveSource struct {
	descs [6]*prometheus.Desc
	state *source[func() SourceState]
}

var (
	liveMu  sync.Mutex
	sources = map[string]*liveSource{}
	order   []string
)

// SetSource makes state the source of src's gauges and returns the
// function that removes it.
func SetSource(src Source, state func() SourceState) (remove func()) {
	liveMu.Lock()
	ls := sources[src.Name]
	if ls == nil {
		ls = &liveSource{descs: sourceDescs(src), state: &source[func() SourceState]{}}
		sources[src.Name] = ls
		order = append(order, src.Name)
	}
	liveMu.Unlock()
	return ls.state.set(state)
}

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

// sourceCollector collects the live sources' gauges; unchecked (its
// Describe sends nothing), as sources come and go by name.
type sourceCollector struct{}

var _ = register(sourceCollector{})

func (sourceCollector) Describe(chan<- *prometheus.Desc) {}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func (sourceCollector) Collect(ch chan<- prometheus.Metric) {
	liveMu.Lock()
	live := make([]*liveSource, 0, len(order))
	for _, n := range order {
		live = append(live, sources[n])
	}
	liveMu.Unlock()
	for _, ls := range live {
		state, ok := ls.state.get()
		if !ok {
			continue
		}
		b := state()
		connected := 0.0
		if b.Connected {
			connected = 1
		}
		d := ls.descs
		ch <- prometheus.MustNewConstMetric(d[0], prometheus.GaugeValue, connected)
		ch <- prometheus.MustNewConstMetric(d[1], prometheus.GaugeValue, unix(b.LastEvent))
		ch <- prometheus.MustNewConstMetric(d[2], prometheus.GaugeValue, unix(b.LastReconcile))
		ch <- prometheus.MustNewConstMetric(d[3], prometheus.GaugeValue, float64(b.DocsSynced))
		ch <- prometheus.MustNewConstMetric(d[4], prometheus.CounterValue, float64(b.Sent))
		ch <- prometheus.MustNewConstMetric(d[5], prometheus.CounterValue, float64(b.Deleted))
	}
}
