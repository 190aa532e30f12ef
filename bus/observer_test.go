package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

type settled struct {
	stage   string
	outcome bus.Settlement
	took    time.Duration
	failed  bool
}

type recorder struct {
	mu   sync.Mutex
	seen []settled
}

func (r *recorder) Settled(stage string, outcome bus.Settlement, took time.Duration, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, settled{stage, outcome, took, failed})
}

func (r *recorder) all() []settled {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]settled(nil), r.seen...)
}

func TestTheObserverHearsOfEveryRetryAckAndDeadLetterWithTheHandlersTime(t *testing.T) {
	b := stagetest.New(t)
	spec := testStage(t, b, "observed")
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	calls := map[string]int{}
	var mu sync.Mutex
	go func() {
		done <- b.RunStage(ctx, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
			mu.Lock()
			calls[string(m.Data)]++
			n := calls[string(m.Data)]
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			switch {
			case strings.Contains(string(m.Data), "flaky") && n == 1:
				return nil, errors.New("database is busy")
			case strings.Contains(string(m.Data), "poison"):
				return nil, bus.Permanent(errors.New("field doc_id is missing"))
			}
			return nil, nil
		}), bus.RunOptions{NakBase: 50 * time.Millisecond, NakMax: 200 * time.Millisecond, Observer: rec})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	publishRaw(t, b, "kb.query.observed", "flaky", []byte(`{"x":"flaky"}`))
	publishRaw(t, b, "kb.query.observed", "poison", []byte(`{"x":"poison"}`))
	waitFor(t, "three settlements", func() bool { return len(rec.all()) >= 3 })
	time.Sleep(200 * time.Millisecond)

	count := map[bus.Settlement]int{}
	failed := 0
	for _, s := range rec.all() {
		if s.stage != "observed" {
			t.Errorf("settlement of stage %q, want observed", s.stage)
		}
		if s.took < 20*time.Millisecond {
			t.Errorf("%s reported a handler time of %s, want at least the handler's 20ms", s.outcome, s.took)
		}
		count[s.outcome]++
		if s.failed {
			failed++
		}
	}
	// The 200ms wait above lets a wrong extra settlement show.
	if len(rec.all()) != 3 || count[bus.SettledRetried] != 1 || count[bus.SettledAcked] != 1 || count[bus.SettledDeadLettered] != 1 || failed != 2 {
		t.Errorf("settlements %+v, want one retry and one ack of the flaky message, one dead letter of the poison; two failed", rec.all())
	}
}
