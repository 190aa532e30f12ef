package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
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
	// Notice, when set, gets what system.OpenClient changed of the plan as
	// it happens (an index to bring up to date first); the CLI prints it.
	Notice func(string)
}

// Local answers queries in this process from a data directory, without a
// bus: the local reader system.OpenClient opens (system.Local) when nothing
// runs on the data directory.
type Local interface {
	// Search runs a query to its ranked contexts within timeout.
	Search(ctx context.Context, q *schemas.QuerySubmitted, timeout time.Duration) (*schemas.QueryReranked, error)
	// Ask answers a question, its tokens to onToken as they come; the
	// answer is returned as soon as it is final, its follow-up questions
	// come after it to onFollowUps (unless stop is called first). Call stop
	// when done with them.
	Ask(ctx context.Context, q *schemas.QuerySubmitted, timeout time.Duration, onToken func(*schemas.AnswerToken),
		onFollowUps func([]string)) (_ *schemas.AnswerDone, stop func(), _ error)
	// Close waits for follow-up questions still being generated and
	// closes the reader.
	Close() error
}

// Attachment is what system.OpenClient found on a data directory (or NATS
// URL) for NewAttached: who answers, and what to close.
type Attachment struct {
	// Local, when set, answers every query here (nothing runs on the data
	// directory); the Client then has no bus.
	Local Local
	// Running: a running system answers (not one started in this process);
	// Settings are its recorded settings (nil when it recorded none), Who
	// names it ("exocortex up on DIR").
	Running  bool
	Settings *schemas.SystemSettings
	Who      string
	// Close closes what was opened or started (nil: nothing).
	Close func() error
}

// Client searches, asks and researches on one system: over its bus, or,
// when system.OpenClient finds nothing running on the data directory, in
// this process from the data directory itself (a Local). Who answers a
// question:
//
//   - nothing runs: this process, from the data directory (Local);
//   - the stages were started in this process: their answer stage;
//   - a running system whose providers are the client's (or the client has
//     none): its answer stage;
//   - a running system with other providers than the client's: this process
//     with the client's providers, over the contexts the running system
//     retrieves (its answer stage is told to leave the query alone).
type Client struct {
	bus   *bus.Bus
	local Local
	opts  Options
	close func() error

	// running: a running system answers (not one started here); st are
	// its recorded settings (nil when it recorded none), who names it.
	running bool
	st      *schemas.SystemSettings
	who     string
}

// New is a Client over the bus of a running system.
func New(b *bus.Bus, opts Options) *Client {
	return NewAttached(b, opts, Attachment{})
}

// NewAttached is a Client over b (nil with a.Local) that answers as a
// says: system.OpenClient's, for a data directory.
func NewAttached(b *bus.Bus, opts Options, a Attachment) *Client {
	if opts.SearchTimeout <= 0 {
		opts.SearchTimeout = 60 * time.Second
	}
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = 2 * time.Minute
	}
	if opts.ResearchTimeout <= 0 {
		opts.ResearchTimeout = 20 * time.Minute
	}
	c := &Client{bus: b, local: a.Local, opts: opts, close: a.Close, running: a.Running, st: a.Settings, who: a.Who}
	if c.close == nil {
		c.close = func() error { return nil }
	}
	return c
}

// Close closes what was opened or started for it (Attachment.Close;
// nothing for New's).
func (c *Client) Close() error { return c.close() }

// Running is the running system that answers this client's queries: its
// recorded settings (nil when it recorded none) and its name ("exocortex up
// on DIR"); ok is false when they are answered in this process (read from
// the data directory, or by stages started in this process).
func (c *Client) Running() (st *schemas.SystemSettings, who string, ok bool) {
	return c.st, c.who, c.running
}

// AnswersHere says whether Ask answers in this process with the client's
// own providers over the contexts the running system retrieves, because
// they are not the running system's (or it did not say which it has).
func (c *Client) AnswersHere() bool {
	p := c.opts.Providers
	return c.running && p != nil && (c.st == nil || !slices.Equal(p.Summary(), c.st.Providers))
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
		ReasonClientProviders, strings.Join(c.opts.Providers.Summary(), ", "), c.opts.ProvidersFrom, c.who)}
}

// Cancel tells the answer stage that the query's client left, so that it
// stops answering it.
func (c *Client) Cancel(queryID, reason string) error {
	if c.bus == nil {
		return nil // answered here: ending its context ends it
	}
	return c.bus.PublishCore(&schemas.QueryCancel{QueryID: queryID, Reason: reason}, "")
}
