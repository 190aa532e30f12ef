package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// TestACancelledAskIsCountedAsCancelledNotAsAProviderErrorOrAnAnswerMode:
// a client that leaves while its question (English or Russian) is being
// answered moves exocortex_answers_cancelled_total and the provider's
// cancelled requests, and neither the provider's errors nor any answer
// mode (the stage falls back to a search-only answer nobody reads).
func TestACancelledAskIsCountedAsCancelledNotAsAProviderErrorOrAnAnswerMode(t *testing.T) {
	ctx := context.Background()
	slow := llmtest.New(t)
	slow.SetAnswer("Crows «use tools to get food» [1]." + strings.Repeat(" And more", 500) + ".")
	slow.SetTokenDelay(20 * time.Millisecond)
	const provider = "slow-cancel-test"
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
		LLM: &llm.Config{Providers: []llm.Provider{{Name: provider, BaseURL: slow.URL(), Models: map[string]string{llm.RoleFast: "m"}}}},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	ingestNotes(ctx, t, sys, map[string]string{
		"birds.md":  "# Birds\n\nRavens and crows use tools to get food.\n",
		"вороны.md": "# Вороны\n\nВороны используют орудия, чтобы добыть еду.\n",
	})
	be := gateway.NewBusBackend(sys.Bus, gateway.BusOptions{})
	defer be.Close()

	for i, question := range []string{"What do crows use to get food?", "Что используют вороны?"} {
		t.Run(question, func(t *testing.T) {
			before := scrape(t)
			asked := len(slow.Requests())
			qctx, leave := context.WithCancel(ctx)
			ended := make(chan error, 1)
			go func() {
				_, err := be.Ask(qctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "cancel-" + string(rune('a'+i)), Question: question}}, nil)
				ended <- err
			}()
			// The provider is streaming the answer: the client leaves.
			for deadline := time.Now().Add(20 * time.Second); len(slow.Requests()) == asked; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the provider was never asked")
				}
			}
			time.Sleep(50 * time.Millisecond)
			leave()
			if err := <-ended; err == nil {
				t.Fatal("the ask ended without error after its client left")
			}
			var after = before
			cancelled := map[string]string{}
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				after = scrape(t)
				if value(after, "exocortex_answers_cancelled_total", cancelled) > value(before, "exocortex_answers_cancelled_total", cancelled) {
					break
				}
			}
			delta := func(name string, labels map[string]string) float64 {
				return value(after, name, labels) - value(before, name, labels)
			}
			if d := delta("exocortex_answers_cancelled_total", cancelled); d != 1 {
				t.Errorf("answers cancelled moved by %v, want 1", d)
			}
			if d := delta("exocortex_llm_requests_cancelled_total", map[string]string{"provider": provider}); d != 1 {
				t.Errorf("the provider's cancelled requests moved by %v, want 1", d)
			}
			if d := delta("exocortex_llm_errors_total", map[string]string{"provider": provider}); d != 0 {
				t.Errorf("the provider's errors moved by %v: a client that left is not the provider's error", d)
			}
			for _, mode := range []string{schemas.AnswerLLM, schemas.AnswerCache, schemas.AnswerExtractive, schemas.AnswerSearchOnly} {
				if d := delta("exocortex_answers_total", map[string]string{"mode": mode}); d != 0 {
					t.Errorf("answers in mode %s moved by %v: a cancelled ask is no answer", mode, d)
				}
			}
		})
	}
}
