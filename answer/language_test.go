package answer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// A model that answers a Russian question in English is stopped at its first
// sentence and asked once more with the language rule; when it complies, its
// answer is given, and the client never saw the English sentence.
func TestAnAnswerInAnotherLanguageIsAskedAgainOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		complies bool
		mode     string
		requests int
	}{
		{"the model complies the second time", true, schemas.AnswerLLM, 2},
		{"the model does not: the next rung answers", false, schemas.AnswerSearchOnly, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetResponder(func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
				if tc.complies && strings.Contains(body.Messages[0].Content, "Your previous reply was not in Russian") {
					return "В заметке: «вороны используют инструменты для добычи пищи» [1].", nil, true
				}
				return "The note says crows use «инструменты для добычи пищи» to get food [1]. They live in flocks [1].", nil, true
			})
			var toks tokens
			a := &answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t), Emit: toks.emit}
			done := a.Answer(context.Background(), query())
			if done.Mode != tc.mode {
				t.Fatalf("mode %s, want %s; answer %q, reasons %q", done.Mode, tc.mode, done.Answer, done.Reasons)
			}
			if n := len(srv.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			reasons := strings.Join(done.Reasons, "\n")
			if !strings.Contains(reasons, answer.DropLanguage+": the model answered in another language") {
				t.Errorf("reasons %q do not say the model was asked again", reasons)
			}
			if strings.Contains(toks.text(), "The note says") || strings.Contains(done.Answer, "The note says") {
				t.Errorf("the English sentence reached the client: %q", toks.text())
			}
			if toks.text() != done.Answer {
				t.Errorf("the client saw %q, the answer is %q", toks.text(), done.Answer)
			}
			if !tc.complies && !strings.HasPrefix(done.Answer, "Языковая модель ответила не на языке вопроса") {
				t.Errorf("the passages' lead %q does not say why", done.Answer)
			}
		})
	}
}
