package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/mcpserver"
	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
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
	cfg := pipeline.Config{DataDir: c.data, NATSURL: c.nats, Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	if err := af.apply(&cfg); err != nil {
		return err
	}
	if err := pipeline.LoadCalibration(cfg.Calibration, c.data, &cfg.Answer, c.logger()); err != nil {
		return err
	}
	b, local, closeFn, err := pipeline.Attach(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeFn()
	log := c.logger()
	log.Info().Bool("stages_here", local).Str("data", c.data).Msg("mcp: serving on stdin/stdout")
	be := &cliBackend{bus: b, dbPath: pipeline.DBPath(c.data), timeout: *timeout, researchTimeout: *researchTimeout}
	if n.noModels {
		be.mode = schemas.ModeLexical
	}
	defer be.close()
	mcpserver.Version = versionString()
	if err := mcpserver.RunStdio(ctx, be); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// cliBackend is gateway.Backend for a command-line client of the bus:
// searches and questions go over NATS like `search` and `ask`, blocks are
// read from the data directory's index (read-only).
type cliBackend struct {
	bus                      *bus.Bus
	dbPath                   string
	timeout, researchTimeout time.Duration
	mode                     string // forced retrieval mode (--no-models: lexical)

	mu    sync.Mutex
	store *store.Store
}

func (c *cliBackend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	if c.mode != "" {
		req.Mode = c.mode
	}
	k := req.K
	if k <= 0 {
		k = 10
	}
	q := &schemas.QuerySubmitted{QueryID: newTraceID("mcp-search"), Question: req.Query, Lang: req.Lang,
		Options: schemas.QueryOptions{Mode: req.Mode, K: k, Lang: req.Lang, Expand: -1, NoAnswer: true}}
	q.TraceID = q.QueryID
	res, err := pipeline.Ask(ctx, c.bus, q, c.timeout)
	if err != nil {
		return nil, err
	}
	an, err := analysis.New(analysis.Full)
	if err != nil {
		return nil, err
	}
	aq := an.Query(req.Query)
	out := &gateway.SearchResult{Mode: res.Mode, Reasons: res.Reasons, TimingsMS: res.TimingsMS, Results: []gateway.SearchHit{}}
	for _, cx := range res.Contexts {
		out.Results = append(out.Results, gateway.SearchHit{Rank: cx.Rank, Score: cx.Score, ScoreKind: cx.Source, Title: cx.Title,
			SectionPath: cx.SectionPath, BlockID: cx.BlockID, BlockIDs: cx.BlockIDs, DocID: cx.DocID, ChunkID: cx.ChunkID, Lang: cx.Lang,
			Path: cx.Path, Link: answer.Link(cx.BlockID, cx.Path), Source: cx.Source, Lexical: cx.Lexical, Vector: cx.Vector,
			Snippet: an.Snippet(analysis.PlainText(cx.Text), aq, analysis.SnippetOptions{Tokens: 32, MarkStart: "[", MarkEnd: "]", Ellipsis: "…"})})
	}
	return out, nil
}

func (c *cliBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	if c.mode != "" {
		q.Options.Mode = c.mode
	}
	return pipeline.AskAnswer(ctx, c.bus, q, c.timeout, onToken)
}

func (c *cliBackend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	return pipeline.Research(ctx, c.bus, r, c.researchTimeout, onProgress)
}

func (c *cliBackend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	st, err := c.index()
	if err != nil {
		return nil, err
	}
	chunks, err := st.ChunksOfBlocks(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	cid, ok := chunks[id]
	if !ok {
		return nil, nil
	}
	hits, err := st.Passages(ctx, []string{cid})
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	h := hits[0]
	blk := &gateway.Block{ID: id, DocID: h.DocID, Title: h.Title, SectionPath: h.SectionPath, Text: h.Text, Link: answer.Link(id, h.Path)}
	text := []rune(h.Text)
	for _, sp := range h.BlockSpans {
		if sp.ID == id && sp.Start >= 0 && sp.End <= len(text) && sp.Start <= sp.End {
			blk.Text = string(text[sp.Start:sp.End])
		}
	}
	edges, err := st.Neighbors(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, e := range edges {
		blk.Neighbors = append(blk.Neighbors, gateway.Neighbor{ID: e.Dst, Kind: e.Kind})
	}
	return blk, nil
}

// index opens the data directory's index read-only on first use.
func (c *cliBackend) index() (*store.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil {
		return c.store, nil
	}
	if _, err := os.Stat(c.dbPath); err != nil {
		return nil, fmt.Errorf("reading blocks needs the index of the running system: no %s here (run exocortex mcp with its --data)", c.dbPath)
	}
	st, err := store.OpenReadOnly(c.dbPath)
	if err != nil {
		return nil, err
	}
	c.store = st
	return st, nil
}

func (c *cliBackend) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil {
		_ = c.store.Close()
	}
}
