package client_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/internal/system/systemtest"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// TestFollowUpsComeAfterTheAnswerAndASlowOneDoesNotDelayIt: the answer
// stage publishes kb.answer.done as soon as the answer is final, then the
// follow-up questions (from a strategic provider that takes 2 s) on
// kb.answer.followups.
func TestFollowUpsComeAfterTheAnswerAndASlowOneDoesNotDelayIt(t *testing.T) {
	ctx := context.Background()
	answers, ideas := llmtest.New(t), llmtest.New(t)
	answers.SetAnswer("Crows «use tools to get food» [1].")
	ideas.SetAnswer("Where do crows live?\nWhat do crows eat?\nHow long do crows live?")
	const slow = 2 * time.Second
	ideas.Always(llmtest.Delay(slow))
	cfg := &llm.Config{Providers: []llm.Provider{
		{Name: "answers", BaseURL: answers.URL(), Models: map[string]string{llm.RoleFast: "m"}},
		{Name: "ideas", BaseURL: ideas.URL(), Models: map[string]string{llm.RoleStrategic: "s"}},
	}}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg, Log: systemtest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	vault := t.TempDir()
	systemtest.WriteFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n")
	systemtest.SyncPaths(t, sys.Bus, vault)
	systemtest.WaitIdle(t, sys.Bus)

	// Everything on the two subjects, in the order it arrives.
	var mu sync.Mutex
	var order []string
	for _, subj := range []string{schemas.SubjectAnswerDone, schemas.SubjectAnswerFollowUps} {
		stop, err := sys.Bus.Subscribe(subj, func(ev schemas.Event) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, ev.Env().Type)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}

	start := time.Now()
	done, fu, err := client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "f1", Question: "What do crows use?"}}, client.AskOptions{FollowUps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fu.Close()
	answeredIn := time.Since(start)
	if done.Mode != schemas.AnswerLLM || len(done.FollowUps) != 0 {
		t.Fatalf("answer %+v", done)
	}
	if answeredIn >= slow {
		t.Fatalf("the answer came after %s: the %s follow-up call delayed it", answeredIn, slow)
	}
	if _, ok := fu.Wait(ctx, 100*time.Millisecond); ok {
		t.Fatal("follow-ups came at once, before their provider answered")
	}
	qs, ok := fu.Wait(ctx, 10*time.Second)
	if !ok || len(qs) != 3 || qs[0] != "Where do crows live?" {
		t.Fatalf("follow-ups %q (came: %v)", qs, ok)
	}
	if took := time.Since(start); took < slow {
		t.Fatalf("follow-ups after %s, before their provider answered", took)
	}
	if len(ideas.Requests()) != 1 {
		t.Fatalf("%d follow-up requests", len(ideas.Requests()))
	}
	// The two subscriptions here are dispatched on their own: let the
	// second event land.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n >= 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 2 || order[0] != schemas.TypeAnswerDoneV1 || order[1] != schemas.TypeAnswerFollowUpsV1 {
		t.Fatalf("events in order %q", order)
	}
}
