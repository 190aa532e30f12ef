package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/mcpserver"
	"github.com/exocortex/exocortex/gateway/openai"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/metrics"
)

// gatewayMounts are the doors the gateway serves besides its own routes
// (the web page at "/", /v1/chat/completions and /v1/models, /mcp,
// /metrics), built over the gateway's backend.
var gatewayMounts = func(be gateway.Backend, log zerolog.Logger) map[string]http.Handler {
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

// gatewayPublic are the web page's files, served without the token.
var gatewayPublic = []string{"/", "/index.html", "/static/"}

// httpFlags are the gateway's flags (up, worker --stage gateway).
type httpFlags struct {
	addr  string
	hosts hostsFlag
}

// hostsFlag is --http-host, repeatable and comma-separated; its default
// is EXOCORTEX_HTTP_HOSTS, which the first --http-host replaces.
type hostsFlag struct {
	names []string
	given bool
}

func (f *hostsFlag) String() string { return strings.Join(f.names, ",") }

func (f *hostsFlag) Set(v string) error {
	if !f.given {
		f.names, f.given = nil, true
	}
	f.names = append(f.names, splitList(v)...)
	return nil
}

func (h *httpFlags) register(fs *flag.FlagSet) {
	def := os.Getenv(gateway.EnvAddr)
	if def == "" {
		def = gateway.DefaultAddr
	}
	fs.StringVar(&h.addr, "http", def, "address of the HTTP gateway (env "+gateway.EnvAddr+"; off: none); beyond loopback it needs "+gateway.EnvToken)
	h.hosts.names = splitList(os.Getenv(gateway.EnvHosts))
	fs.Var(&h.hosts, "http-host", "a host name the HTTP gateway answers to besides localhost and its address, such as notes.example.org behind a proxy "+
		"(repeatable or comma-separated; env "+gateway.EnvHosts+"; *: any); other Host headers get 403")
}

func (h *httpFlags) off() bool { return strings.EqualFold(h.addr, "off") || h.addr == "" }

// config is the gateway's configuration from the flags and the environment
// (EXOCORTEX_HTTP_TOKEN, EXOCORTEX_HTTP_CORS: comma-separated origins,
// EXOCORTEX_HTTP_HOSTS or --http-host: host names).
func (h *httpFlags) config(log zerolog.Logger) (gateway.Config, error) {
	cfg := gateway.Config{Addr: h.addr, Token: os.Getenv(gateway.EnvToken), Hosts: h.hosts.names,
		CORSOrigins: splitList(os.Getenv(gateway.EnvCORS)), Log: log}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("--http %s: %w", h.addr, err)
	}
	return cfg, nil
}

// listen binds the gateway's address early, so a taken port fails at once.
func (h *httpFlags) listen() (net.Listener, error) {
	ln, err := gateway.Listen(h.addr)
	if errors.Is(err, gateway.ErrPortTaken) {
		return nil, fmt.Errorf("%w\nchoose another address for the HTTP gateway with --http 127.0.0.1:PORT (or --http off)", err)
	}
	return ln, err
}

// runningGateway is a gateway serving in the background.
type runningGateway struct {
	addr    string
	cancel  context.CancelFunc
	done    chan error
	backend *gateway.BusBackend
}

// startGateway serves the gateway on ln over b (the system's bus; the
// index is read from dataDir).
// local says the stages run in this process (up): the index is then here.
func startGateway(ctx context.Context, cfg gateway.Config, ln net.Listener, b *bus.Bus, dataDir, modelsFlag string, local bool) (*runningGateway, error) {
	be := gateway.NewBusBackend(b, gateway.BusOptions{DataDir: dataDir})
	cfg.Listener = ln
	cfg.Mounts, cfg.Public = gatewayMounts(be, cfg.Log), gatewayPublic
	storeReady := be.StoreReady
	if _, err := os.Stat(system.DBPath(dataDir)); err != nil && !local {
		// A gateway on a machine without the index: /v1/blocks answers
		// 503, and readiness does not wait for an index that is elsewhere.
		cfg.Log.Warn().Str("index", system.DBPath(dataDir)).Msg("no index here: GET /v1/blocks/{id} is unavailable (run the gateway where the index stage writes, or give --data)")
		storeReady = nil
	}
	srv, err := gateway.New(cfg, be, gateway.Deps{
		Bus:        b,
		StoreReady: storeReady,
		Status: func(ctx context.Context) (any, error) {
			return collectStatus(ctx, b, dataDir, modelsFlag, true, true)
		},
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	g := &runningGateway{addr: srv.Addr(), cancel: cancel, done: make(chan error, 1), backend: be}
	go func() { g.done <- srv.Serve(ctx) }()
	return g, nil
}

// stop shuts the gateway down and returns its error.
func (g *runningGateway) stop() error {
	if g == nil {
		return nil
	}
	g.cancel()
	err := <-g.done
	_ = g.backend.Close()
	return err
}

// runGatewayWorker is `worker --stage gateway`: the gateway alone against
// a NATS server (the stages run elsewhere).
func runGatewayWorker(ctx context.Context, c common, h httpFlags, modelsFlag string) error {
	log := c.logger()
	if h.off() {
		return errors.New("worker --stage gateway: --http is off; give the address to serve on")
	}
	cfg, err := h.config(log)
	if err != nil {
		return err
	}
	ln, err := h.listen()
	if err != nil {
		return err
	}
	sys, err := system.Start(ctx, system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), NoStages: true, Log: log})
	if err != nil {
		_ = ln.Close()
		return err
	}
	g, err := startGateway(ctx, cfg, ln, sys.Bus, c.data, modelsFlag, false)
	if err != nil {
		_ = sys.Stop()
		return err
	}
	log.Info().Str("stage", gateway.StageName).Str("http", g.addr).Str("nats", c.nats).Msg("worker started")
	fmt.Fprintf(os.Stderr, "exocortex gateway: http://%s, NATS %s (Ctrl-C stops)\n", g.addr, c.nats)
	select {
	case <-ctx.Done():
		return errors.Join(g.stop(), sys.Stop())
	case err := <-g.done:
		_ = g.backend.Close()
		return errors.Join(err, sys.Stop())
	}
}
