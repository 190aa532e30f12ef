package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func lagSamples(t *testing.T, source string) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := sourceLag.WithLabelValues(source).(interface{ Write(*dto.Metric) error }).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestSourceLagCountsOnlyChangesMadeWhileTheProcessRuns(t *testing.T) {
	const src = "lag-test"
	defer func(was time.Time) { started = was }(started)
	started = time.Now().Add(-time.Minute)
	n0, _ := lagSamples(t, src)
	ObserveSourceLag(src, started.Add(-time.Hour)) // an old note sent by a first sync
	if n, _ := lagSamples(t, src); n != n0 {
		t.Fatalf("a change from before the process started was observed (%d samples, want %d)", n, n0)
	}
	ObserveSourceLag(src, time.Now().Add(-1500*time.Millisecond))
	n, sum := lagSamples(t, src)
	if n != n0+1 || sum < 1.5 || sum > 60 {
		t.Errorf("a change 1.5 s ago: %d samples (want %d), sum %.3f s (want about 1.5)", n, n0+1, sum)
	}
	ObserveSourceLag(src, time.Now().Add(time.Second)) // the source's clock runs ahead
	if n2, sum2 := lagSamples(t, src); n2 != n+1 || sum2 != sum {
		t.Errorf("a change stamped in the future: %d samples, sum %.3f; want %d, %.3f (a lag of 0)", n2, sum2, n+1, sum)
	}
	ObserveSourceLag("", time.Now())
}
