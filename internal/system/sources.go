package system

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/source"
	"github.com/exocortex/exocortex/workers/stage"
)

// OpenSources opens the catalog's sources (workers/source) on bus b for
// check, repair and status: what they publish goes out with traceID, and
// config holds what the caller was given for them (a kernel to compare).
func OpenSources(ctx context.Context, cat stage.Catalog, b *bus.Bus, log zerolog.Logger, traceID string, config []any) ([]source.Source, error) {
	var out []source.Source
	for _, d := range cat.Sources() {
		deps := &stage.Deps{Stage: d, Config: config, Log: log, Bus: b, KV: b.KV,
			Publish: func(ctx context.Context, ev schemas.Event, _ string) error {
				_, err := b.Publish(ctx, ev, traceID)
				return err
			}}
		src, err := d.Source(ctx, deps)
		if err != nil {
			return nil, fmt.Errorf("open source %s: %w", d.Name, err)
		}
		out = append(out, src)
	}
	return out, nil
}

// SourceStates are the states the catalog's sources last reported (those
// that ran on bus b), for status.
func SourceStates(ctx context.Context, cat stage.Catalog, b *bus.Bus) []*source.Status {
	srcs, err := OpenSources(ctx, cat, b, zerolog.Nop(), "", nil)
	if err != nil {
		return nil
	}
	var out []*source.Status
	for _, src := range srcs {
		if st, _ := src.Status(ctx); st != nil {
			out = append(out, st)
		}
	}
	return out
}
