package pipeline

import (
	"context"

	"github.com/exocortex/exocortex/bus"
)

// Attach gives a command a bus for dataDir: the running system's (exocortex
// up on the same data directory), an external server when natsURL is set, or,
// when neither, a system started here (with every stage when withStages, so
// ingest and eval work on their own). The returned close function stops what
// Attach started. local reports whether the stages run in this process.
func Attach(ctx context.Context, cfg Config, withStages bool) (b *bus.Bus, local bool, closeFn func() error, err error) {
	if cfg.NATSURL == "" {
		if url, ok := Running(cfg.DataDir); ok {
			cfg.NATSURL = url
		}
	}
	if err := cfg.replicasFromEnv(); err != nil {
		return nil, false, nil, err
	}
	if cfg.NATSURL != "" {
		b, err := openBus(ctx, cfg, "exocortex-cli")
		if err != nil {
			return nil, false, nil, err
		}
		cat, err := sizeStorage(ctx, cfg, b, cfg.catalog())
		if err != nil {
			b.Close()
			return nil, false, nil, err
		}
		if err := bus.EnsureTopology(ctx, b.JS, cfg.topology(cat)); err != nil {
			if !bus.IsOutOfSpace(err) {
				b.Close()
				return nil, false, nil, err
			}
			// A full disk refuses even an unchanged stream's config; the
			// running system made the topology already, and a command
			// (status) should still say what is wrong.
			cfg.Log.Warn().Err(err).Msg("topology not checked: the store is out of space")
		}
		return b, false, func() error { b.Close(); return nil }, nil
	}
	cfg.NoStages = !withStages
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:-1"
	}
	sys, err := Start(ctx, cfg)
	if err != nil {
		return nil, false, nil, err
	}
	return sys.Bus, withStages, sys.Stop, nil
}
