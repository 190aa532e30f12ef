package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/pipeline"
)

func cmdUp(ctx context.Context, args []string) error {
	fs := newFlags("up")
	var c common
	c.register(fs, "info")
	listen := fs.String("listen", "127.0.0.1:4222", "address of the embedded NATS server (port -1 picks a free one)")
	workers := fs.Int("workers", 1, "workers per stage (the index stage always has one writer)")
	analyzer := fs.String("analyzer", "", "text analysis of the full-text index: plain, stem or full (default: the index's own, full for a new one); a change rebuilds the index")
	var n neural
	n.register(fs)
	var af answerFlags
	af.register(fs)
	var br bridge
	br.register(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	log := c.logger()
	if url, ok := pipeline.Running(c.data); ok && c.nats == "" {
		return fmt.Errorf("a system is already running on %s (NATS %s)", c.data, url)
	}
	cfg := pipeline.Config{DataDir: c.data, NATSURL: c.nats, Listen: *listen, Workers: *workers,
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
	sys, err := pipeline.Start(ctx, cfg)
	if errors.Is(err, bus.ErrPortTaken) {
		return fmt.Errorf("%w\nchoose another address for the embedded NATS server with --listen 127.0.0.1:PORT (--listen 127.0.0.1:-1 picks a free port)", err)
	}
	if err != nil {
		return err
	}
	for _, note := range sys.ModelNotes {
		fmt.Fprintf(os.Stderr, "note: %s\n", note)
	}
	log.Info().Str("data", c.data).Str("nats", sys.Bus.URL()).Strs("stages", pipeline.StageNames()).Msg("exocortex is up")
	fmt.Fprintf(os.Stderr, "exocortex is up: data %s, NATS %s (Ctrl-C stops)\n", c.data, sys.Bus.URL())
	select {
	case <-ctx.Done():
	case err := <-sys.SiYuanFailed():
		// A refused token: retrying cannot help, and the bridge is up's only
		// live source, so up stops rather than run on with nothing to follow.
		log.Error().Err(err).Msg("the SiYuan bridge stopped; exocortex stops")
		_ = sys.Stop()
		return fmt.Errorf("siyuan bridge: %w", err)
	}
	log.Info().Msg("shutting down: draining in-flight work")
	return sys.Stop()
}

func cmdWorker(ctx context.Context, args []string) error {
	fs := newFlags("worker")
	var c common
	c.register(fs, "info")
	stage := fs.String("stage", "", "stage to run: "+strings.Join(pipeline.StageNames(), ", ")+", or siyuan (the SiYuan bridge)")
	workers := fs.Int("workers", 1, "workers in this stage's pool")
	analyzer := fs.String("analyzer", "", "index stage: text analysis plain, stem or full (default: the index's own)")
	var n neural
	n.register(fs)
	var af answerFlags
	af.register(fs)
	var br bridge
	br.register(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *stage == "" {
		return fmt.Errorf("--stage is required (one of %s)", strings.Join(pipeline.StageNames(), ", "))
	}
	if c.nats == "" {
		url, ok := pipeline.Running(c.data)
		if !ok {
			return fmt.Errorf("no NATS server: give --nats URL, or start 'exocortex up' on %s", c.data)
		}
		c.nats = url
	}
	log := c.logger()
	cfg := pipeline.Config{DataDir: c.data, NATSURL: c.nats, Stages: []string{*stage}, Workers: *workers,
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
	sys, err := pipeline.Start(ctx, cfg)
	if err != nil {
		return err
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
