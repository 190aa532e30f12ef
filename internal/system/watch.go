package system

import (
	"context"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/watch"
)

// WatchStatusKey is the KB_STATS key where the folder watcher keeps its state.
const WatchStatusKey = "watch_status"

// startWatch follows the configured Markdown folders until the system stops
// (a source like the SiYuan bridge); its state goes to KB_STATS every
// second.
func (s *System) startWatch(ctx context.Context) error {
	state, err := s.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		return err
	}
	trace := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	log := s.cfg.Log.With().Str("trace_id", trace).Logger()
	src, err := watch.New(*s.cfg.Watch, state, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := s.Bus.Publish(ctx, ev, trace)
		return err
	}, log)
	if err != nil {
		return err
	}
	s.Watch = src
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := src.Run(ctx); err != nil {
			log.Error().Err(err).Msg("the folder watcher stopped")
		}
		s.putStat(ctx, WatchStatusKey, reportedWatch(src))
	}()
	go func() {
		defer s.wg.Done()
		s.publishStat(ctx, WatchStatusKey, time.Second, func() any { return reportedWatch(src) })
	}()
	return nil
}

func reportedWatch(src *watch.Source) watch.Status {
	st := src.Status()
	st.ReportedAt = time.Now()
	return st
}

// WatchStatus reads the folder watcher's state a system last wrote (nil
// when none ran); a state not rewritten for 5 s reads as stopped.
func WatchStatus(ctx context.Context, b *bus.Bus) (*watch.Status, error) {
	var st watch.Status
	if ok, err := readStat(ctx, b, WatchStatusKey, &st); !ok {
		return nil, err
	}
	if time.Since(st.ReportedAt) > 5*time.Second {
		st.Stopped = true
	}
	return &st, nil
}
