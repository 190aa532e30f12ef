package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
)

// TestAskGivesTheNextRungWhenTheProviderNeverFinishes: a provider that
// streams without end; ask answers within its --answer-deadline and says
// why, in the question's language. Nothing printed is withdrawn: a
// sentence never finished was never shown, so the passages answer; a
// sentence verified and shown before the deadline is the answer.
func TestAskGivesTheNextRungWhenTheProviderNeverFinishes(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Птицы\n\nВороны используют инструменты для добычи пищи.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	for _, tc := range []struct {
		name    string
		provide func(*llmtest.Server)
		want    []string
	}{
		{"a sentence that never ends: the passages answer",
			func(srv *llmtest.Server) {
				srv.SetAnswer("Вороны используют инструменты и ")
				srv.Always(llmtest.Forever(20 * time.Millisecond))
			},
			[]string{"Языковая модель не ответила вовремя", "mode: search_only", "note: deadline: the language model had not answered within 2s"}},
		{"a verified sentence, then one that never ends: the sentence shown is the answer",
			func(srv *llmtest.Server) {
				srv.SetAnswer("Вороны «используют инструменты для добычи пищи» [1]. И ещё" + strings.Repeat(" и ещё", 2000) + ".")
				srv.SetTokenDelay(5 * time.Millisecond)
			},
			[]string{"Вороны «используют инструменты для добычи пищи» [1].\n\nmode: llm", "note: deadline: the language model had not answered within 2s",
				"the verified sentences shown before are the answer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			tc.provide(srv)
			env := []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="}
			start := time.Now()
			out, errOut, err := exoEnv(t, env, "ask", "Что используют вороны?", "--lang", "ru", "--data", data, "--no-models", "--answer-deadline", "2s",
				"--follow-ups-wait", "0s")
			took := time.Since(start)
			if err != nil {
				t.Fatalf("ask: %v\n%s\n%s", err, out, errOut)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("ask does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "[restarting") || strings.Contains(out, " и ещё") {
				t.Errorf("ask printed text that is not the answer:\n%s", out)
			}
			asked := 0 // answer requests; a follow-up request may come after an llm answer
			for _, r := range srv.Requests() {
				if len(r.Body.Messages) > 0 && !strings.Contains(r.Body.Messages[0].Content, "follow-up") {
					asked++
				}
			}
			if asked != 1 {
				t.Errorf("%d answer requests to the provider, want 1", asked)
			}
			t.Logf("ask with an endless provider and a 2s deadline took %s (start-up included)", took)
		})
	}

	_, errOut, err := exoEnv(t, nil, "ask", "x", "--data", data, "--answer-deadline", "0s")
	if err == nil || !strings.Contains(errOut, "--answer-deadline") {
		t.Errorf("a zero deadline: %v\n%s", err, errOut)
	}
}

// TestAskPrintsTheRestartWhenAProviderBreaksOffAfterAVerifiedSentence: the
// one abnormal case where printed text is withdrawn: the provider breaks off
// after a verified sentence was printed and is asked again; ask says so on
// a line of its own, then prints the answer.
func TestAskPrintsTheRestartWhenAProviderBreaksOffAfterAVerifiedSentence(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food. Crows remember human faces for years.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	srv := llmtest.New(t)
	answer := "Crows «use tools to get food» [1]. They «remember human faces for years» [1]."
	srv.SetAnswer(answer)
	srv.Script(llmtest.CutAfter(8)) // token 8 ("They ") begins the second sentence: the first was printed
	env := []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="}
	out, errOut, err := exoEnv(t, env, "ask", "What do crows use and remember?", "--data", data, "--no-models")
	if err != nil {
		t.Fatalf("ask: %v\n%s\n%s", err, out, errOut)
	}
	want := "Crows «use tools to get food» [1].\n[restarting: the provider broke off and was asked again; the text above is withdrawn]\n" + answer + "\n\nmode: llm"
	if !strings.HasPrefix(out, want) {
		t.Errorf("ask printed:\n%s\nwant it to begin:\n%s", out, want)
	}
}

// TestAskPrintsTheFollowUpsThatComeAfterTheAnswer: the answer is printed
// when it is done; the follow-ups, which come after it, below it.
func TestAskPrintsTheFollowUpsThatComeAfterTheAnswer(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	answers, ideas := llmtest.New(t), llmtest.New(t)
	answers.SetAnswer("Crows «use tools to get food» [1].")
	ideas.SetAnswer("Where do crows live?\nWhat do crows eat?\nHow long do crows live?")
	ideas.Always(llmtest.Delay(time.Second))
	cfg := filepath.Join(t.TempDir(), "llm.json")
	raw, _ := json.Marshal(map[string]any{"providers": []map[string]any{
		{"name": "answers", "base_url": answers.URL(), "models": map[string]string{"fast": "m"}},
		{"name": "ideas", "base_url": ideas.URL(), "models": map[string]string{"strategic": "s"}},
	}})
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG=" + cfg}
	out, errOut, err := exoEnv(t, env, "ask", "What do crows use?", "--data", data, "--no-models")
	if err != nil {
		t.Fatalf("ask: %v\n%s\n%s", err, out, errOut)
	}
	i, j := strings.Index(out, "mode: llm"), strings.Index(out, "follow-up questions:\n  - Where do crows live?\n  - What do crows eat?\n")
	if i < 0 || j < i {
		t.Fatalf("ask output:\n%s", out)
	}

	// Not waiting for them: the answer alone.
	out, errOut, err = exoEnv(t, env, "ask", "What do crows use?", "--data", data, "--no-models", "--follow-ups-wait", "0s", "--json")
	if err != nil {
		t.Fatalf("ask --json: %v\n%s", err, errOut)
	}
	var done struct {
		Mode      string   `json:"mode"`
		FollowUps []string `json:"follow_ups"`
	}
	if err := json.Unmarshal([]byte(out), &done); err != nil || done.Mode != "llm" || len(done.FollowUps) != 0 {
		t.Fatalf("ask --json --follow-ups-wait 0s: %v %+v\n%s", err, done, out)
	}
}

// TestUpAnswersWithinItsDeadlineAndAskSaysWhoseDeadlineHolds: up's
// --answer-deadline bounds the answers of the running system; a client's
// own deadline does not apply to them, and ask says so.
func TestUpAnswersWithinItsDeadlineAndAskSaysWhoseDeadlineHolds(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	srv := llmtest.New(t)
	srv.SetAnswer("Crows use tools and ") // a sentence that never ends
	srv.Always(llmtest.Forever(20 * time.Millisecond))
	startUp(t, data, []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="},
		"--no-models", "--answer-deadline", "3s")
	clientEnv := []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}
	start := time.Now()
	out, errOut, err := exoEnv(t, clientEnv, "ask", "what do crows use?", "--data", data, "--json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, errOut)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("answered after %s", took)
	}
	var done struct {
		Mode    string   `json:"mode"`
		Answer  string   `json:"answer"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(out), &done); err != nil {
		t.Fatalf("ask --json: %v\n%s", err, out)
	}
	if done.Mode != "search_only" || !strings.HasPrefix(done.Answer, "The language model did not answer in time") ||
		!strings.Contains(strings.Join(done.Reasons, "\n"), "deadline: the language model had not answered within 3s") {
		t.Errorf("mode %s, answer %q, reasons %q", done.Mode, done.Answer, done.Reasons)
	}
	// A deadline of the client's own: the running system's holds, and ask
	// says so (asked once up has answered, so its settings are recorded).
	out, errOut, err = exoEnv(t, clientEnv, "ask", "what do crows use?", "--data", data, "--answer-deadline", "20s", "--json")
	if err != nil || !strings.Contains(out, "within 3s") {
		t.Fatalf("ask --answer-deadline 20s: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "answers within its deadline (3s), not your --answer-deadline 20s") {
		t.Errorf("ask does not say whose deadline holds:\n%s\n%s", errOut, out)
	}
	// The same for the deadline of answers without a language model: up
	// has the default, 5 s.
	_, errOut, err = exoEnv(t, append(clientEnv, "EXOCORTEX_ANSWER_DEADLINE_LOCAL=2s"), "ask", "what do crows use?", "--data", data, "--json")
	if err != nil || !strings.Contains(errOut, "answers without a language model within its deadline (5s), not your EXOCORTEX_ANSWER_DEADLINE_LOCAL=2s") {
		t.Errorf("ask does not say whose local deadline holds: %v\n%s", err, errOut)
	}
}

func TestAskRejectsALocalDeadlineThatIsNotADuration(t *testing.T) {
	data := t.TempDir()
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"a zero flag", nil, []string{"--answer-deadline-local", "0s"}, "--answer-deadline-local 0s: want a positive duration"},
		{"a word in the environment", []string{"EXOCORTEX_ANSWER_DEADLINE_LOCAL=soon"}, nil,
			`EXOCORTEX_ANSWER_DEADLINE_LOCAL="soon": want a positive duration such as 5s`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, err := exoEnv(t, c.env, append([]string{"ask", "Что используют вороны?", "--data", data}, c.args...)...)
			if err == nil || !strings.Contains(errOut, c.want) {
				t.Errorf("ask: %v\n%s\nwant %q", err, errOut, c.want)
			}
		})
	}
}
