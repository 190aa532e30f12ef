package mcpserver_test

// pipelineBackend is gateway.Backend over a real embedded pipeline, for
// these tests only (the gateway's bus backend is the real one): a search is
// a query with no answer, an ask streams kb.answer.tokens.<id>, a block is
// read from the store.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

type pipelineBackend struct {
	sys *system.System
	n   int
	// askTimeout bounds an answer (default 60 s).
	askTimeout time.Duration
}

func (p *pipelineBackend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	p.n++
	k := req.K
	if k <= 0 {
		k = 10
	}
	q := &schemas.QuerySubmitted{QueryID: fmt.Sprintf("s%d-%d", p.n, time.Now().UnixNano()), Question: req.Query, Lang: req.Lang,
		Options: schemas.QueryOptions{Mode: req.Mode, K: k, Lang: req.Lang, Expand: -1, NoAnswer: true}}
	res, err := client.New(p.sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, q)
	if err != nil {
		return nil, err
	}
	an, err := analysis.New(analysis.Full)
	if err != nil {
		return nil, err
	}
	aq := an.Query(req.Query)
	marks := req.Marks
	if marks == (gateway.Marks{}) {
		marks = gateway.APIMarks // the bus backend's default
	}
	out := &gateway.SearchResult{Mode: res.Mode, Reasons: res.Reasons, TimingsMS: res.TimingsMS, Results: []gateway.SearchHit{}}
	for _, cx := range res.Contexts {
		out.Results = append(out.Results, gateway.SearchHit{Rank: cx.Rank, Score: cx.Score, Title: cx.Title, SectionPath: cx.SectionPath,
			BlockID: cx.BlockID, BlockIDs: cx.BlockIDs, DocID: cx.DocID, ChunkID: cx.ChunkID, Lang: cx.Lang, Path: cx.Path,
			Link:    answer.Link(cx.BlockID, cx.Path),
			Snippet: an.Snippet(analysis.PlainText(cx.Text), aq, analysis.SnippetOptions{Tokens: 32, MarkStart: marks.Start, MarkEnd: marks.End, Ellipsis: "…"}),
			Source:  cx.Source})
	}
	return out, nil
}

func (p *pipelineBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	timeout := p.askTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	done, _, err := client.New(p.sys.Bus, client.Options{AskTimeout: timeout}).Ask(ctx, q, client.AskOptions{OnToken: onToken})
	return done, err
}

func (p *pipelineBackend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	return client.New(p.sys.Bus, client.Options{}).Research(ctx, r, client.ResearchOptions{OnProgress: onProgress, Timeout: 2 * time.Minute})
}

func (p *pipelineBackend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	st := p.sys.Store
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
	b := &gateway.Block{ID: id, DocID: h.DocID, Title: h.Title, SectionPath: h.SectionPath, Text: h.Text, Link: answer.Link(id, h.Path)}
	for _, sp := range h.BlockSpans {
		if sp.ID == id {
			b.Text = string([]rune(h.Text)[sp.Start:sp.End])
		}
	}
	edges, err := st.Neighbors(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, e := range edges {
		b.Neighbors = append(b.Neighbors, gateway.Neighbor{ID: e.Dst, Kind: e.Kind})
	}
	return b, nil
}

// providers are the fake language models: fast answers, strategic
// reformulates and suggests follow-ups.
type providers struct{ fast, strategic *llmtest.Server }

// startPipeline runs every stage over a temp data dir with the fake
// providers and ingests notes (file name -> Markdown).
func startPipeline(t testing.TB, notes map[string]string) (*pipelineBackend, providers) {
	t.Helper()
	ctx := context.Background()
	pv := providers{fast: llmtest.New(t), strategic: llmtest.New(t)}
	cfg := &llm.Config{Providers: []llm.Provider{
		{Name: "fast", BaseURL: pv.fast.URL(), Models: map[string]string{llm.RoleFast: "f"}},
		{Name: "strategic", BaseURL: pv.strategic.URL(), Models: map[string]string{llm.RoleStrategic: "s"}},
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
	kv, err := sys.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := files.Sync(ctx, []string{vault}, kv, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := sys.Bus.Publish(ctx, ev, "test-ingest")
		return err
	}, files.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := system.WaitIdle(wctx, sys.Bus, system.StageSpecs(), 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	return &pipelineBackend{sys: sys}, pv
}
