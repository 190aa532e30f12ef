package system_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
)

// rawNotes writes two notebooks ("Work notes", "home") of English and
// Russian notes with tags and dates, one dated in the month before now.
func rawNotes(t *testing.T) (work, home string) {
	root := t.TempDir()
	work, home = filepath.Join(root, "Work notes"), filepath.Join(root, "home")
	lastMonth := time.Now().AddDate(0, 0, -time.Now().Day()-10).Format("2006-01-02")
	writeFile(t, filepath.Join(work, "atlas", "budget.md"), "---\ntags: [work]\ndate: 2024-03-10\n---\n# Atlas budget\n\nThe Atlas budget is 40k for the quarter.\n")
	writeFile(t, filepath.Join(home, "recipes", "borsch.md"), "---\ntags: [рецепт]\ndate: 2024-03-31\n---\n# Борщ\n\nБюджет на борщ: свёкла, капуста, картофель.\n")
	writeFile(t, filepath.Join(home, "recipes", "soup.md"), "---\ntags: [recipe]\ndate: 2023-12-01\n---\n# Soup\n\nThe soup budget is small: onions and stock.\n")
	writeFile(t, filepath.Join(home, "diary", "review.md"), "---\ndate: "+lastMonth+"\n---\n# Пересмотр\n\nБюджет семьи пересмотрен, budget reviewed.\n")
	return work, home
}

// publishRaw publishes body as a client without a door would (docs/answers.md)
// and waits for the event on subject that answers query id.
func publishRaw(t *testing.T, sys *system.System, subject, id, body string) schemas.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := sys.Bus.Await(ctx, subject, func() error {
		m := nats.NewMsg(schemas.SubjectQuery)
		m.Data = []byte(body)
		m.Header.Set(nats.MsgIdHdr, "query:"+id)
		_, err := sys.Bus.JS.PublishMsg(ctx, m)
		return err
	}, func(ev schemas.Event) bool {
		switch e := ev.(type) {
		case *schemas.QueryReranked:
			return e.QueryID == id
		case *schemas.AnswerDone:
			return e.QueryID == id
		}
		return false
	})
	if err != nil {
		t.Fatalf("no reply to %s: %v", body, err)
	}
	return ev
}

func noteNames(rr *schemas.QueryReranked) []string {
	var got []string
	seen := map[string]bool{}
	for _, c := range rr.Contexts {
		if !seen[c.DocID] {
			seen[c.DocID] = true
			got = append(got, filepath.Base(c.Path))
		}
	}
	sort.Strings(got)
	return got
}

func hasReason(reasons []string, part string) bool {
	return slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, part) })
}

