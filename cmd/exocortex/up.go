package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
)

// upFlags are up's own flags (the roles' are roleFlags).
type upFlags struct {
	c           common
	listen      string
	tlsCert     string
	tlsKey      string
	workers     int
	replicas    *int
	analyzer    string
	stopTimeout time.Duration
	rf          roleFlags
}

func (u *upFlags) register(fs *flag.FlagSet) {
	u.c.register(fs, "info")
	fs.StringVar(&u.listen, "listen", "127.0.0.1:4222", "address of the embedded NATS server (port -1 picks a free one); beyond loopback it needs --tls-cert and --tls-key")
	fs.StringVar(&u.tlsCert, "tls-cert", os.Getenv(bus.EnvNATSTLSCert), "certificate (PEM) of the embedded NATS server, which then speaks TLS only (env "+bus.EnvNATSTLSCert+")")
	fs.StringVar(&u.tlsKey, "tls-key", os.Getenv(bus.EnvNATSTLSKey), "private key (PEM) of --tls-cert (env "+bus.EnvNATSTLSKey+")")
	fs.IntVar(&u.workers, "workers", 1, "the least number of workers per stage (retrieve and answer run 32, rerank and embed one per CPU; the index stage always has one writer)")
	u.replicas = registerReplicas(fs)
	fs.StringVar(&u.analyzer, "analyzer", "", "text analysis of the full-text index: plain, stem or full (default: the index's own, full for a new one); a change rebuilds the index")
	fs.DurationVar(&u.stopTimeout, "stop-timeout", defaultStopTimeout, "on SIGTERM or Ctrl-C, how long to let in-flight work finish before exiting anyway (status 1, naming what was stuck)")
	u.rf.register(fs, true)
}

// config is the system's configuration from the flags, with the roles'
// (the doors' addresses checked and bound first).
func (u *upFlags) config(log zerolog.Logger) (system.Config, error) {
	c := &u.c
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Listen: u.listen, Workers: u.workers, Replicas: *u.replicas,
		Analyzer: analysis.Mode(u.analyzer), Log: log}
	cfg.TLS.Cert, cfg.TLS.Key = u.tlsCert, u.tlsKey
	if err := u.rf.apply(&cfg); err != nil {
		u.rf.release()
		return cfg, err
	}
	if (u.tlsCert == "") != (u.tlsKey == "") {
		u.rf.release()
		return cfg, &usageError{cmd: "up", msg: "give both --tls-cert and --tls-key (or neither)"}
	}
	return cfg, nil
}

