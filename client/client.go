package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// Options tune a Client.
type Options struct {
	// SearchTimeout bounds a search (default 60 s), AskTimeout a question
	// (default 2 min), ResearchTimeout a research (default 20 min).
	SearchTimeout   time.Duration
	AskTimeout      time.Duration
	ResearchTimeout time.Duration
	// Providers are the client's own language-model providers (nil: none),
	// ProvidersFrom where they came from ("--llm-config FILE"). When a
	// running system answers and its providers are not these, Ask answers
	// in this process with them over the contexts the running system
	// retrieves.
	Providers     *llm.Config
	ProvidersFrom string
	// Answer tunes an answer given in this process (its calibrated
	// thresholds: system.LoadCalibration).
	Answer answer.Config
	// Log receives what the client cannot do (a cancellation not sent).
	Log zerolog.Logger
	// Notice, when set, gets what Open changed of the plan as it happens
	// (an index to bring up to date first); the CLI prints it.
	Notice func(string)
}

// Client searches, asks and researches on one system: over its bus, or,
// when Open finds nothing running on the data directory, in this process
// from the data directory itself (system.Local). Who answers a question:
//
//   - nothing runs: this process, from the data directory (Local);
//   - Open started the stages here: their answer stage;
//   - a running system whose providers are the client's (or the client has
//     none): its answer stage;
//   - a running system with other providers than the client's: this process
//     with the client's providers, over the contexts the running system
//     retrieves (its answer stage is told to leave the query alone).
type Client struct {
	bus   *bus.Bus
	local *system.Local
	opts  Options
	close func() error

	// running: a running system answers (not one Open started here); st
	// are its recorded settings (nil when it recorded none), who names it.
	running bool
	st      *system.Settings
	who     string
}

// New is a Client over the bus of a running system.
func New(b *bus.Bus, opts Options) *Client {
	if opts.SearchTimeout <= 0 {
		opts.SearchTimeout = 60 * time.Second
	}
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = 2 * time.Minute
	}
	if opts.ResearchTimeout <= 0 {
		opts.ResearchTimeout = 20 * time.Minute
	}
	return &Client{bus: b, opts: opts, close: func() error { return nil }}
}

// Open is a Client for the system of cfg's data directory (or NATS URL):
// the data directory read in this process when nothing runs on it (and
// $EXOCORTEX_LOCAL_PIPELINE is not 1), else the running system's bus, else
// a system started here with every stage (system.Attach). lo says what the
// local reader is for (its retrieval mode; Answer for ask). Close it.
func Open(ctx context.Context, cfg system.Config, lo system.LocalOptions, opts Options) (*Client, error) {
	if standalone(cfg) {
		if _, err := os.Stat(system.DBPath(cfg.DataDir)); err != nil {
			if cfg.Vectors.Kind != vectors.KindQdrant {
				return nil, fmt.Errorf("no index at %s: run 'exocortex ingest PATH --data %s' first", system.DBPath(cfg.DataDir), cfg.DataDir)
			}
			// The notes are on Qdrant alone: their lexical vectors serve
			// the lexical search.
			cfg.NoIndexFile = true
		}
		l, err := system.OpenLocal(ctx, cfg, lo)
		switch {
		case errors.Is(err, store.ErrSchema):
			// The in-process pipeline's index stage brings the index up
			// to date: go on with it.
			opts.notice(fmt.Sprintf("%v: the in-process pipeline brings the index up to date first", err))
		case err != nil:
			return nil, err
		default:
			c := New(nil, opts)
			c.local, c.close = l, l.Close
			return c, nil
		}
	}
	b, here, closeFn, err := system.Attach(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	c := New(b, opts)
	c.close = closeFn
	if !here {
		c.running = true
		c.st, _ = system.RunningSettings(ctx, b)
		c.who = "the running system (NATS " + b.URL() + ")"
		if c.st != nil && cfg.NATSURL == "" {
			c.who = "exocortex up on " + c.st.DataDir
		}
	}
	return c, nil
}

func (o Options) notice(s string) {
	if o.Notice != nil {
		o.Notice(s)
	}
}

// standalone reports whether queries on cfg are answered in this process
// straight from the data directory (system.OpenLocal): no NATS server is
// named and no system runs on the data directory, unless
// $EXOCORTEX_LOCAL_PIPELINE=1 asks for the in-process pipeline instead.
func standalone(cfg system.Config) bool {
	if cfg.NATSURL != "" || os.Getenv(system.EnvLocalPipeline) == "1" {
		return false
	}
	_, running := system.Running(cfg.DataDir)
	return !running
}

// Close closes what Open opened or started (nothing for New's).
func (c *Client) Close() error { return c.close() }

// Running is the running system that answers this client's queries: its
// recorded settings (nil when it recorded none) and its name ("exocortex up
// on DIR"); ok is false when they are answered in this process (read from
// the data directory, or by stages Open started here).
func (c *Client) Running() (st *system.Settings, who string, ok bool) {
	return c.st, c.who, c.running
}

// AnswersHere says whether Ask answers in this process with the client's
// own providers over the contexts the running system retrieves, because
// they are not the running system's (or it did not say which it has).
func (c *Client) AnswersHere() bool {
	p := c.opts.Providers
	return c.running && p != nil && (c.st == nil || !slices.Equal(system.ProviderSummary(p), c.st.Providers))
}

// ReasonClientProviders marks the reason an answer carries when the
// client's own providers answered it (AnswersHere).
const ReasonClientProviders = "client_llm_providers"

// Notes say who answers when that is not the one asked: the client's
// providers in this process (AnswersHere). Ask's caller shows them and
// adds them to the answer's reasons.
func (c *Client) Notes() []string {
	if !c.AnswersHere() {
		return nil
	}
	return []string{fmt.Sprintf("%s: answered in this process with your language-model providers (%s, from %s) over the notes %s retrieved",
		ReasonClientProviders, strings.Join(system.ProviderSummary(c.opts.Providers), ", "), c.opts.ProvidersFrom, c.who)}
}

// Cancel tells the answer stage that the query's client left, so that it
// stops answering it.
func (c *Client) Cancel(queryID, reason string) error {
	if c.bus == nil {
		return nil // answered here: ending its context ends it
	}
	return c.bus.PublishCore(&schemas.QueryCancel{QueryID: queryID, Reason: reason}, "")
}

// IndexPath is where the SQLite index of a data directory lives, for a
// reader beside the system (the gateway reads blocks from it read-only).
func IndexPath(dataDir string) string { return system.DBPath(dataDir) }

// StageSpecs are the consumers of this build's stages, in pipeline order:
// what a readiness check or a wait for idle looks at.
func StageSpecs() []bus.StageSpec { return system.StageSpecs() }
