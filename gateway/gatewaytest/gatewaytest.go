// Package gatewaytest is test support for the doors (the HTTP gateway, the
// MCP server, the OpenAI-compatible door): a whole pipeline embedded over a
// temp data directory with fake language models, and a gateway.Backend over
// it. Only tests import it; it may import anything of the application.
package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// Backend is gateway.Backend over a real embedded pipeline, for tests only
// (the gateway's bus backend is the real one): a search is a query with no
// answer, an ask streams kb.answer.tokens.<id>, a block is read from the
// store.
type Backend struct {
	Sys *system.System
	// AskTimeout bounds an answer (default 60 s).
	AskTimeout time.Duration
	// SearchMarks enclose a snippet's matches when the request names no
	// marks (default gateway.APIMarks, as the bus backend's).
	SearchMarks gateway.Marks
	n           atomic.Int64
}

// Search asks the pipeline for contexts only and builds the gateway's
// search result from them.
func (b *Backend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	n := b.n.Add(1)
	k := req.K
	if k <= 0 {
		k = 10
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("s%d-%d", n, time.Now().UnixNano()), Question: req.Query, Lang: req.Lang,
		Options: schemas.QueryOptions{Mode: req.Mode, K: k, Lang: req.Lang, Expand: -1, NoAnswer: true,
			IncludeReports: req.IncludeReports, Facets: req.Facets, Scope: req.Scope}}}
	res, err := client.New(b.Sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, q)
	if err != nil {
		return nil, err
	}
	marks := req.Marks
	if marks == (gateway.Marks{}) {
		marks = b.SearchMarks
	}
	if marks == (gateway.Marks{}) {
		marks = gateway.APIMarks
	}
	return gateway.BuildSearchResult(req.Query, res, marks)
}

// Ask answers q, streaming its tokens to onToken.
func (b *Backend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	timeout := b.AskTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	done, _, err := client.New(b.Sys.Bus, client.Options{AskTimeout: timeout}).Ask(ctx, q, client.AskOptions{OnToken: onToken})
	return done, err
}

// Research runs r within two minutes, streaming its progress.
func (b *Backend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	return client.New(b.Sys.Bus, client.Options{}).Research(ctx, r, client.ResearchOptions{OnProgress: onProgress, Timeout: 2 * time.Minute})
}

// Block reads an indexed block and its graph neighbours from the store
// (nil when there is none).
func (b *Backend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	st := b.Sys.Store
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
	out := &gateway.Block{ID: id, DocID: h.DocID, Title: h.Title, SectionPath: h.SectionPath, Text: h.Text, Link: answer.Link(id, h.Path)}
	for _, sp := range h.BlockSpans {
		if sp.ID == id {
			out.Text = string([]rune(h.Text)[sp.Start:sp.End])
		}
	}
	edges, err := st.Neighbors(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, e := range edges {
		out.Neighbors = append(out.Neighbors, gateway.Neighbor{ID: e.Dst, Kind: e.Kind})
	}
	return out, nil
}

// Providers are the fake language models: Fast answers, Strategic
// reformulates and suggests follow-ups.
type Providers struct{ Fast, Strategic *llmtest.Server }

// Start runs every stage over a temp data dir with the fake providers,
// ingests notes (file name -> Markdown) and waits until the pipeline is idle.
func Start(t testing.TB, notes map[string]string) (*Backend, Providers) {
	t.Helper()
	ctx := context.Background()
	pv := Providers{Fast: llmtest.New(t), Strategic: llmtest.New(t)}
	cfg := &llm.Config{Providers: []llm.Provider{
		{Name: "fast", BaseURL: pv.Fast.URL(), Models: map[string]string{llm.RoleFast: "f"}},
		{Name: "strategic", BaseURL: pv.Strategic.URL(), Models: map[string]string{llm.RoleStrategic: "s"}},
	}}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg,
		// A short deadline: a test whose provider never finishes ends soon.
		Answer:     answer.Config{Deadline: 5 * time.Second},
		LLMOptions: llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		Log:        zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	vault := t.TempDir()
	for name, text := range notes {
		if err := os.WriteFile(filepath.Join(vault, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	SyncPaths(t, sys.Bus, vault)
	WaitIdle(t, sys.Bus)
	return &Backend{Sys: sys}, pv
}

// SyncPaths reads the files and folders at paths as the files source does
// and publishes their documents on b.
func SyncPaths(t testing.TB, b *bus.Bus, paths ...string) {
	t.Helper()
	ctx := context.Background()
	kv, err := b.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := files.Sync(ctx, paths, kv, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := b.Publish(ctx, ev, "test-ingest")
		return err
	}, files.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
}

// WaitIdle waits (up to two minutes) until every stage has consumed all it
// was given.
func WaitIdle(t testing.TB, b *bus.Bus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := system.WaitIdle(ctx, b, system.StageSpecs(), 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
}

// AnswerIngests answers the gateway's ingest requests (kb.files.ingest) on
// b as the process that writes the index does, for a test whose bus has no
// system: the paths are read here.
func AnswerIngests(t testing.TB, b *bus.Bus) {
	t.Helper()
	kv, err := b.KV(context.Background(), stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := files.AnswerIngests(b, kv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// Recorder is a gateway.Backend that answers at once and keeps what each
// door handed it, for tests of what a door sends (the scope read from a
// question, the options): the last search request, question and research
// request. Its replies carry the query's own words and scope back.
type Recorder struct {
	mu       sync.Mutex
	search   *gateway.SearchRequest
	query    *schemas.QuerySubmitted
	research *schemas.ResearchRequested
}

// Search records req and finds nothing.
func (r *Recorder) Search(_ context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.search = &req
	return &gateway.SearchResult{Query: req.Query, Scope: req.Scope, Mode: schemas.ModeLexical, Results: []gateway.SearchHit{}}, nil
}

// Ask records q and answers search-only with nothing found.
func (r *Recorder) Ask(_ context.Context, q *schemas.QuerySubmitted, _ func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := *q
	r.query = &c
	return &schemas.AnswerDone{QueryID: q.QueryID, Question: q.Question, Mode: schemas.AnswerSearchOnly, Answer: "nothing found",
		Reasons: []string{"recorded"}}, nil
}

// Research records req and reports nothing.
func (r *Recorder) Research(_ context.Context, req *schemas.ResearchRequested, _ func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := *req
	r.research = &c
	return &schemas.ResearchReport{ResearchID: req.ResearchID, Question: req.Question, Title: "recorded", Mode: schemas.ResearchEvidenceOnly}, nil
}

// Block finds no block.
func (r *Recorder) Block(context.Context, string) (*gateway.Block, error) { return nil, nil }

// Searched is the last search request (nil: none).
func (r *Recorder) Searched() *gateway.SearchRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.search
}

// Asked is the last question (nil: none).
func (r *Recorder) Asked() *schemas.QuerySubmitted {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.query
}

// Researched is the last research request (nil: none).
func (r *Recorder) Researched() *schemas.ResearchRequested {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.research
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.search, r.query, r.research = nil, nil, nil
}
