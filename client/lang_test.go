package client_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/exocortex/exocortex/client"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/internal/system/systemtest"
	"github.com/exocortex/exocortex/schemas"
)

func hasCyrillic(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Cyrillic, r) {
			return true
		}
	}
	return false
}

// A question without a language gets the question's: a Russian one is
// answered with Russian messages, whichever door it came through.
func TestAQuestionWithoutALanguageIsAnsweredInItsOwn(t *testing.T) {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, Log: systemtest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	vault := t.TempDir()
	systemtest.WriteFile(t, filepath.Join(vault, "вороны.md"), "# Вороны\n\nВороны используют палочки, чтобы доставать еду.\n")
	systemtest.WriteFile(t, filepath.Join(vault, "crows.md"), "# Crows\n\nCrows use sticks to get food.\n")
	systemtest.SyncPaths(t, sys.Bus, vault)
	systemtest.WaitIdle(t, sys.Bus)

	// Straight onto the bus, as any client may publish it: the retrieve
	// stage detects the language.
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "ru1", Question: "Что вороны используют для еды?"}}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ev, err := sys.Bus.Await(wctx, schemas.SubjectAnswerDone, func() error {
		_, err := sys.Bus.Publish(ctx, q, q.QueryID)
		return err
	}, func(ev schemas.Event) bool {
		d, ok := ev.(*schemas.AnswerDone)
		return ok && d.QueryID == q.QueryID
	})
	if err != nil {
		t.Fatal(err)
	}
	done := ev.(*schemas.AnswerDone)
	if done.Lang != "ru" {
		t.Errorf("kb.answer.done lang %q, want ru", done.Lang)
	}
	lead, _, _ := strings.Cut(done.Answer, "\n")
	if done.Mode != schemas.AnswerSearchOnly || !hasCyrillic(lead) || strings.Contains(lead, "палочки") {
		t.Errorf("mode %s, lead %q: want a Russian search-only lead (not a passage)", done.Mode, lead)
	}

	// Through the client: the same, and an English question stays English.
	done, _, err = client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "ru2", Question: "вороны еда"}}, client.AskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if done.Lang != "ru" {
		t.Errorf("a two-word Russian question: lang %q", done.Lang)
	}
	done, _, err = client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "en1", Question: "What do crows use to get food?"}}, client.AskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lead, _, _ = strings.Cut(done.Answer, "\n")
	if done.Lang != "en" || hasCyrillic(lead) {
		t.Errorf("an English question: lang %q, lead %q", done.Lang, lead)
	}
	// An explicit language wins, and the chunk filter is the client's.
	rr, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "x1", Question: "crows", Lang: "ru",
		Options: schemas.QueryOptions{Lang: "en"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Lang != "ru" || rr.Options.Lang != "en" {
		t.Errorf("lang %q, options.lang %q: want ru and en as given", rr.Lang, rr.Options.Lang)
	}
	for _, c := range rr.Contexts {
		if c.Lang == "ru" {
			t.Errorf("the en chunk filter let %s (ru) through", c.ChunkID)
		}
	}
}
