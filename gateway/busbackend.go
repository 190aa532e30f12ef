package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/schemas"
)

// BusOptions tune the bus backend.
type BusOptions struct {
	// SearchTimeout bounds a search (default 60 s), AskTimeout a question
	// (default 2 min), ResearchTimeout a research (default 20 min).
	SearchTimeout   time.Duration
	AskTimeout      time.Duration
	ResearchTimeout time.Duration
	// Log receives what the backend cannot do (a cancellation not sent).
	Log zerolog.Logger
	// SearchMarks enclose a snippet's matches (default APIMarks).
	SearchMarks Marks
}

// BusBackend is the Backend over a running pipeline: questions and
// searches go onto kb.query.submitted, answers stream back from
// kb.answer.tokens.<id>, research goes onto kb.research.requested, and
// blocks and documents are asked of the processes that have the index open
// (kb.store.block.get, kb.store.document.get): the gateway needs no data
// directory.
type BusBackend struct {
	Bus    *bus.Bus
	opts   BusOptions
	client *client.Client
}

// NewBusBackend returns the Backend of the pipeline reachable through b.
// The timeouts' defaults are client.New's.
func NewBusBackend(b *bus.Bus, opts BusOptions) *BusBackend {
	c := client.New(b, client.Options{SearchTimeout: opts.SearchTimeout, AskTimeout: opts.AskTimeout,
		ResearchTimeout: opts.ResearchTimeout, Log: opts.Log})
	return &BusBackend{Bus: b, opts: opts, client: c}
}

// NewID is a fresh id with a prefix ("q-3f2a…"), usable as a subject token.
func NewID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// Search runs the query through the retrieve and rerank stages (the answer
// stage leaves it alone) and builds the hits as `exocortex search --json`.
func (bb *BusBackend) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	if req.K <= 0 {
		req.K = 10
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: NewID("q"), Question: req.Query, Lang: req.Lang,
		Options: schemas.QueryOptions{Mode: req.Mode, K: req.K, Lang: req.Lang, Expand: -1, NoAnswer: true,
			IncludeReports: req.IncludeReports, Facets: req.Facets, Scope: req.Scope}}}
	res, err := bb.client.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	marks := req.Marks
	if marks == (Marks{}) {
		marks = bb.opts.SearchMarks
	}
	if marks == (Marks{}) {
		marks = APIMarks
	}
	return BuildSearchResult(req.Query, res, marks)
}

// Ask publishes the question and streams its answer. When ctx ends the
// subscription to its tokens is dropped and Ask returns ctx's error; the
// answer stage finishes the answer on its own (it has no cancel subject),
// and nobody reads it.
func (bb *BusBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	if q.QueryID == "" {
		q.QueryID = NewID("q")
	}
	done, _, err := bb.client.Ask(ctx, q, client.AskOptions{OnToken: onToken, CancelIfLeft: true})
	return done, err
}

// AskFollowUps is Ask that also listens for the answer's follow-up
// questions, which come after it: wait for them with the returned function
// (ok false when none came within d), then call release.
func (bb *BusBackend) AskFollowUps(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (
	done *schemas.AnswerDone, wait func(ctx context.Context, d time.Duration) ([]string, bool), release func(), err error) {
	if q.QueryID == "" {
		q.QueryID = NewID("q")
	}
	done, fu, err := bb.client.Ask(ctx, q, client.AskOptions{OnToken: onToken, FollowUps: true, CancelIfLeft: true})
	if err != nil {
		return nil, nil, nil, err
	}
	return done, fu.Wait, fu.Close, nil
}

// Research publishes the request and streams its progress.
func (bb *BusBackend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	if r.ResearchID == "" {
		r.ResearchID = NewID("r")
	}
	return bb.client.Research(ctx, r, client.ResearchOptions{OnProgress: onProgress})
}

// ErrNoIndex is a Block or a Document that no process with the index
// answers (see indexError).
var ErrNoIndex = errors.New("the index is not reachable from here")

// indexError says what to run when nobody answers a request for the index:
// the index is read by the processes that have it open, over the bus.
func (bb *BusBackend) indexError(err error) error {
	if errors.Is(err, bus.ErrNoResponders) {
		return fmt.Errorf("%w: no index at NATS %s answers (%v): run exocortex up, or a worker with the index "+
			"(worker --stage index), on the machine with the data directory", ErrNoIndex, bb.Bus.URL(), err)
	}
	return err
}

// replyErr is a reply's error as the gateway's (its code kept).
func replyErr(e *schemas.ReplyError) error {
	if e == nil {
		return nil
	}
	return apiErr(e.Code, e.Message)
}

// Block asks the index (kb.store.block.get) for the block, its document,
// section path and neighbours.
func (bb *BusBackend) Block(ctx context.Context, id string) (*Block, error) {
	rep, err := bus.Request[*schemas.BlockReply](ctx, bb.Bus, &schemas.BlockGet{BlockID: id}, NewID("block"))
	if err != nil {
		return nil, bb.indexError(err)
	}
	if err := replyErr(rep.Error); err != nil || rep.Block == nil {
		return nil, err
	}
	b := rep.Block
	out := &Block{ID: b.BlockID, DocID: b.DocID, Title: b.Title, SectionPath: b.SectionPath, Type: b.Type, Text: b.Text,
		Link: answer.Link(b.BlockID, b.Path)}
	for _, n := range b.Neighbors {
		out.Neighbors = append(out.Neighbors, Neighbor{ID: n.BlockID, Kind: n.Kind, Text: n.Text})
	}
	return out, nil
}

// StoreReady reports whether a process with the index answers.
func (bb *BusBackend) StoreReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), storeReadyTimeout)
	defer cancel()
	rep, err := bus.Request[*schemas.BlockReply](ctx, bb.Bus, &schemas.BlockGet{}, NewID("ready"))
	if err != nil {
		return bb.indexError(err)
	}
	return replyErr(rep.Error)
}

// storeReadyTimeout bounds /readyz's question to the index.
const storeReadyTimeout = 5 * time.Second

// Close releases nothing: the index is read over the bus (kept for the
// callers that close a backend).
func (bb *BusBackend) Close() error { return nil }
