package system_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/registry"
	"github.com/exocortex/exocortex/workers/stage"
)

// echoStage is a stage declared here, outside the bus and the pipeline: it
// records what it reads and refuses a "poison" body for good.
type echoStage struct {
	mu   sync.Mutex
	seen []string
}

func (e *echoStage) declaration() stage.Declaration {
	return stage.Declaration{
		Name:        "echo",
		Stream:      "TEST_ECHO",
		Inputs:      []string{"test.echo.in"},
		AckWait:     5 * time.Second,
		MaxDeliver:  3,
		Concurrency: 2,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
				if string(m.Data) == "poison" {
					return nil, bus.Permanent(errors.New("echo: a poison body"))
				}
				e.mu.Lock()
				e.seen = append(e.seen, string(m.Data))
				e.mu.Unlock()
				return nil, nil
			}), nil
		},
	}
}

func (e *echoStage) got() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

var echoStream = jetstream.StreamConfig{Name: "TEST_ECHO", Subjects: []string{"test.echo.>"}, Storage: jetstream.FileStorage}

func TestAStageDeclaredOutsideTheBusAndThePipelineRunsWithTheOthers(t *testing.T) {
	ctx := context.Background()
	echo := &echoStage{}
	cat := registry.Catalog().With([]jetstream.StreamConfig{echoStream}, echo.declaration())
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
		Catalog: &cat, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()

	for _, body := range []string{"hello", "poison", "world"} {
		if _, err := sys.Bus.JS.Publish(ctx, "test.echo.in", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := system.WaitIdle(ctx, sys.Bus, cat.Specs(), 20*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if got := echo.got(); len(got) != 2 || !contains(got, "hello") || !contains(got, "world") {
		t.Errorf("the echo stage read %q, want hello and world", got)
	}

	info, err := sys.Bus.JS.Consumer(ctx, "TEST_ECHO", "echo")
	if err != nil {
		t.Fatalf("the declared stage has no consumer: %v", err)
	}
	ci, err := info.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Config.MaxDeliver != 3 || ci.Config.AckWait != 5*time.Second || ci.Config.FilterSubject != "test.echo.in" {
		t.Errorf("consumer settings = max deliver %d, ack wait %s, filter %q; want the declaration's", ci.Config.MaxDeliver,
			ci.Config.AckWait, ci.Config.FilterSubject)
	}

	states, err := sys.Bus.StageStates(ctx, cat.Specs())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range states {
		names = append(names, s.Stage)
		if s.Stage == "echo" && s.Delivered != 3 {
			t.Errorf("echo stage state = %+v, want 3 delivered", s)
		}
	}
	if len(names) != len(registry.Stages())+1 || names[len(names)-1] != "echo" {
		t.Errorf("stage states list %v, want this build's stages then echo", names)
	}

	letters, err := sys.Bus.DeadLetters(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 1 || string(letters[0].Data) != "poison" || letters[0].Subject != "test.echo.in" ||
		!strings.Contains(letters[0].Reason, "poison body") {
		t.Fatalf("dead letters of echo = %+v, want the poison message with its reason", letters)
	}
	counts, err := sys.Bus.DeadLetterCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts["echo"] != 1 {
		t.Errorf("dead-letter counts = %v, want 1 for echo (on kb.dlq.echo)", counts)
	}
}

func TestAResearchStageGetsTheRouterRetrieverAnalyzerBucketsAndCorePublish(t *testing.T) {
	ctx := context.Background()
	up := llmtest.New(t)
	llmCfg := &llm.Config{Providers: []llm.Provider{{Name: "up", BaseURL: up.URL(), Models: map[string]string{llm.RoleStrategic: "m"}}}}
	var got *stage.Deps
	probe := stage.Declaration{
		Name:    "probe",
		Stream:  stage.StreamResearch,
		Inputs:  []string{schemas.SubjectResearchRequested},
		Outputs: []string{schemas.SubjectResearchProgressPrefix + "*"},
		Needs:   stage.NeedStore | stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker | stage.NeedRetriever | stage.NeedRouter | stage.NeedAnalyzer,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			got = d
			state, err := d.KV(ctx, stage.BucketResearch)
			if err != nil {
				return nil, err
			}
			if _, err := d.KV(ctx, stage.BucketReports); err != nil {
				return nil, err
			}
			return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
				rq, err := bus.Decode[*schemas.ResearchRequested](m)
				if err != nil {
					return nil, err
				}
				if err := state.Put(ctx, rq.ResearchID, []byte(rq.Question)); err != nil {
					return nil, err
				}
				return nil, d.PublishCore(&schemas.ResearchProgress{ResearchID: rq.ResearchID, Step: "plan", Message: rq.Question}, m.TraceID)
			}), nil
		},
	}
	cat := registry.Catalog().With(nil, probe)
	dir := t.TempDir()
	st, err := store.Open(system.DBPath(dir)) // a reader needs an index to read
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	sys, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", NoModels: true, LLM: llmCfg,
		Catalog: &cat, Stages: []string{"probe"}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	if got == nil || got.Router == nil || got.Retriever == nil || got.Analyzer == nil || got.Store == nil || got.Publish == nil {
		t.Fatalf("the research stage's deps lack a part: %+v", got)
	}
	if got.Answerer != nil || sys.Answerer != nil {
		t.Errorf("an answerer was built though no stage here needs one")
	}

	progress := make(chan *schemas.ResearchProgress, 1)
	stop, err := sys.Bus.Subscribe(schemas.SubjectResearchProgressPrefix+"r1", func(ev schemas.Event) {
		if p, ok := ev.(*schemas.ResearchProgress); ok {
			progress <- p
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := sys.Bus.Publish(ctx, &schemas.ResearchRequested{ResearchID: "r1", Question: "What do crows use?"}, "trace-r1"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-progress:
		if p.Step != "plan" || p.Message != "What do crows use?" || p.TraceID != "trace-r1" {
			t.Errorf("progress = %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress on core NATS from the declared research stage")
	}
	kv, err := sys.Bus.KV(ctx, stage.BucketResearch)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := kv.Get(ctx, "r1"); err != nil || string(v) != "What do crows use?" {
		t.Errorf("research state r1 = %q, %v", v, err)
	}
}

func TestAStageOnAStreamNobodyDeclaredIsRefused(t *testing.T) {
	echo := &echoStage{}
	cat := registry.Catalog().With(nil, echo.declaration(), echo.declaration())
	_, err := system.Start(context.Background(), system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
		Catalog: &cat, Log: testLog(t)})
	if err == nil || !strings.Contains(err.Error(), "stream TEST_ECHO is not declared") || !strings.Contains(err.Error(), `"echo" declared twice`) {
		t.Fatalf("start = %v, want both problems named", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
