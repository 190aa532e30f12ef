package answer_test

import (
	"context"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

func TestEveryAnswerRungDatesItsCitationsFromTheContexts(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("Вороны используют «инструменты для добычи пищи» [1].")
	tests := []struct {
		name     string
		answerer *answer.Answerer
		question string
		want     map[string]string // doc id -> date of its citations
	}{
		{"a language model's Russian answer", &answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t)}, "Что умеют вороны?",
			map[string]string{"d1": "2026-03-02T10:00:00Z"}},
		{"an English search-only answer", &answer.Answerer{Analyzer: analyzer(t)}, "What do tomatoes need?",
			map[string]string{"d2": "2025-07-14T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := query()
			q.Question = tt.question
			q.Contexts = contexts()
			q.Contexts[0].Updated, q.Contexts[1].Updated = "2026-03-02T10:00:00Z", "2025-07-14T00:00:00Z"
			done := tt.answerer.Answer(context.Background(), q)
			seen := 0
			for _, c := range done.Citations {
				if want, ok := tt.want[c.DocID]; ok {
					seen++
					if c.Updated != want {
						t.Errorf("citation of %s dated %q, want %q", c.DocID, c.Updated, want)
					}
				}
			}
			if seen == 0 {
				t.Fatalf("no citation of %v in %+v", tt.want, done)
			}
		})
	}
}

func TestACitationKeepsItsDateWhenNoContextDatesItsNote(t *testing.T) {
	cites := []schemas.Citation{{BlockID: "a", DocID: "d1", Updated: "2024-01-01T00:00:00Z"}, {BlockID: "b", DocID: "d2"}}
	answer.DateCitations(cites, []schemas.Context{{Passage: schemas.Passage{DocID: "d2", Updated: "2026-11-03T00:00:00Z"}}})
	if cites[0].Updated != "2024-01-01T00:00:00Z" || cites[1].Updated != "2026-11-03T00:00:00Z" {
		t.Errorf("dates %q %q", cites[0].Updated, cites[1].Updated)
	}
}

func TestSourceDateIsTheDayAsWritten(t *testing.T) {
	for in, want := range map[string]string{"2026-03-02T23:30:00+03:00": "2026-03-02", "2026-03-02": "2026-03-02", "": "", "March": ""} {
		if got := answer.SourceDate(in); got != want {
			t.Errorf("SourceDate(%q) = %q, want %q", in, got, want)
		}
	}
}
