package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// This file declares the folder watcher as a role of the system
// (workers/registry): up runs it when folders are configured (--watch, the
// data directory's watch list), worker --stage files alone.

// RoleName is the watcher's role: a source publishing kb.doc.changed.
const RoleName = "files"

// StatusKey is the KB_STATS key where the folder watcher keeps its state.
const StatusKey = "watch_status"

// Role declares the folder watcher; its configuration is a *Config in the
// system's StageConfig.
func Role() stage.Declaration {
	return stage.Declaration{
		Name: RoleName,
		Kind: stage.KindSource,
		Enabled: func(d *stage.Deps) bool {
			return stage.ConfigOf[*Config](d, nil) != nil
		},
		Serve:  newService,
		Source: openInventory,
	}
}

// Service is the watcher running in a system.
type Service struct {
	Source *Source
	log    zerolog.Logger
}

func newService(ctx context.Context, d *stage.Deps) (stage.Service, error) {
	cfg := stage.ConfigOf[*Config](d, nil)
	if cfg == nil {
		return nil, errors.New("stage files needs folders to watch (--watch DIR or the data directory's watch list)")
	}
	state, err := d.KV(ctx, stage.BucketSources)
	if err != nil {
		return nil, err
	}
	trace := stage.TraceID("watch")
	log := d.Log.With().Str("trace_id", trace).Logger()
	src, err := New(*cfg, state, func(ctx context.Context, ev *schemas.DocChanged) error {
		return d.Publish(ctx, ev, trace)
	}, log)
	if err != nil {
		return nil, err
	}
	return &Service{Source: src, log: log}, nil
}

// Run follows the folders until ctx ends. A failure is logged: the
// system's other roles go on.
func (s *Service) Run(ctx context.Context) error {
	if err := s.Source.Run(ctx); err != nil {
		s.log.Error().Err(err).Msg("the folder watcher stopped")
	}
	return nil
}

// Announce says how many folders are watched.
func (s *Service) Announce() string {
	if n := len(s.Source.cfg.Folders); n != 1 {
		return fmt.Sprintf("watching %d folders live", n)
	}
	return "watching 1 folder live"
}

// StatusKey is where the system writes the watcher's state.
func (s *Service) StatusKey() string { return StatusKey }

// Report is the watcher's state stamped with the time it is written.
func (s *Service) Report() any {
	st := s.Source.Status()
	st.ReportedAt = time.Now()
	return st
}

// ReadStatus reads the folder watcher's state a system last wrote (nil
// when none ran); a state not rewritten for 5 s reads as stopped.
func ReadStatus(ctx context.Context, b *bus.Bus) (*Status, error) {
	var st Status
	if ok, err := stage.ReadReport(ctx, b, StatusKey, &st); !ok {
		return nil, err
	}
	if time.Since(st.ReportedAt) > 5*time.Second {
		st.Stopped = true
	}
	return &st, nil
}
