package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
)

func cmdUp(ctx context.Context, args []string) error {
	fs := newFlags("up")
	var c common
	c.register(fs, "info")
	listen := fs.String("listen", "127.0.0.1:4222", "address of the embedded NATS server (port -1 picks a free one); beyond loopback it needs --tls-cert and --tls-key")
	tlsCert := fs.String("tls-cert", os.Getenv(bus.EnvNATSTLSCert), "certificate (PEM) of the embedded NATS server, which then speaks TLS only (env "+bus.EnvNATSTLSCert+")")
	tlsKey := fs.String("tls-key", os.Getenv(bus.EnvNATSTLSKey), "private key (PEM) of --tls-cert (env "+bus.EnvNATSTLSKey+")")
	workers := fs.Int("workers", 1, "the least number of workers per stage (retrieve and answer run 32, rerank and embed one per CPU; the index stage always has one writer)")
	replicas := registerReplicas(fs)
	analyzer := fs.String("analyzer", "", "text analysis of the full-text index: plain, stem or full (default: the index's own, full for a new one); a change rebuilds the index")
	stopTimeout := fs.Duration("stop-timeout", defaultStopTimeout, "on SIGTERM or Ctrl-C, how long to let in-flight work finish before exiting anyway (status 1, naming what was stuck)")
	var rf roleFlags
	rf.register(fs, true)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	n, hf, sf := &rf.n, &rf.hf, &rf.sf
	if *stopTimeout <= 0 {
		return fmt.Errorf("--stop-timeout %s: give a positive duration", *stopTimeout)
	}
	log := c.logger()
	if c.nats == "" {
		// A command's own short-lived server (status while nothing ran)
		// is waited out; a running system is not.
		url, err := system.AlreadyRunning(ctx, c.data)
		if err != nil {
			return err
		}
		if url != "" {
			return fmt.Errorf("a system is already running on %s (NATS %s)", c.data, url)
		}
	}
	// The gateway's address is checked and bound first: a missing token or
	// a taken port fails at once, before the stages start.
	var gwCfg gateway.Config
	var gwLn net.Listener
	if !hf.off() {
		var err error
		if gwCfg, err = hf.config(log); err != nil {
			return err
		}
		if gwLn, err = hf.listen(); err != nil {
			return err
		}
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return &usageError{cmd: "up", msg: "give both --tls-cert and --tls-key (or neither)"}
	}
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Listen: *listen, Workers: *workers, Replicas: *replicas,
		Analyzer: analysis.Mode(*analyzer), Log: log}
	cfg.TLS.Cert, cfg.TLS.Key = *tlsCert, *tlsKey
	if err := rf.apply(&cfg); err != nil {
		return err
	}
	sys, err := system.Start(ctx, cfg)
	err = sf.explain(err)
	if err != nil && gwLn != nil {
		_ = gwLn.Close()
	}
	if errors.Is(err, bus.ErrPortTaken) {
		return fmt.Errorf("%w\nchoose another address for the embedded NATS server with --listen 127.0.0.1:PORT (--listen 127.0.0.1:-1 picks a free port)", err)
	}
	if err != nil {
		return err
	}
	for _, note := range sys.ModelNotes {
		fmt.Fprintf(os.Stderr, "note: %s\n", note)
	}
	var gw *runningGateway
	httpNote, httpAddr := ", HTTP off", "off"
	if gwLn != nil {
		if gw, err = startGateway(ctx, gwCfg, gwLn, sys.Bus, c.data, n.models, true); err != nil {
			_ = sys.Stop()
			return err
		}
		httpNote, httpAddr = ", HTTP http://"+gw.addr, gw.addr
	}
	log.Info().Str("data", c.data).Str("nats", sys.Bus.URL()).Str("nats_creds", bus.NKeyFile(c.data)).Str("http", httpAddr).Strs("stages", system.StageNames()).Msg("exocortex is up")
	fmt.Fprintf(os.Stderr, "exocortex is up: data %s, NATS %s%s (Ctrl-C stops)\n", c.data, sys.Bus.URL(), httpNote)
	for _, line := range sys.Announcements() {
		fmt.Fprintln(os.Stderr, line)
	}
	var gwDone <-chan error
	if gw != nil {
		gwDone = gw.done
	}
	select {
	case <-ctx.Done():
	case err := <-sys.Failed():
		// A role that cannot go on (the SiYuan bridge's refused token:
		// retrying cannot help, and a source may be up's only live one):
		// up stops rather than run on without it.
		log.Error().Err(err).Msg("a role stopped; exocortex stops")
		return errors.Join(err, stopWithin(gw, sys, *stopTimeout, log))
	case err := <-gwDone:
		log.Error().Err(err).Msg("the HTTP gateway stopped; exocortex stops")
		return errors.Join(err, stopWithin(nil, sys, *stopTimeout, log))
	}
	log.Info().Dur("stop_timeout", *stopTimeout).Msg("shutting down: draining in-flight work")
	// The gateway first: its open streams end before the bus closes.
	return stopWithin(gw, sys, *stopTimeout, log)
}