func cmdUp(ctx context.Context, args []string) error {
	fs := newFlags("up")
	var u upFlags
	u.register(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if u.stopTimeout <= 0 {
		return fmt.Errorf("--stop-timeout %s: give a positive duration", u.stopTimeout)
	}
	log := u.c.logger()
	if err := notRunningYet(ctx, u.c); err != nil {
		return err
	}
	cfg, err := u.config(log)
	if err != nil {
		return err
	}
	sys, err := startUp(ctx, cfg, &u.rf)
	if err != nil {
		return err
	}
	log.Info().Str("data", u.c.data).Str("nats", sys.Bus.URL()).Str("nats_creds", bus.NKeyFile(u.c.data)).Strs("stages", system.StageNames()).Msg("exocortex is up")
	fmt.Fprintf(os.Stderr, "exocortex is up: data %s, NATS %s (Ctrl-C stops)\n", u.c.data, sys.Bus.URL())
	for _, line := range sys.Announcements() {
		fmt.Fprintln(os.Stderr, line)
	}
	select {
	case <-ctx.Done():
	case err := <-sys.Failed():
		// A role that cannot go on (the SiYuan bridge's refused token:
		// retrying cannot help, and a source may be up's only live one;
		// the HTTP gateway's server failing): up stops rather than run on
		// without it.
		log.Error().Err(err).Msg("a role stopped; exocortex stops")
		return errors.Join(err, stopWithin(sys, u.stopTimeout, log))
	}
	log.Info().Dur("stop_timeout", u.stopTimeout).Msg("shutting down: draining in-flight work")
	return stopWithin(sys, u.stopTimeout, log)
}

// notRunningYet refuses to start a second system on the data directory. A
// command's own short-lived server (status while nothing ran) is waited
// out; a running system is not.
func notRunningYet(ctx context.Context, c common) error {
	if c.nats != "" {
		return nil
	}
	url, err := system.AlreadyRunning(ctx, c.data)
	if err != nil {
		return err
	}
	if url != "" {
		return fmt.Errorf("a system is already running on %s (NATS %s)", c.data, url)
	}
	return nil
}

// startUp starts the system with every role configured, and says what to
// do when the embedded server's port is taken.
func startUp(ctx context.Context, cfg system.Config, rf *roleFlags) (*system.System, error) {
	sys, err := system.Start(ctx, cfg)
	err = rf.sf.explain(err)
	if err != nil {
		rf.release()
	}
	if errors.Is(err, bus.ErrPortTaken) {
		return nil, fmt.Errorf("%w\nchoose another address for the embedded NATS server with --listen 127.0.0.1:PORT (--listen 127.0.0.1:-1 picks a free port)", err)
	}
	if err != nil {
		return nil, err
	}
	for _, note := range sys.ModelNotes {
		fmt.Fprintf(os.Stderr, "note: %s\n", note)
	}
	return sys, nil
}

// defaultStopTimeout is how long up lets its work finish after SIGTERM.
const defaultStopTimeout = 15 * time.Second

// stopWithin stops the system (its doors end their streams before the bus
// closes), and gives up after d, or at a second SIGTERM or Ctrl-C, with an
// error naming what it was still waiting for: a stuck JetStream (drains
// that never end, publishes waiting for acks) must not keep up from
// exiting.
func stopWithin(sys *system.System, d time.Duration, log zerolog.Logger) error {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	stopped := make(chan error, 1)
	go func() { stopped <- sys.Stop() }()
	select {
	case err := <-stopped:
		return err
	case <-time.After(d):
		err := fmt.Errorf("did not stop within %s (--stop-timeout): still waiting for %s; exiting anyway", d, sys.StopStep())
		log.Error().Err(err).Msg("shutdown timed out")
		return err
	case sig := <-again:
		err := fmt.Errorf("stopped at once by a second %s: it was still waiting for %s", sig, sys.StopStep())
		log.Error().Err(err).Msg("shutdown cut short")
		return err
	}
}

func cmdWorker(ctx context.Context, args []string) error {
	fs := newFlags("worker")
	var c common
	c.register(fs, "info")
	roles := strings.Join(system.RoleNames(), ", ")
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
	log := c.logger()
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Stages: []string{*stage}, Workers: *workers, Replicas: *replicas,
		Analyzer: analysis.Mode(*analyzer), Log: log}
	if err := rf.apply(&cfg); err != nil {
		rf.release()
		return err
	}
	sys, err := system.Start(ctx, cfg)
	if err != nil {
		rf.release()
		return rf.sf.explain(err)
	}
	log.Info().Str("stage", *stage).Str("nats", c.nats).Msg("worker started")
	for _, line := range sys.Announcements() {
		fmt.Fprintf(os.Stderr, "%s, NATS %s (Ctrl-C stops)\n", line, c.nats)
	}
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
// (a source or a door configured here runs under up, or alone under
// worker).
func (r *roleFlags) apply(cfg *system.Config) error {
	// The doors first: their addresses are checked and bound before
	// anything else.
	models := r.n.models
	err := r.hf.apply(cfg, func(ctx context.Context, b *bus.Bus) (any, error) {
		return collectStatus(ctx, b, cfg.DataDir, models, true, true)
	})
	if err != nil {
		return err
	}
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

// release lets go of what apply took (the doors' bound addresses) when the
// system does not start.
func (r *roleFlags) release() { r.hf.release() }
