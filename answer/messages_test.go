package answer

import (
	"errors"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models/llm"
)

func TestTheSearchOnlyLeadSaysWhatReallyHappened(t *testing.T) {
	cases := []struct {
		name    string
		reasons []string
		en, ru  string
	}{
		{"a provider failure, with why",
			[]string{ReasonLLMFailed + ": a: server error (status 500)", ReasonNoQA},
			"No language model could answer: a: server error (status 500). Here are",
			"Ни одна языковая модель не смогла ответить: a: server error (status 500). Вот"},
		{"the verifier rejecting the answer",
			[]string{ReasonDropped + ": [9] not retrieved", ReasonLowCoverage + ": 0% of the answer's sentences are supported by the notes", ReasonNoQA},
			"The model's answer is not supported by your notes, so",
			"Ответ модели не подтверждается заметками, поэтому"},
		{"the deadline passing",
			[]string{ReasonDeadline + ": the language model had not answered within 1m0s (a: 12 tokens received)", ReasonLowQA + ": no span"},
			"The language model did not answer in time, so",
			"Языковая модель не ответила вовремя, поэтому"},
		{"the notes not holding the answer",
			[]string{ReasonNotInNotes + ": the model says the notes do not answer it", ReasonNoQA},
			"Your notes do not seem to answer this question.",
			"Похоже, в заметках нет ответа на этот вопрос."},
		{"no provider configured",
			[]string{ReasonNoProvider, ReasonNoQA},
			"No language model is configured, so",
			"Языковая модель не настроена, поэтому"},
	}
	leads := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			en, ru := searchOnlyLead("en", c.reasons), searchOnlyLead("ru", c.reasons)
			if !strings.HasPrefix(en, c.en) || !strings.HasPrefix(ru, c.ru) {
				t.Errorf("leads:\n en %q\n ru %q", en, ru)
			}
			if leads[en] {
				t.Errorf("the same lead for another cause: %q", en)
			}
			leads[en] = true
		})
	}
}

func TestAFailureSummaryNamesEachProvidersLastErrorWithoutBodies(t *testing.T) {
	res := llm.Result{Attempts: []llm.Attempt{
		{Provider: "a", Err: `llm provider a: server error (status 503): body "{\"error\":\"busy\"}"`},
		{Provider: "a", Err: `llm provider a: server error (status 500): body "x"`},
		{Provider: "b", Err: "llm provider b: unauthorized: check the API key in $B_KEY (status 401)"},
	}}
	got := failureSummary(res, errors.New("llm: all providers failed for role fast: ..."))
	if got != "a: server error (status 500); b: unauthorized: check the API key in $B_KEY (status 401)" {
		t.Fatalf("summary %q", got)
	}
	res = llm.Result{Attempts: []llm.Attempt{{Provider: "a", Err: "context deadline exceeded", Tokens: 42}}}
	if got := failureSummary(res, errors.New("llm stream for role fast: context deadline exceeded")); got != "a: stopped at the deadline after 42 tokens" {
		t.Fatalf("summary %q", got)
	}
	if got := failureSummary(llm.Result{}, errors.New(`llm: no provider for role "fast"`)); got != `no provider for role "fast"` {
		t.Fatalf("summary %q", got)
	}
}
