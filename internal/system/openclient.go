package system

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// OpenClient is a client.Client for the system of cfg's data directory (or
// NATS URL): the data directory read in this process when nothing runs on
// it (and $EXOCORTEX_LOCAL_PIPELINE is not 1), else the running system's
// bus, else a system started here with every stage (Attach). lo says what
// the local reader is for (its retrieval mode; Answer for ask). Close the
// client.
func OpenClient(ctx context.Context, cfg Config, lo LocalOptions, opts client.Options) (*client.Client, error) {
	if standalone(cfg) {
		if _, err := os.Stat(DBPath(cfg.DataDir)); err != nil {
			if cfg.Vectors.Kind != vectors.KindQdrant {
				return nil, fmt.Errorf("no index at %s: run 'exocortex ingest PATH --data %s' first", DBPath(cfg.DataDir), cfg.DataDir)
			}
			// The notes are on Qdrant alone: their lexical vectors serve
			// the lexical search.
			cfg.NoIndexFile = true
		}
		l, err := OpenLocal(ctx, cfg, lo)
		switch {
		case errors.Is(err, store.ErrSchema):
			// The in-process pipeline's index stage brings the index up
			// to date: go on with it.
			if opts.Notice != nil {
				opts.Notice(fmt.Sprintf("%v: the in-process pipeline brings the index up to date first", err))
			}
		case err != nil:
			return nil, err
		default:
			return client.NewAttached(nil, opts, client.Attachment{Local: l, Close: l.Close}), nil
		}
	}
	b, here, closeFn, err := Attach(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	a := client.Attachment{Close: closeFn}
	if !here {
		a.Running = true
		a.Settings, _ = RunningSettings(ctx, b)
		a.Who = "the running system (NATS " + b.URL() + ")"
		if a.Settings != nil && cfg.NATSURL == "" {
			a.Who = "exocortex up on " + a.Settings.DataDir
		}
	}
	return client.NewAttached(b, opts, a), nil
}

// standalone reports whether queries on cfg are answered in this process
// straight from the data directory (OpenLocal): no NATS server is named and
// no system runs on the data directory, unless $EXOCORTEX_LOCAL_PIPELINE=1
// asks for the in-process pipeline instead.
func standalone(cfg Config) bool {
	if cfg.NATSURL != "" || os.Getenv(EnvLocalPipeline) == "1" {
		return false
	}
	_, running := Running(cfg.DataDir)
	return !running
}

// The local reader answers a client's queries here.
var _ client.Local = (*Local)(nil)
