package siyuan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// This file declares the bridge as a role of the system (workers/registry):
// up runs it when a kernel is configured, worker --stage siyuan alone.

// RoleName is the bridge's role: not a consumer of the bus but a source
// publishing kb.doc.changed.
const RoleName = "siyuan"

// StatusKey is the KB_STATS key where a running bridge keeps its state.
const StatusKey = "siyuan_status"

// RoleConfig is the bridge's configuration in a system (one of
// system.Config.StageConfig).
type RoleConfig struct {
	Config
	// PluginListen is where the plugin endpoint listens (host:port; empty:
	// no endpoint). Events go to POST /siyuan/events.
	PluginListen string
}

// Role declares the bridge.
func Role() stage.Declaration {
	return stage.Declaration{
		Name: RoleName,
		Kind: stage.KindSource,
		Enabled: func(d *stage.Deps) bool {
			return stage.ConfigOf[*RoleConfig](d, nil) != nil
		},
		Serve:  newService,
		Source: openInventory,
	}
}

// bridgeGauges are the bridge's metrics (exocortex_siyuan_connected...).
var bridgeGauges = metrics.DeclareSource(metrics.Source{Name: RoleName, Noun: "the SiYuan bridge", Upstream: "the kernel"})

// Service is the bridge running in a system, with its plugin endpoint.
type Service struct {
	Source *Source
	// PluginAddr is the plugin endpoint's address ("" without one).
	PluginAddr string
	ln         net.Listener
	log        zerolog.Logger
}

func newService(ctx context.Context, d *stage.Deps) (stage.Service, error) {
	cfg := stage.ConfigOf[*RoleConfig](d, nil)
	if cfg == nil {
		return nil, errors.New("stage siyuan needs the kernel's URL (--siyuan URL or EXOCORTEX_SIYUAN_URL)")
	}
	state, err := d.KV(ctx, stage.BucketSources)
	if err != nil {
		return nil, err
	}
	trace := stage.TraceID(RoleName)
	log := d.Log.With().Str("trace_id", trace).Logger()
	svc := &Service{log: log}
	svc.Source = New(cfg.Config, state, func(ctx context.Context, ev *schemas.DocChanged) error {
		return d.Publish(ctx, ev, trace)
	}, log)
	if addr := cfg.PluginListen; addr != "" {
		if svc.ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("siyuan plugin endpoint %s: %w", addr, err)
		}
		svc.PluginAddr = svc.ln.Addr().String()
	}
	return svc, nil
}

// Run serves the plugin endpoint and runs the bridge until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	defer bridgeGauges.Set(func() metrics.SourceState {
		st := s.Source.Status()
		return metrics.SourceState{Connected: st.Connected && !st.Stopped, LastEvent: st.LastEvent, LastReconcile: st.LastReconcile,
			DocsSynced: st.DocsSynced, Sent: st.Sent, Deleted: st.Deleted}
	})()
	served := make(chan struct{})
	if s.ln != nil {
		mux := http.NewServeMux()
		mux.Handle("/siyuan/events", s.Source.PluginHandler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			defer close(served)
			go func() { <-ctx.Done(); _ = srv.Close() }()
			if err := srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error().Err(err).Msg("siyuan plugin endpoint failed")
			}
		}()
		s.log.Info().Str("addr", s.PluginAddr).Msg("siyuan plugin endpoint listening")
	} else {
		close(served)
	}
	err := s.Source.Run(ctx)
	<-served
	return err
}

// StatusKey is where the system writes the bridge's state.
func (s *Service) StatusKey() string { return StatusKey }

// Report is the bridge's state stamped with the time it is written.
func (s *Service) Report() any {
	st := s.Source.Status()
	st.ReportedAt = time.Now()
	return st
}

// ReadStatus reads the bridge's state a system last wrote (nil when no
// bridge ran); it stays after the bridge stopped. A state not rewritten for
// 5 s (the bridge writes it every second) is from a process that is gone:
// it reads as stopped.
func ReadStatus(ctx context.Context, b *bus.Bus) (*Status, error) {
	var st Status
	if ok, err := stage.ReadReport(ctx, b, StatusKey, &st); !ok {
		return nil, err
	}
	if time.Since(st.ReportedAt) > 5*time.Second {
		st.Stopped = true
	}
	if st.Stopped {
		st.Connected = false
	}
	return &st, nil
}
