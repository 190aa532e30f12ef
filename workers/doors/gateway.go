// Package doors declares the system's doors as roles (workers/registry):
// the HTTP gateway, which serves people and programs (the web page, REST,
// the OpenAI-compatible endpoint, MCP, metrics) and reaches the system only
// through the client package and the bus. up runs it when --http is not
// off; worker --stage gateway runs it alone, on a machine that may have no
// data directory.
//
// It may import workers/stage and the bus, not the gateway: the gateway
// imports the client, which imports the system, which imports the
// registry, which imports this package. The gateway itself is built by the
// command line (cmd/exocortex/gateway.go: its flags, its mounts, the
// status document), which puts a Gateway in the system's configuration.
package doors

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/workers/stage"
)

// GatewayName is the HTTP gateway's role: worker --stage gateway.
const GatewayName = "gateway"

// Gateway is the HTTP gateway's configuration, a *Gateway in the system's
// StageConfig: its address is checked and bound before the system starts
// (a missing token off loopback, a taken port fail before anything else),
// and New serves on it.
type Gateway struct {
	// Addr is where it serves, for the log.
	Addr string
	// New builds the gateway over the system's bus. Its Run serves until
	// ctx ends, then ends its event streams and connections: the system
	// closes the bus only after.
	New func(ctx context.Context, b *bus.Bus, log zerolog.Logger) (stage.Service, error)
}

// GatewayRole declares the HTTP gateway: a door, run when configured.
func GatewayRole() stage.Declaration {
	return stage.Declaration{
		Name: GatewayName,
		Kind: stage.KindDoor,
		Enabled: func(d *stage.Deps) bool {
			return stage.ConfigOf[*Gateway](d, nil) != nil
		},
		Serve: newGateway,
	}
}

func newGateway(ctx context.Context, d *stage.Deps) (stage.Service, error) {
	g := stage.ConfigOf[*Gateway](d, nil)
	if g == nil || g.New == nil {
		return nil, errors.New("the HTTP gateway has no address to serve on: give --http ADDR (it is off)")
	}
	return g.New(ctx, d.Bus, d.Log.With().Str("http", g.Addr).Logger())
}
