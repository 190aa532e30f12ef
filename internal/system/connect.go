package system

import (
	"context"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/bus"
)

// dataLockWait is how long up (or any process starting an embedded server)
// waits for a command's short-lived one to let the data directory go, and
// how long a command waits for a starting up to serve.
const dataLockWait = 30 * time.Second

// runningOrLock finds the system running on dataDir, or takes the data
// directory's lock so that this process may start its own server there.
// While another process holds the lock without serving yet (up starting),
// it waits for that process to serve, rather than open the same store.
func runningOrLock(ctx context.Context, dataDir string) (string, *dirLock, error) {
	deadline := time.Now().Add(dataLockWait)
	for {
		if url, ok := Running(dataDir); ok {
			return url, nil, nil
		}
		l, err := tryLockDir(dataDir)
		if err != nil || l != nil {
			return "", l, err
		}
		if time.Now().After(deadline) {
			return "", nil, fmt.Errorf("%w: %s is held and no NATS server answers at %s after %s; is exocortex up stuck starting?", ErrDataLocked, LockFile(dataDir), bus.URLFile(dataDir), dataLockWait)
		}
		select {
		case <-ctx.Done():
			return "", nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Attach gives a command a bus for dataDir: the running system's (exocortex
// up on the same data directory), an external server when natsURL is set, or,
// when neither, a system started here (with every stage when withStages, so
// ingest and eval work on their own). The returned close function stops what
// Attach started. local reports whether the stages run in this process.
func Attach(ctx context.Context, cfg Config, withStages bool) (b *bus.Bus, local bool, closeFn func() error, err error) {
	if cfg.NATSURL == "" {
		url, lock, err := runningOrLock(ctx, cfg.DataDir)
		if err != nil {
			return nil, false, nil, err
		}
		cfg.NATSURL, cfg.lock = url, lock
	}
	if err := cfg.replicasFromEnv(); err != nil {
		return nil, false, nil, err
	}
	if cfg.NATSURL != "" {
		b, err := openBus(ctx, cfg, "exocortex-cli")
		if err != nil {
			return nil, false, nil, err
		}
		cat, err := sizeStorage(ctx, cfg, b, cfg.StageCatalog())
		if err != nil {
			b.Close()
			return nil, false, nil, err
		}
		// A client reads: the running system declared the topology, and
		// updating it at the moment up declares it races up. Only a
		// server nobody declared on yet (an external NATS before its
		// first worker) gets it from here.
		topo := cfg.topology(cat)
		present, perr := bus.TopologyPresent(ctx, b.JS, topo)
		if perr != nil {
			b.Close()
			return nil, false, nil, perr
		}
		if present {
			return b, false, func() error { b.Close(); return nil }, nil
		}
		if err := bus.EnsureTopology(ctx, b.JS, topo); err != nil {
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
		cfg.lock.release()
		return nil, false, nil, err
	}
	return sys.Bus, withStages, sys.Stop, nil
}
