package answering_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/answering"
)

func msg(t *testing.T, ev schemas.Event) *bus.Msg {
	t.Helper()
	subject := schemas.Stamp(ev, "trace")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &bus.Msg{Subject: subject, Data: data, Delivered: 1, TraceID: "trace"}
}

func setup(t *testing.T) (*answer.Answerer, *llmtest.Server, *schemas.QueryReranked) {
	t.Helper()
	answers, ideas := llmtest.New(t), llmtest.New(t)
	answers.SetAnswer("Crows «use tools to get food» [1].")
	ideas.SetAnswer("Where do crows live?\nWhat do crows eat?\nHow long do crows live?")
	r, err := llm.NewRouter(llm.Config{Providers: []llm.Provider{
		{Name: "answers", BaseURL: answers.URL(), Models: map[string]string{llm.RoleFast: "m"}},
		{Name: "ideas", BaseURL: ideas.URL(), Models: map[string]string{llm.RoleStrategic: "s"}},
	}}, llm.RouterOptions{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	an, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	rq := &schemas.QueryReranked{Query: schemas.Query{QueryID: "q1", Question: "What do crows use?", Lang: "en"}, Mode: schemas.ModeLexical,
		Contexts: []schemas.Context{{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", BlockID: "b1", BlockIDs: []string{"b1"},
			Text: "Ravens and crows use tools to get food."}}}}
	return &answer.Answerer{Router: r, Analyzer: an}, ideas, rq
}

func TestTheAnswerIsPublishedBeforeTheFollowUpsAreAskedFor(t *testing.T) {
	a, ideas, rq := setup(t)
	var mu sync.Mutex
	var log []string
	publish := func(ctx context.Context, ev schemas.Event, traceID string) error {
		mu.Lock()
		defer mu.Unlock()
		d, ok := ev.(*schemas.AnswerDone)
		if !ok || traceID != "trace" {
			t.Errorf("published %T with trace %q", ev, traceID)
			return nil
		}
		log = append(log, fmt.Sprintf("done %s with %d follow-ups", d.Mode, len(d.FollowUps)))
		if n := len(ideas.Requests()); n != 0 {
			t.Errorf("the follow-ups were asked for (%d requests) before the answer went out", n)
		}
		return nil
	}
	var tokens int
	core := func(ev schemas.Event, traceID string) error { tokens++; return nil }
	out, err := answering.New(a, core, publish).Handle(context.Background(), msg(t, rq))
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0] != "done llm with 0 follow-ups" || tokens < 2 {
		t.Fatalf("published %q, %d tokens", log, tokens)
	}
	if len(out) != 1 {
		t.Fatalf("output %d events", len(out))
	}
	fu, ok := out[0].(*schemas.AnswerFollowUps)
	if !ok || fu.QueryID != "q1" || len(fu.FollowUps) != 3 || len(ideas.Requests()) != 1 {
		t.Fatalf("output %+v", out[0])
	}
}

func TestAnAnswerThatCannotBePublishedFailsTheMessageWithoutFollowUps(t *testing.T) {
	a, ideas, rq := setup(t)
	publish := func(context.Context, schemas.Event, string) error { return errors.New("nats: timeout") }
	core := func(schemas.Event, string) error { return nil }
	start := time.Now()
	out, err := answering.New(a, core, publish).Handle(context.Background(), msg(t, rq))
	if err == nil || !strings.Contains(err.Error(), "publish answer q1: nats: timeout") || out != nil {
		t.Fatalf("out %v err %v", out, err)
	}
	if len(ideas.Requests()) != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("follow-ups were asked for an answer that never went out")
	}
}
