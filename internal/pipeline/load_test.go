package pipeline_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// The answer stage waits on a language model for most of an answer: with
// the default settings of exocortex up, questions asked at the same time
// are answered at the same time, not one after another behind a single
// worker (20 askers once waited up to 20 answers for their first token).
func TestQuestionsAskedAtOnceAreAnsweredAtOnce(t *testing.T) {
	const n = 12
	ctx := context.Background()
	srv := llmtest.NewScripted(t, llmtest.ScriptOptions{})
	// Every answer request is held until n of them are in flight together
	// (or 10 s pass): a stage answering one at a time never gets there.
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	release := sync.OnceFunc(func() { close(all) })
	srv.SetResponder(func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
		if !strings.Contains(lastUser(body), "<context n=") {
			return "", nil, false // follow-up questions
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == n {
			release()
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			release() // the others need not wait as long
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return "", nil, false // the scripted answer from the contexts
	})
	cfg := &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(), Models: map[string]string{llm.RoleFast: "m"}}}}
	sys, err := pipeline.Start(ctx, pipeline.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n\nOwls hunt at night and fly silently.\n")
	syncPaths(t, sys.Bus, vault)
	waitIdle(t, sys.Bus)

	var wg sync.WaitGroup
	modes := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := pipeline.AskAnswer(ctx, sys.Bus, &schemas.QuerySubmitted{QueryID: fmt.Sprintf("at-once-%d", i),
				Question: fmt.Sprintf("What do crows use to get food (%d)?", i)}, time.Minute, nil)
			if err != nil {
				t.Error(err)
				return
			}
			modes[i] = done.Mode
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if most != n {
		t.Errorf("at most %d of %d questions asked at once were with the language model at the same time", most, n)
	}
	for i, m := range modes {
		if m != schemas.AnswerLLM {
			t.Errorf("question %d: mode %q, want %q", i, m, schemas.AnswerLLM)
		}
	}
}

func lastUser(body llmtest.ChatBody) string {
	for i := len(body.Messages) - 1; i >= 0; i-- {
		if body.Messages[i].Role == "user" {
			return body.Messages[i].Content
		}
	}
	return ""
}
