package system_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// The query stages wait on a language model for most of a question: the
// retrieve stage translates it into the notes' other languages (without a
// multilingual embedding model) and the answer stage writes the answer.
// With the default settings of exocortex up, questions asked at the same
// time are with the model at the same time, not one after another behind a
// single worker (20 askers once waited up to 20 answers for their first
// token).
func TestQuestionsAskedAtOnceAreWithTheLanguageModelAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// held says which requests wait for the others.
		held func(body llmtest.ChatBody) bool
	}{
		{"translation in the retrieve stage", func(body llmtest.ChatBody) bool {
			return len(body.Messages) > 0 && strings.HasPrefix(body.Messages[0].Content, "Translate the question into")
		}},
		{"answer in the answer stage", func(body llmtest.ChatBody) bool {
			return strings.Contains(lastUser(body), "<context n=")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			most, modes := askAtOnce(t, 12, tc.held)
			if most != len(modes) {
				t.Errorf("at most %d of %d questions asked at once were with the language model at the same time", most, len(modes))
			}
			for i, m := range modes {
				if m != schemas.AnswerLLM {
					t.Errorf("question %d: mode %q, want %q", i, m, schemas.AnswerLLM)
				}
			}
		})
	}
}

// askAtOnce asks n questions at once of a system holding notes in English
// and Russian, with a provider that holds each request that held matches
// until n of them are in flight together (or 10 s pass: a stage handling
// one at a time never gets there). It returns the most such requests in
// flight at once and each answer's mode.
func askAtOnce(t *testing.T, n int, held func(llmtest.ChatBody) bool) (most int, modes []string) {
	ctx := context.Background()
	srv := llmtest.NewScripted(t, llmtest.ScriptOptions{})
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	release := sync.OnceFunc(func() { close(all) })
	srv.SetResponder(func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
		if !held(body) {
			return "", nil, false
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
		return "", nil, false // the scripted reply
	})
	cfg := &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: srv.URL(),
		Models: map[string]string{llm.RoleFast: "m", llm.RoleStrategic: "m"}}}}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n\nOwls hunt at night and fly silently.\n")
	writeFile(t, filepath.Join(vault, "птицы.md"), "# Птицы\n\nВороны и грачи добывают корм с помощью палочек.\n\nСовы охотятся ночью и летают бесшумно.\n")
	syncPaths(t, sys.Bus, vault)
	waitIdle(t, sys.Bus)

	var wg sync.WaitGroup
	modes = make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, _, err := client.New(sys.Bus, client.Options{AskTimeout: time.Minute}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("at-once-%d", i),
				Question: fmt.Sprintf("What do crows use to get food (%d)?", i)}}, client.AskOptions{})
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
	return most, modes
}

func lastUser(body llmtest.ChatBody) string {
	for i := len(body.Messages) - 1; i >= 0; i-- {
		if body.Messages[i].Role == "user" {
			return body.Messages[i].Content
		}
	}
	return ""
}
