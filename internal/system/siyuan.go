package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/stage"
)

// StageSiYuan is the SiYuan bridge: not a consumer of the bus but a source
// publishing kb.doc.changed; `worker --stage siyuan` runs it alone.
const StageSiYuan = "siyuan"

// SiYuanStatusKey is the KB_STATS key where a running bridge keeps its state.
const SiYuanStatusKey = "siyuan_status"

// SiYuanConfig is the bridge's configuration in a pipeline.
type SiYuanConfig struct {
	siyuan.Config
	// PluginListen is where the plugin endpoint listens (host:port; empty:
	// no endpoint). Events go to POST /siyuan/events.
	PluginListen string
}

// startSiYuan runs the bridge until the system stops; its state goes to
// KB_STATS every second.
func (s *System) startSiYuan(ctx context.Context) error {
	state, err := s.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		return err
	}
	trace := fmt.Sprintf("siyuan-%d", time.Now().UnixNano())
	log := s.cfg.Log.With().Str("trace_id", trace).Logger()
	src := siyuan.New(s.cfg.SiYuan.Config, state, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := s.Bus.Publish(ctx, ev, trace)
		return err
	}, log)
	s.SiYuan = src
	s.unmetric = append(s.unmetric, metrics.SetBridge(func() metrics.Bridge {
		st := src.Status()
		return metrics.Bridge{Connected: st.Connected && !st.Stopped, LastEvent: st.LastEvent, LastReconcile: st.LastReconcile,
			DocsSynced: st.DocsSynced, Sent: st.Sent, Deleted: st.Deleted}
	}))
	if addr := s.cfg.SiYuan.PluginListen; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("siyuan plugin endpoint %s: %w", addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/siyuan/events", src.PluginHandler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.PluginAddr = ln.Addr().String()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			go func() { <-ctx.Done(); _ = srv.Close() }()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error().Err(err).Msg("siyuan plugin endpoint failed")
			}
		}()
		log.Info().Str("addr", s.PluginAddr).Msg("siyuan plugin endpoint listening")
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		err := src.Run(ctx)
		// The last state (a refused token, say) is written before anyone
		// hears of the failure and stops the system.
		s.putStat(ctx, SiYuanStatusKey, reported(src))
		if err != nil {
			s.siyuanErr <- err
		}
	}()
	go func() {
		defer s.wg.Done()
		s.publishStat(ctx, SiYuanStatusKey, time.Second, func() any { return reported(src) })
	}()
	return nil
}

// reported is the bridge's state stamped with the time it is written.
func reported(src *siyuan.Source) siyuan.Status {
	st := src.Status()
	st.ReportedAt = time.Now()
	return st
}

// SiYuanFailed delivers the error that stopped the bridge (a refused token).
func (s *System) SiYuanFailed() <-chan error { return s.siyuanErr }

// SiYuanStatus reads the bridge's state a system last wrote (nil when no
// bridge ran); it stays after the bridge stopped. A state not rewritten for
// 5 s (the bridge writes it every second) is from a process that is gone:
// it reads as stopped.
func SiYuanStatus(ctx context.Context, b *bus.Bus) (*siyuan.Status, error) {
	var st siyuan.Status
	if ok, err := readStat(ctx, b, SiYuanStatusKey, &st); !ok {
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