// defaultStopTimeout is how long up lets its work finish after SIGTERM.
const defaultStopTimeout = 15 * time.Second

// stopWithin stops the gateway (nil: none) and then the system, and gives
// up after d, or at a second SIGTERM or Ctrl-C, with an error naming what
// it was still waiting for: a stuck JetStream (drains that never end,
// publishes waiting for acks) must not keep up from exiting.
func stopWithin(gw *runningGateway, sys *system.System, d time.Duration, log zerolog.Logger) error {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	var gwStopped atomic.Bool
	stopped := make(chan error, 1)
	go func() {
		gerr := gw.stop()
		gwStopped.Store(true)
		stopped <- errors.Join(gerr, sys.Stop())
	}()
	stuck := func() string {
		if !gwStopped.Load() {
			return "the HTTP gateway to close its connections"
		}
		return sys.StopStep()
	}
	select {
	case err := <-stopped:
		return err
	case <-time.After(d):
		err := fmt.Errorf("did not stop within %s (--stop-timeout): still waiting for %s; exiting anyway", d, stuck())
		log.Error().Err(err).Msg("shutdown timed out")
		return err
	case sig := <-again:
		err := fmt.Errorf("stopped at once by a second %s: it was still waiting for %s", sig, stuck())
		log.Error().Err(err).Msg("shutdown cut short")
		return err
	}
}

func cmdWorker(ctx context.Context, args []string) error {
	fs := newFlags("worker")
	var c common
	c.register(fs, "info")
	roles := strings.Join(system.RoleNames(), ", ") + " or " + gateway.StageName
	stage := fs.String("stage", "", "role to run: "+roles+" (the stages, the sources, the HTTP gateway with --http)")
	fs.StringVar(stage, "role", "", "the same as --stage")
	workers := fs.Int("workers", 1, "workers in this stage's pool")
	replicas := registerReplicas(fs)
	analyzer := fs.String("analyzer", "", "index stage: text analysis plain, stem or full (default: the index's own)")
	var rf roleFlags
	rf.register(fs, false)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	n, hf, sf := &rf.n, &rf.hf, &rf.sf
	if *stage == "" {
		return fmt.Errorf("--stage is required (one of %s)", roles)
	}
	if c.nats == "" {
		url, ok := system.Running(c.data)
		if !ok {
			return fmt.Errorf("no NATS server: give --nats URL, or start 'exocortex up' on %s", c.data)
		}
		c.nats = url
	}
	if *stage == gateway.StageName {
		return runGatewayWorker(ctx, c, *hf, n.models)
	}
	log := c.logger()
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Stages: []string{*stage}, Workers: *workers, Replicas: *replicas,
		Analyzer: analysis.Mode(*analyzer), Log: log}
	if err := rf.apply(&cfg); err != nil {
		return err
	}
	sys, err := system.Start(ctx, cfg)
	if err != nil {
		return sf.explain(err)
	}
	log.Info().Str("stage", *stage).Str("nats", c.nats).Msg("worker started")
	select {
	case <-ctx.Done():
	case err := <-sys.Failed():
		_ = sys.Stop()
		return err // a refused token: retrying cannot help
	}
	return sys.Stop()
}

// roleFlags are the flags that configure the roles, shared by up and
// worker: the models, the answer stage, the sources (SiYuan bridge, watched
// folders), the gateway and the storage.
type roleFlags struct {
	n  neural
	af answerFlags
	br bridge
	wf watchFlags
	hf httpFlags
	sf storageFlags
	up bool
}

// register adds the flags to fs (up: with up's storage flags).
func (r *roleFlags) register(fs *flag.FlagSet, up bool) {
	r.up = up
	r.n.register(fs)
	r.af.register(fs)
	r.br.register(fs)
	r.wf.register(fs)
	r.hf.register(fs)
	r.sf.register(fs, up)
}

// apply sets cfg's configuration from the flags: the roles' own values
// (a source configured here runs under up, or alone under worker).
func (r *roleFlags) apply(cfg *system.Config) error {
	if err := r.n.apply(cfg); err != nil {
		return err
	}
	if err := r.af.apply(cfg); err != nil {
		return err
	}
	if err := r.br.apply(cfg); err != nil {
		return err
	}
	if err := r.wf.apply(cfg); err != nil {
		return err
	}
	return r.sf.apply(cfg)
}
