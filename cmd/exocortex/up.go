package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/pipeline"
)

func cmdUp(ctx context.Context, args []string) error {
	fs := newFlags("up")
	var c common
	c.register(fs, "info")
	listen := fs.String("listen", "127.0.0.1:4222", "address of the embedded NATS server (port -1 picks a free one); beyond loopback it needs --tls-cert and --tls-key")
	tlsCert := fs.String("tls-cert", os.Getenv(bus.EnvNATSTLSCert), "certificate (PEM) of the embedded NATS server, which then speaks TLS only (env "+bus.EnvNATSTLSCert+")")
	tlsKey := fs.String("tls-key", os.Getenv(bus.EnvNATSTLSKey), "private key (PEM) of --tls-cert (env "+bus.EnvNATSTLSKey+")")
	workers := fs.Int("workers", 1, "workers per stage (the index stage always has one writer)")
	replicas := registerReplicas(fs)
	analyzer := fs.String("analyzer", "", "text analysis of the full-text index: plain, stem or full (default: the index's own, full for a new one); a change rebuilds the index")
	var n neural
	n.register(fs)
	var af answerFlags
	af.register(fs)
	var br bridge
	br.register(fs)
	var hf httpFlags
	hf.register(fs)
	var sf storageFlags
	sf.register(fs, true)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	log := c.logger()
	if url, ok := pipeline.Running(c.data); ok && c.nats == "" {
		return fmt.Errorf("a system is already running on %s (NATS %s)", c.data, url)
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
	cfg := pipeline.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Listen: *listen, Workers: *workers, Replicas: *replicas,
		Analyzer: analysis.Mode(*analyzer), Log: log}
	cfg.TLS.Cert, cfg.TLS.Key = *tlsCert, *tlsKey
	if err := n.apply(&cfg); err != nil {
		return err
	}
	if err := af.apply(&cfg); err != nil {
		return err
	}
	if err := br.apply(&cfg); err != nil {
		return err
	}
	if err := sf.apply(&cfg); err != nil {
		return err
	}
	sys, err := pipeline.Start(ctx, cfg)
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
	log.Info().Str("data", c.data).Str("nats", sys.Bus.URL()).Str("nats_creds", pipeline.NKeyFile(c.data)).Str("http", httpAddr).Strs("stages", pipeline.StageNames()).Msg("exocortex is up")
	fmt.Fprintf(os.Stderr, "exocortex is up: data %s, NATS %s%s (Ctrl-C stops)\n", c.data, sys.Bus.URL(), httpNote)
	var gwDone <-chan error
	if gw != nil {
		gwDone = gw.done
	}
	select {
	case <-ctx.Done():
	case err := <-sys.SiYuanFailed():
		// A refused token: retrying cannot help, and the bridge is up's only
		// live source, so up stops rather than run on with nothing to follow.
		log.Error().Err(err).Msg("the SiYuan bridge stopped; exocortex stops")
		_ = gw.stop()
		_ = sys.Stop()
		return fmt.Errorf("siyuan bridge: %w", err)
	case err := <-gwDone:
		log.Error().Err(err).Msg("the HTTP gateway stopped; exocortex stops")
		_ = sys.Stop()
		return err
	}
	log.Info().Msg("shutting down: draining in-flight work")
	// The gateway first: its open streams end before the bus closes.
	return errors.Join(gw.stop(), sys.Stop())
}

func cmdWorker(ctx context.Context, args []string) error {
	fs := newFlags("worker")
	var c common
	c.register(fs, "info")
	stage := fs.String("stage", "", "stage to run: "+strings.Join(pipeline.StageNames(), ", ")+", siyuan (the SiYuan bridge) or gateway (the HTTP gateway, --http)")
	workers := fs.Int("workers", 1, "workers in this stage's pool")
	replicas := registerReplicas(fs)
	analyzer := fs.String("analyzer", "", "index stage: text analysis plain, stem or full (default: the index's own)")
	var n neural
	n.register(fs)
	var af answerFlags
	af.register(fs)
	var br bridge
	br.register(fs)
	var hf httpFlags
	hf.register(fs)
	var sf storageFlags
	sf.register(fs, false)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *stage == "" {
		return fmt.Errorf("--stage is required (one of %s, siyuan or gateway)", strings.Join(pipeline.StageNames(), ", "))
	}
	if c.nats == "" {
		url, ok := pipeline.Running(c.data)
		if !ok {
			return fmt.Errorf("no NATS server: give --nats URL, or start 'exocortex up' on %s", c.data)
		}
		c.nats = url
	}
	if *stage == gateway.StageName {
		return runGatewayWorker(ctx, c, hf, n.models)
	}
	log := c.logger()
	cfg := pipeline.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Stages: []string{*stage}, Workers: *workers, Replicas: *replicas,
		Analyzer: analysis.Mode(*analyzer), Log: log}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	if err := af.apply(&cfg); err != nil {
		return err
	}
	if err := br.apply(&cfg); err != nil {
		return err
	}
	if err := sf.apply(&cfg); err != nil {
		return err
	}
	sys, err := pipeline.Start(ctx, cfg)
	if err != nil {
		return sf.explain(err)
	}
	log.Info().Str("stage", *stage).Str("nats", c.nats).Msg("worker started")
	select {
	case <-ctx.Done():
	case err := <-sys.SiYuanFailed():
		_ = sys.Stop()
		return err // a refused token: retrying cannot help
	}
	return sys.Stop()
}
