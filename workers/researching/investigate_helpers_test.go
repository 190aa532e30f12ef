package researching_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/index"
	"github.com/exocortex/exocortex/workers/researching"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// invIndexNotes writes Markdown notes (name -> content) to a folder and
// indexes them as ingestion does: the files reader, the chunk stage's
// handler, the index stage's handler, into a real SQLite store.
func invIndexNotes(t testing.TB, texts map[string]string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	root := t.TempDir()
	ch := chunk.NewHandler(chunking.DefaultConfig(), bus.NewMemKV())
	ix := index.NewHandler(st)
	names := make([]string, 0, len(texts))
	for n := range texts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(texts[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		doc, err := notes.ParseMarkdown(path, []byte(texts[name]), root)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		evs, err := ch.Handle(ctx, invMsg(t, doc))
		if err != nil {
			t.Fatalf("chunk %s: %v", name, err)
		}
		for _, ev := range evs {
			if _, err := ix.Handle(ctx, invMsg(t, ev)); err != nil {
				t.Fatalf("index %s: %v", name, err)
			}
		}
	}
	return st
}

func invMsg(t testing.TB, ev schemas.Event) *bus.Msg {
	t.Helper()
	subject := schemas.Stamp(ev, "trace-research")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &bus.Msg{Subject: subject, Data: data, Delivered: 1, TraceID: "trace-research"}
}

// invRouter routes every role to the fake provider, with quick retries.
func invRouter(t testing.TB, srv *llmtest.Server) *llm.Router {
	t.Helper()
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleFast: "fast-model", llm.RoleStrategic: "strategic-model"}}}},
		llm.RouterOptions{Retries: 1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
			BreakerThreshold: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// invEnv is a research's plan and investigate stages on a real embedded
// JetStream server, with a collector of findings and progress events.
type invEnv struct {
	t      testing.TB
	b      *bus.Bus
	st     *store.Store
	srv    *llmtest.Server
	pf     *llmtest.PlanFacts
	router *llm.Router
	state  bus.KV
	specs  map[string]bus.StageSpec

	findings chan *schemas.ResearchFinding
	mu       sync.Mutex
	progress []*schemas.ResearchProgress
}

// newInvEnv indexes notes, starts the bus with the stages' consumers
// (investigate with ackWait) and a collector of findings, and the fake
// provider answering with pf (nil: no provider).
func newInvEnv(t testing.TB, notes map[string]string, pf *llmtest.PlanFacts, ackWait time.Duration) *invEnv {
	t.Helper()
	e := &invEnv{t: t, b: stagetest.New(t), st: invIndexNotes(t, notes), pf: pf, specs: map[string]bus.StageSpec{},
		findings: make(chan *schemas.ResearchFinding, 100)}
	if pf != nil {
		e.srv = llmtest.New(t)
		e.srv.SetResponder(pf.Responder())
		e.router = invRouter(t, e.srv)
	}
	ctx := context.Background()
	specs := researching.PlanSpecs()
	for i := range specs {
		if specs[i].Name == researching.StageInvestigate {
			specs[i].AckWait = ackWait
		}
		e.specs[specs[i].Name] = specs[i]
	}
	collect := bus.StageSpec{Name: "collect_findings", Stream: stage.StreamResearch, Filters: []string{schemas.SubjectResearchFinding}}
	e.specs[collect.Name] = collect
	if err := bus.EnsureTopology(ctx, e.b.JS, bus.Topology{Stages: append(specs, collect)}); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.state, err = e.b.KV(ctx, stage.BucketResearch); err != nil {
		t.Fatal(err)
	}
	stop, err := e.b.Subscribe(schemas.SubjectResearchProgressPrefix+">", func(ev schemas.Event) {
		if p, ok := ev.(*schemas.ResearchProgress); ok {
			e.mu.Lock()
			e.progress = append(e.progress, p)
			e.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.run(ctx, e.b, collect, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		f, err := bus.Decode[*schemas.ResearchFinding](m)
		if err != nil {
			return nil, err
		}
		e.findings <- f
		return nil, nil
	}), bus.RunOptions{})
	return e
}

// run runs a stage until the test ends (or ctx is cancelled).
func (e *invEnv) run(ctx context.Context, b *bus.Bus, spec bus.StageSpec, h bus.Handler, opts bus.RunOptions) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.RunStage(ctx, spec, h, opts); err != nil {
			e.t.Errorf("stage %s: %v", spec.Name, err)
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
}

func (e *invEnv) progressPublisher(b *bus.Bus) func(*schemas.ResearchProgress) {
	return func(p *schemas.ResearchProgress) {
		if err := b.PublishCore(p, "trace-research"); err != nil {
			e.t.Logf("progress: %v", err)
		}
	}
}

// runPlan runs the plan stage.
func (e *invEnv) runPlan() {
	var r *llm.Router
	if e.router != nil {
		r = e.router
	}
	e.run(context.Background(), e.b, e.specs[researching.StagePlan],
		researching.NewPlan(researching.PlanDeps{Router: r, Progress: e.progressPublisher(e.b)}), bus.RunOptions{})
}

// investigateDeps are the deps of an investigate worker on bus b.
func (e *invEnv) investigateDeps(b *bus.Bus) researching.InvestigateDeps {
	state, err := b.KV(context.Background(), stage.BucketResearch)
	if err != nil {
		e.t.Fatal(err)
	}
	return researching.InvestigateDeps{Router: e.router, Retriever: &retrieval.Retriever{Index: e.st}, Docs: e.st,
		Analyzer: e.st.Analyzer(), State: state, Progress: e.progressPublisher(b)}
}

// runInvestigate runs an investigate worker pool with deps on bus b.
func (e *invEnv) runInvestigate(ctx context.Context, b *bus.Bus, d researching.InvestigateDeps, workers int) {
	h, err := researching.NewInvestigate(d)
	if err != nil {
		e.t.Fatal(err)
	}
	e.run(ctx, b, e.specs[researching.StageInvestigate], h,
		bus.RunOptions{Workers: workers, Batch: 1, NakBase: 50 * time.Millisecond, NakMax: 200 * time.Millisecond})
}

// request publishes a research request.
func (e *invEnv) request(id, question string, budget schemas.ResearchBudget) {
	e.t.Helper()
	req := &schemas.ResearchRequested{ResearchID: id, Question: question, Budget: budget, RequestedAt: time.Now().UTC()}
	if _, err := e.b.Publish(context.Background(), req, "trace-"+id); err != nil {
		e.t.Fatal(err)
	}
}

// await collects n findings, by task id.
func (e *invEnv) await(n int, timeout time.Duration) map[string]*schemas.ResearchFinding {
	e.t.Helper()
	out := map[string]*schemas.ResearchFinding{}
	deadline := time.After(timeout)
	for len(out) < n {
		select {
		case f := <-e.findings:
			if _, dup := out[f.TaskID]; dup {
				e.t.Errorf("task %s ended with a second finding", f.TaskID)
			}
			out[f.TaskID] = f
		case <-deadline:
			e.t.Fatalf("%d of %d findings after %s", len(out), n, timeout)
		}
	}
	return out
}

func (e *invEnv) progressOf(step string) []*schemas.ResearchProgress {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*schemas.ResearchProgress
	for _, p := range e.progress {
		if p.Step == step {
			out = append(out, p)
		}
	}
	return out
}

// checkpointFacts reads a task's checkpointed facts.
func (e *invEnv) checkpointFacts(researchID, taskID string) []schemas.Fact {
	e.t.Helper()
	raw, err := e.state.Get(context.Background(), researching.TaskKey(researchID, taskID))
	if err != nil || raw == nil {
		e.t.Fatalf("checkpoint of %s/%s: %v (nil: %v)", researchID, taskID, err, raw == nil)
	}
	var cp struct {
		Facts struct {
			List []schemas.Fact `json:"list"`
		} `json:"facts"`
	}
	if err := json.Unmarshal(raw, &cp); err != nil {
		e.t.Fatal(err)
	}
	return cp.Facts.List
}

// blockText is a block's own text in the index.
func (e *invEnv) blockText(chunkID, blockID string) string {
	e.t.Helper()
	hits, err := e.st.Passages(context.Background(), []string{chunkID})
	if err != nil || len(hits) != 1 {
		e.t.Fatalf("chunk %s: %v (%d hits)", chunkID, err, len(hits))
	}
	for _, s := range hits[0].BlockSpans {
		if s.ID == blockID {
			return hits[0].Text[s.Start:s.End]
		}
	}
	e.t.Fatalf("block %s is not in chunk %s", blockID, chunkID)
	return ""
}
