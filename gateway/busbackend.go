package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// BusOptions tune the bus backend.
type BusOptions struct {
	// DataDir holds the SQLite index Block reads (read-only); empty means
	// Block answers that the index is not reachable from here.
	DataDir string
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
// blocks are read from the index (read-only) in the data directory.
type BusBackend struct {
	Bus    *bus.Bus
	opts   BusOptions
	client *client.Client

	mu    sync.Mutex
	store *store.Store
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
			IncludeReports: req.IncludeReports}}}
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

// ErrNoIndex is a Block asked of a backend that cannot reach the index.
var ErrNoIndex = errors.New("the index is not reachable from here")

// Block reads the block, its document, section path and neighbours from
// the index.
func (bb *BusBackend) Block(ctx context.Context, id string) (*Block, error) {
	st, err := bb.openStore()
	if err != nil {
		return nil, err
	}
	b, err := st.Block(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := &Block{ID: b.BlockID, DocID: b.DocID, Title: b.Title, SectionPath: b.SectionPath, Type: b.Type, Text: b.Text,
		Link: answer.Link(b.BlockID, b.Path)}
	edges, err := st.Neighbors(ctx, id)
	if err != nil {
		return nil, err
	}
	const maxNeighbors = 24
	for _, e := range edges {
		if len(out.Neighbors) == maxNeighbors {
			break
		}
		n := Neighbor{ID: e.Dst, Kind: e.Kind}
		if nb, err := st.Block(ctx, e.Dst); err == nil {
			n.Text = shorten(nb.Text, 300)
		}
		out.Neighbors = append(out.Neighbors, n)
	}
	return out, nil
}

// Ready reports whether the index can be read.
func (bb *BusBackend) StoreReady() error {
	_, err := bb.openStore()
	return err
}

func (bb *BusBackend) openStore() (*store.Store, error) {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if bb.store != nil {
		return bb.store, nil
	}
	if bb.opts.DataDir == "" {
		return nil, ErrNoIndex
	}
	path := client.IndexPath(bb.opts.DataDir)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: no index at %s", ErrNoIndex, path)
	}
	st, err := store.OpenReadOnly(path)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	bb.store = st
	return st, nil
}

// Close closes the index, if Block opened it.
func (bb *BusBackend) Close() error {
	bb.mu.Lock()
	defer bb.mu.Unlock()
	if bb.store == nil {
		return nil
	}
	err := bb.store.Close()
	bb.store = nil
	return err
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
