package client_test

import (
	"context"
	"path/filepath"
	"strings"
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

func TestAQuestionOnTheBusGetsStreamedTokensAndAVerifiedAnswer(t *testing.T) {
	ctx := context.Background()
	down, up := llmtest.New(t), llmtest.New(t)
	down.Always(llmtest.Fail(503))
	cfg := &llm.Config{Providers: []llm.Provider{
		{Name: "down", BaseURL: down.URL(), Models: map[string]string{llm.RoleFast: "m"}, Free: true},
		{Name: "up", BaseURL: up.URL(), Models: map[string]string{llm.RoleFast: "m"}},
	}}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg,
		LLMOptions: llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}, Log: systemtest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	vault := t.TempDir()
	systemtest.WriteFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n")
	systemtest.SyncPaths(t, sys.Bus, vault)
	systemtest.WaitIdle(t, sys.Bus)

	up.SetAnswer("Crows «use tools to get food» [1].")
	var mu sync.Mutex
	var streamed strings.Builder
	var seqs []int
	done, _, err := client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "a1", Question: "What do crows use?"}}, client.AskOptions{OnToken: func(tok *schemas.AnswerToken) {
		mu.Lock()
		defer mu.Unlock()
		if tok.Restart {
			streamed.Reset()
		}
		streamed.WriteString(tok.Text)
		seqs = append(seqs, tok.Seq)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if done.Mode != schemas.AnswerLLM || done.Provider != "up" || len(done.Citations) != 1 || done.Citations[0].Quote != "use tools to get food" {
		t.Fatalf("answer = %+v", done)
	}
	// Tokens are core NATS: the last may land just after the answer.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got, n := streamed.String(), len(seqs)
		mu.Unlock()
		if got == done.Answer || time.Now().After(deadline) {
			for i := 0; i < n; i++ {
				if seqs[i] != i+1 {
					t.Errorf("token sequence %v", seqs)
					break
				}
			}
			if got != done.Answer {
				t.Errorf("streamed %q, answer %q", got, done.Answer)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	h := sys.Router.Health()
	if h[0].Name != "down" || h[0].State != "open" {
		t.Errorf("the failing provider's breaker: %+v", h)
	}
	// status reads the same from the bus.
	var seen []llm.ProviderHealth
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if seen, err = system.ProviderHealth(ctx, sys.Bus); err == nil && len(seen) == 2 && seen[0].State == "open" {
			break
		}
	}
	if len(seen) != 2 || seen[0].Name != "down" || seen[0].State != "open" {
		t.Errorf("provider health on the bus: %+v (%v)", seen, err)
	}

	// Without a provider the same question is answered from the passages.
	down.Always(llmtest.Fail(503))
	up.Always(llmtest.Fail(500))
	done, _, err = client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "a2", Question: "What do crows use?"}}, client.AskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if done.Mode != schemas.AnswerSearchOnly || len(done.Citations) == 0 || !strings.Contains(strings.Join(done.Reasons, " "), "llm_failed") {
		t.Errorf("with every provider failing: %+v", done)
	}
}