// TestAQuestionPublishedOntoNATSHasItsScopeReadByTheRetrieveStage publishes
// raw kb.query.submitted JSON, as a script without a door would, with
// scope operators and date phrases in English and Russian in the question.
func TestAQuestionPublishedOntoNATSHasItsScopeReadByTheRetrieveStage(t *testing.T) {
	sys := start(t, t.TempDir())
	work, home := rawNotes(t)
	syncPaths(t, sys.Bus, work, home)
	waitIdle(t, sys.Bus)

	const search = `"options":{"no_answer":true,"expand":-1%s}`
	for i, tc := range []struct {
		name, typ, question, options string
		want                         []string // notes found
		read                         string   // a reason that says what was read ("" none)
		scoped                       bool     // the reply's query carries a scope
	}{
		{"tag:recipe keeps the recipes tagged so", "v2", `budget tag:recipe`, "", []string{"soup.md"}, "scope_read: scope: tags recipe", true},
		{"тег:рецепт keeps the Russian tag", "v2", `бюджет тег:рецепт`, "", []string{"borsch.md"}, "scope_read: scope: tags рецепт", true},
		{`in:"Work notes" keeps the notebook`, "v2", `budget in:\"Work notes\"`, "", []string{"budget.md"}, "scope_read: scope: notebooks Work notes", true},
		{"после:2024-03-01 keeps the notes from March 2024", "v2", `budget бюджет после:2024-03-01`, "", []string{"borsch.md", "budget.md", "review.md"}, "scope_read: scope: since 2024-03-01", true},
		{"в прошлом месяце keeps last month's note and says so", "v2", `бюджет в прошлом месяце`, "", []string{"review.md"}, `(from \"в прошлом месяце\")`, true},
		{"the scope read is intersected with options.scope", "v2", `budget бюджет after:2024-01-01`, `,"scope":{"include":{"notebooks":["home"]}}`, []string{"borsch.md", "review.md"}, "scope_read: scope: notebooks home; since 2024-01-01", true},
		{"a question a door read (literal) is not read again", "v2", `budget tag:recipe`, `,"literal":true`, []string{"borsch.md", "budget.md", "review.md", "soup.md"}, "", false},
		{"a v1 question is searched as it is, as before", "v1", `budget tag:recipe`, "", []string{"borsch.md", "budget.md", "review.md", "soup.md"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("raw%d", i)
			body := fmt.Sprintf(`{"type":"kb.query.submitted.%s","id":"query:%s","time":"2026-11-21T10:00:00Z","query_id":"%s","question":"%s",`+search+`}`,
				tc.typ, id, id, tc.question, tc.options)
			rr := publishRaw(t, sys, schemas.SubjectReranked, id, body).(*schemas.QueryReranked)
			if got := noteNames(rr); !slices.Equal(got, tc.want) {
				t.Errorf("notes %v, want %v (reasons %v)", got, tc.want, rr.Reasons)
			}
			read := slices.ContainsFunc(rr.Reasons, func(r string) bool { return strings.HasPrefix(r, schemas.ReasonScopeRead) })
			if tc.read != "" && !hasReason(rr.Reasons, strings.ReplaceAll(tc.read, `\"`, `"`)) || tc.read == "" && read {
				t.Errorf("reasons %v, want one saying %q", rr.Reasons, tc.read)
			}
			if (rr.Options.Scope != nil) != tc.scoped {
				t.Errorf("the reply's scope is %+v, want scoped %v", rr.Options.Scope, tc.scoped)
			}
		})
	}

	t.Run("a Go door that did not read its text is searched as it is", func(t *testing.T) {
		rr, err := client.New(sys.Bus, client.Options{SearchTimeout: 30 * time.Second}).Search(context.Background(),
			&schemas.QuerySubmitted{Query: schemas.Query{QueryID: "door1", Question: "budget tag:recipe", Options: schemas.QueryOptions{Expand: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		if rr.Options.Scope != nil || hasReason(rr.Reasons, schemas.ReasonScopeRead) || len(noteNames(rr)) < 2 {
			t.Errorf("a door's question was read again: scope %+v, reasons %v, notes %v", rr.Options.Scope, rr.Reasons, noteNames(rr))
		}
	})
}

// TestTheAnswerToARawQuestionSaysWhatScopeWasReadOrWhyNot: the answer
// stage's kb.answer.done carries the scope read, and a misspelt operator
// is an answer saying what to fix instead of a search of every note.
func TestTheAnswerToARawQuestionSaysWhatScopeWasReadOrWhyNot(t *testing.T) {
	sys := start(t, t.TempDir())
	work, home := rawNotes(t)
	syncPaths(t, sys.Bus, work, home)
	waitIdle(t, sys.Bus)

	raw := `{"type":"kb.query.submitted.v2","id":"query:%[1]s","time":"2026-11-21T10:00:00Z","query_id":"%[1]s","question":"%[2]s"}`
	done := publishRaw(t, sys, schemas.SubjectAnswerDone, "ans1", fmt.Sprintf(raw, "ans1", "What is the soup budget? tag:recipe")).(*schemas.AnswerDone)
	if !hasReason(done.Reasons, "scope_read: scope: tags recipe") {
		t.Errorf("the answer does not say what scope was read: %v", done.Reasons)
	}
	for _, tc := range []struct{ name, id, question, says string }{
		{"a misspelt English operator", "bad-en", "soup budget tga:recipe", "could not be read"},
		{"a misspelt Russian operator", "bad-ru", "бюджет борща теп:рецепт", "Не удалось прочитать"},
	} {
		t.Run(tc.name+" is refused with a reason", func(t *testing.T) {
			done := publishRaw(t, sys, schemas.SubjectAnswerDone, tc.id, fmt.Sprintf(raw, tc.id, tc.question)).(*schemas.AnswerDone)
			if !hasReason(done.Reasons, schemas.ReasonInvalidScope+":") || !strings.Contains(done.Answer, tc.says) || len(done.Citations) != 0 {
				t.Errorf("answer %q, reasons %v; want a refusal saying %q with invalid_scope", done.Answer, done.Reasons, tc.says)
			}
		})
	}
}

// TestAQueryOfANewerVersionIsDeadLetteredSayingToUpgradeTheWorkers: a
// worker never reads a version it does not know as if it were an older one.
func TestAQueryOfANewerVersionIsDeadLetteredSayingToUpgradeTheWorkers(t *testing.T) {
	sys := start(t, t.TempDir())
	ctx := context.Background()
	m := nats.NewMsg(schemas.SubjectQuery)
	m.Data = []byte(`{"type":"kb.query.submitted.v3","id":"query:v3","time":"2026-11-21T10:00:00Z","query_id":"v3","question":"budget","options":{"within":"work"}}`)
	if _, err := sys.Bus.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		letters, err := sys.Bus.DeadLetters(ctx, "retrieve")
		if err != nil {
			t.Fatal(err)
		}
		if len(letters) == 1 {
			r := letters[0].Reason
			for _, want := range []string{"unknown event type", `"kb.query.submitted.v3" is newer than this worker`, "kb.query.submitted.v1, kb.query.submitted.v2", "upgrade the workers"} {
				if !strings.Contains(r, want) {
					t.Errorf("dead-letter reason %q does not say %q", r, want)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter for a v3 query: %+v", letters)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
