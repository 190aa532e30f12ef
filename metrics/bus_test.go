package metrics_test

import (
	"testing"

	"github.com/exocortex/exocortex/bus"
)

// A dashboard panel over the slow-consumer counters shows 0, not "No
// data", in a process that never lost a reply.
func TestTheSlowConsumerCountersOfEveryReplySubjectExistFromTheStart(t *testing.T) {
	fams := scrape(t)
	for _, name := range []string{"exocortex_bus_slow_consumer_total", "exocortex_bus_dropped_messages_total"} {
		got := map[string]bool{}
		for _, s := range labelValues(fams, name, "subject") {
			got[s] = true
		}
		for _, s := range bus.ReplySubjects {
			if !got[s] {
				t.Errorf("%s has no series for subject %s", name, s)
			}
			if v := value(fams, name, map[string]string{"subject": s}); v != 0 {
				t.Errorf("%s{subject=%q} = %v before anything was lost", name, s, v)
			}
		}
	}
}
