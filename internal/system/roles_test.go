package system_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/registry"
	"github.com/exocortex/exocortex/workers/stage"
)

// tickerConfig configures the ticker role; up runs it when present.
type tickerConfig struct{ fail bool }

// ticker is a service role declared here, as a new source or door is in
// its own package: it counts its ticks, reports them to status, and fails
// when told to.
type ticker struct{ ticks atomic.Int64 }

type tickerReport struct {
	Ticks int64 `json:"ticks"`
}

func tickerRole() stage.Declaration {
	return stage.Declaration{
		Name: "ticker",
		Kind: stage.KindSource,
		Enabled: func(d *stage.Deps) bool {
			return stage.ConfigOf[*tickerConfig](d, nil) != nil
		},
		Serve: func(ctx context.Context, d *stage.Deps) (stage.Service, error) {
			cfg := stage.ConfigOf[*tickerConfig](d, nil)
			if cfg == nil {
				return nil, errors.New("ticker: no configuration")
			}
			return &tickerService{fail: cfg.fail}, nil
		},
	}
}

type tickerService struct {
	ticker
	fail bool
}

func (s *tickerService) Run(ctx context.Context) error {
	for {
		s.ticks.Add(1)
		if s.fail {
			return errors.New("the ticker cannot go on")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *tickerService) StatusKey() string { return "ticker_status" }
func (s *tickerService) Report() any       { return tickerReport{Ticks: s.ticks.Load()} }
func (s *tickerService) Announce() string  { return "ticking" }

func TestANewServiceRoleIsOneDeclarationAndOneLine(t *testing.T) {
	ctx := context.Background()
	cat := registry.Catalog().With(nil, tickerRole()) // the one line

	// Not configured: up runs the stages without it.
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, Catalog: &cat, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if sys.Service("ticker") != nil {
		t.Error("the ticker runs without its configuration")
	}
	sys.Stop()

	// Configured: up runs it with the stages; its state reaches KB_STATS.
	sys, err = system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, Catalog: &cat, Log: testLog(t),
		StageConfig: []any{&tickerConfig{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	svc, ok := sys.Service("ticker").(*tickerService)
	if !ok {
		t.Fatalf("service ticker = %T, want the ticker running", sys.Service("ticker"))
	}
	if got := sys.Announcements(); len(got) != 1 || got[0] != "ticking" {
		t.Errorf("announcements = %q, want [ticking]", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rep tickerReport
		if ok, _ := stage.ReadReport(ctx, sys.Bus, "ticker_status", &rep); ok && rep.Ticks > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ticker's state never reached KB_STATS (ticks %d)", svc.ticks.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(strings.Join(cat.RoleNames(), ","), "chunk,") || cat.RoleNames()[len(cat.RoleNames())-1] != "ticker" {
		t.Errorf("roles = %v, want the stages, then the services with ticker last", cat.RoleNames())
	}
}

func TestAServiceRoleRunsAloneAsAWorkerAndItsFailureIsDelivered(t *testing.T) {
	ctx := context.Background()
	cat := registry.Catalog().With(nil, tickerRole())
	dir := t.TempDir()
	up, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", NoStages: true, Catalog: &cat, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Stop()
	// worker --stage ticker: only the ticker, against the running bus.
	w, err := system.Start(ctx, system.Config{DataDir: dir, NATSURL: up.Bus.URL(), Stages: []string{"ticker"}, Catalog: &cat,
		StageConfig: []any{&tickerConfig{fail: true}}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case err := <-w.Failed():
		if !strings.Contains(err.Error(), "ticker: the ticker cannot go on") {
			t.Errorf("failure = %v, want the ticker's", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ticker's failure was never delivered")
	}
}
