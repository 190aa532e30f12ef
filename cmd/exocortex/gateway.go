package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/doors"
)

// httpFlags are the gateway's flags (up, worker --stage gateway).
type httpFlags struct {
	addr  string
	hosts hostsFlag
	ln    net.Listener // bound by apply
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

// apply puts the gateway in cfg when it runs in this process (up: unless
// --http is off; worker: when it is the role asked for), with its address
// checked and bound first: a missing token off loopback or a taken port
// fails before anything else starts. status is GET /v1/status's document.
func (h *httpFlags) apply(cfg *system.Config, status func(ctx context.Context, b *bus.Bus) (any, error)) error {
	asked := slices.Contains(cfg.Stages, doors.GatewayName)
	if !asked && (len(cfg.Stages) > 0 || cfg.NoStages || h.off()) {
		return nil
	}
	if h.off() {
		return errors.New("worker --stage gateway: --http is off; give the address to serve on")
	}
	gwCfg, err := h.config(cfg.Log)
	if err != nil {
		return err
	}
	if gwCfg.Listener, err = h.listen(); err != nil {
		return err
	}
	h.ln = gwCfg.Listener
	cfg.StageConfig = append(cfg.StageConfig, &doors.Gateway{HTTP: gwCfg, Status: status})
	return nil
}

// release closes the address apply bound, when the system did not start.
func (h *httpFlags) release() {
	if h.ln != nil {
		_ = h.ln.Close()
	}
}
