package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/mcpserver"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
)

// cmdMCP serves the knowledge base to an AI assistant over MCP on stdin
// and stdout: against the system running on --data (or --nats), else with
// the stages started here over --data. Logs go to stderr only: stdout is
// the protocol's.
func cmdMCP(ctx context.Context, args []string) error {
	fs := newFlags("mcp")
	var c common
	c.register(fs, "warn")
	var n neural
	n.register(fs)
	var af answerFlags
	af.register(fs)
	timeout := fs.Duration("timeout", 3*time.Minute, "how long a search or an answer may take")
	researchTimeout := fs.Duration("research-timeout", 30*time.Minute, "how long a research may take")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if err := c.requireData(); err != nil {
		return err
	}
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	if err := af.apply(&cfg); err != nil {
		return err
	}
	if err := system.LoadCalibration(cfg.Calibration, c.data, &cfg.Answer, c.logger()); err != nil {
		return err
	}
	b, local, closeFn, err := system.Attach(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeFn()
	log := c.logger()
	log.Info().Bool("stages_here", local).Str("data", c.data).Msg("mcp: serving on stdin/stdout")
	bb := gateway.NewBusBackend(b, gateway.BusOptions{SearchTimeout: *timeout, AskTimeout: *timeout,
		ResearchTimeout: *researchTimeout, Log: log, SearchMarks: gateway.CLIMarks})
	defer func() { _ = bb.Close() }()
	var be gateway.Backend = bb
	if n.noModels {
		be = lexicalOnly{bb}
	}
	if err := mcpserver.RunStdio(ctx, be); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// lexicalOnly keeps searches and questions lexical (--no-models), whatever
// the running system could do.
type lexicalOnly struct{ *gateway.BusBackend }

func (l lexicalOnly) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	req.Mode = schemas.ModeLexical
	return l.BusBackend.Search(ctx, req)
}

func (l lexicalOnly) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	q.Options.Mode = schemas.ModeLexical
	return l.BusBackend.Ask(ctx, q, onToken)
}
