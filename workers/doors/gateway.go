// Package doors declares the system's doors as roles (workers/registry):
// the HTTP gateway, which serves people and programs (the web page, REST,
// the OpenAI-compatible endpoint, MCP, metrics) and reaches the system only
// through the client package and the bus. up runs it when --http is not
// off; worker --stage gateway runs it alone, on a machine that may have no
// data directory.
//
// It may import workers/stage, the bus and the gateway with its doors
// (gateway/...: they reach the system through the client, which imports
// no wiring), not internal/. The role builds the gateway from a *Gateway in
// the system's StageConfig, which the command line puts there: its flags
// (the address checked and bound first) and the status document.
package doors

import (
	"context"
	"errors"
	"net/http"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/mcpserver"
	"github.com/exocortex/exocortex/gateway/openai"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/workers/stage"
)

// GatewayName is the HTTP gateway's role: worker --stage gateway.
const GatewayName = "gateway"

// Gateway is the HTTP gateway's configuration, a *Gateway in the system's
// StageConfig: its address is checked and bound before the system starts
// (a missing token off loopback, a taken port fail before anything else),
// and the role serves on it.
type Gateway struct {
	// HTTP is the gateway's configuration from the flags: address, token,
	// hosts, CORS, and the Listener bound early. The role adds the mounts
	// (the web page, the OpenAI door, MCP, metrics) and its log.
	HTTP gateway.Config
	// Status returns GET /v1/status's document (what `exocortex status
	// --json` prints) over the gateway's bus; the command line builds it.
	// nil: the route answers that there is none.
	Status func(ctx context.Context, b *bus.Bus) (any, error)
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

// gatewayPublic are the web page's files, served without the token.
var gatewayPublic = []string{"/", "/index.html", "/static/"}

// gatewayMounts are the doors the gateway serves besides its own routes
// (the web page at "/", /v1/chat/completions and /v1/models, /mcp,
// /metrics), built over the gateway's backend.
func gatewayMounts(be gateway.Backend) map[string]http.Handler {
	oai := openai.Handler(be)
	return map[string]http.Handler{
		"/":                    web.Handler(),
		"/v1/chat/completions": oai,
		"/v1/models":           oai,
		"/v1/models/":          oai,
		"/mcp":                 mcpserver.HTTPHandler(be),
		"/metrics":             metrics.Handler(),
	}
}

// gatewayService is the gateway running as a role of the system.
type gatewayService struct {
	srv     *gateway.Server
	backend *gateway.BusBackend
}

// newGateway builds the gateway over the system's bus: its backend, its
// mounts, its operator routes (the index is asked over the bus: this
// machine needs no data directory).
func newGateway(ctx context.Context, d *stage.Deps) (stage.Service, error) {
	g := stage.ConfigOf[*Gateway](d, nil)
	if g == nil {
		return nil, errors.New("the HTTP gateway has no address to serve on: give --http ADDR (it is off)")
	}
	cfg := g.HTTP
	addr := cfg.Addr
	if cfg.Listener != nil {
		addr = cfg.Listener.Addr().String() // the port bound, when Addr asked for any
	}
	cfg.Log = d.Log.With().Str("http", addr).Logger()
	be := gateway.NewBusBackend(d.Bus, gateway.BusOptions{Log: cfg.Log})
	cfg.Mounts, cfg.Public = gatewayMounts(be), gatewayPublic
	deps := gateway.Deps{Bus: d.Bus, Stages: d.Stages, StoreReady: be.StoreReady}
	if g.Status != nil {
		deps.Status = func(ctx context.Context) (any, error) { return g.Status(ctx, d.Bus) }
	}
	srv, err := gateway.New(cfg, be, deps)
	if err != nil {
		_ = be.Close()
		if cfg.Listener != nil {
			_ = cfg.Listener.Close()
		}
		return nil, err
	}
	return &gatewayService{srv: srv, backend: be}, nil
}

// Run serves until ctx ends, then ends the event streams and the
// connections (before the system closes the bus).
func (g *gatewayService) Run(ctx context.Context) error {
	defer func() { _ = g.backend.Close() }()
	return g.srv.Serve(ctx)
}

// Announce says where the gateway serves.
func (g *gatewayService) Announce() string { return "HTTP gateway: http://" + g.srv.Addr() }
