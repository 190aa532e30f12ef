package answer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// cite is a citation of the claim at 0-40 from note doc, dated.
func cite(doc, updated, quote string) schemas.Citation {
	return schemas.Citation{BlockID: "b-" + doc, DocID: doc, Quote: quote, Updated: updated, Spans: []schemas.TextSpan{{Start: 0, End: 40}}}
}

func TestMarkNewerMarksOnlyDatedSourcesThatGiveDifferentValuesForOneSubject(t *testing.T) {
	const (
		march = "2024-03-12T10:00:00Z"
		april = "2024-04-02T09:00:00Z"
	)
	tests := []struct {
		name     string
		lang     string
		cites    []schemas.Citation
		want     []string // each citation's Recency
		wantNote string
	}{
		{"two English notes giving two budgets mark the later one newer", "en",
			[]schemas.Citation{cite("d1", april, "The Atlas project budget is 7000 EUR."), cite("d2", march, "The Atlas project budget is 5000 EUR.")},
			[]string{"newer", "older"}, "Sources [1] (2024-04-02) and [2] (2024-03-12) disagree; [1] is newer."},
		{"two Russian notes giving two dates say which is newer in Russian", "ru",
			[]schemas.Citation{cite("d1", march, "Релиз проекта Атлас назначен на 3 марта."), cite("d2", april, "Релиз проекта Атлас назначен на 10 апреля.")},
			[]string{"older", "newer"}, "Источники [1] (2024-03-12) и [2] (2024-04-02) расходятся; [2] новее."},
		{"the same value in both notes is no disagreement", "en",
			[]schemas.Citation{cite("d1", march, "The Atlas project budget is 5000 EUR."), cite("d2", april, "The Atlas project budget is 5000 EUR, approved.")},
			[]string{"", ""}, ""},
		{"the same value in both Russian notes is no disagreement", "ru",
			[]schemas.Citation{cite("d1", march, "Бюджет проекта Атлас — 5000 евро."), cite("d2", april, "Бюджет проекта Атлас составляет 5000 евро.")},
			[]string{"", ""}, ""},
		{"notes without dates are never marked", "en",
			[]schemas.Citation{cite("d1", "", "The Atlas project budget is 7000 EUR."), cite("d2", "", "The Atlas project budget is 5000 EUR.")},
			[]string{"", ""}, ""},
		{"one dated note and one undated note are never marked", "ru",
			[]schemas.Citation{cite("d1", march, "Бюджет проекта Атлас — 5000 евро."), cite("d2", "", "Бюджет проекта Атлас — 7000 евро.")},
			[]string{"", ""}, ""},
		{"two notes of the same day and hour are not ordered", "en",
			[]schemas.Citation{cite("d1", march, "The Atlas project budget is 7000 EUR."), cite("d2", march, "The Atlas project budget is 5000 EUR.")},
			[]string{"", ""}, ""},
		{"two blocks of one note are one source", "en",
			[]schemas.Citation{cite("d1", march, "The Atlas project budget is 7000 EUR."), cite("d1", april, "The Atlas project budget is 5000 EUR.")},
			[]string{"", ""}, ""},
		{"values of different kinds on one subject are no disagreement", "en",
			[]schemas.Citation{cite("d1", march, "The Atlas project budget is 5000 EUR."), cite("d2", april, "The Atlas project budget review is on March 3.")},
			[]string{"", ""}, ""},
		{"two subjects in one claim are no disagreement", "en",
			[]schemas.Citation{cite("d1", march, "Atlas hosting costs 5000 EUR."), cite("d2", april, "The Borealis warehouse lease renewal fee came to 7000 EUR.")},
			[]string{"", ""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			note := answer.MarkNewer(analyzer(t), tt.cites, tt.lang)
			for i, c := range tt.cites {
				if c.Recency != tt.want[i] {
					t.Errorf("citation %d recency %q, want %q", i+1, c.Recency, tt.want[i])
				}
			}
			if note != tt.wantNote {
				t.Errorf("note %q, want %q", note, tt.wantNote)
			}
		})
	}
}

func TestSourcesOfTwoSentencesAreComparedByTheirSubject(t *testing.T) {
	tests := []struct {
		name   string
		x, y   string
		marked bool
	}{
		{"two sentences on the Atlas budget are compared", "The Atlas project budget is 5000 EUR.", "The Atlas project budget is 7000 EUR.", true},
		{"two Russian sentences on the Atlas release are compared", "Релиз проекта Атлас назначен на 3 марта.", "Релиз проекта Атлас перенесли на 10 апреля.", true},
		{"a budget and a hosting cost of one project are two subjects", "The Atlas project budget is 5000 EUR.", "Atlas hosting costs 300 EUR a month.", false},
		{"the same price of two projects is two subjects", "Atlas costs 5000 EUR.", "Borealis costs 7000 EUR.", false},
		{"бюджет и аренда в России — два предмета", "Бюджет проекта Атлас — 5000 евро.", "Аренда склада Борей стоит 7000 евро в месяц.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cites := []schemas.Citation{cite("d1", "2024-03-12T10:00:00Z", tt.x), cite("d2", "2024-04-02T09:00:00Z", tt.y)}
			cites[1].Spans = []schemas.TextSpan{{Start: 41, End: 80}}
			note := answer.MarkNewer(analyzer(t), cites, "en")
			if got := note != ""; got != tt.marked || (cites[1].Recency == schemas.RecencyNewer) != tt.marked {
				t.Errorf("marked %q %q, note %q; want marked %v", cites[0].Recency, cites[1].Recency, note, tt.marked)
			}
		})
	}
}

func TestOfThreeDisagreeingSourcesOnlyTheNewestIsNewer(t *testing.T) {
	cites := []schemas.Citation{cite("d1", "2024-01-05T00:00:00Z", "The Atlas project budget is 3000 EUR."),
		cite("d2", "2024-03-12T00:00:00Z", "The Atlas project budget is 5000 EUR."),
		cite("d3", "2024-04-02T00:00:00Z", "The Atlas project budget is 7000 EUR.")}
	answer.MarkNewer(analyzer(t), cites, "en")
	if got := []string{cites[0].Recency, cites[1].Recency, cites[2].Recency}; strings.Join(got, ",") != "older,older,newer" {
		t.Errorf("recencies %v, want older, older, newer", got)
	}
}

func TestSourceLabelGivesTheDateAndTheRecencyInTheAnswersLanguage(t *testing.T) {
	c := schemas.Citation{Updated: "2024-04-02T09:00:00Z", Recency: schemas.RecencyNewer}
	old := schemas.Citation{Updated: "2024-03-12T09:00:00Z", Recency: schemas.RecencyOlder}
	for _, tt := range []struct {
		c          schemas.Citation
		lang, want string
	}{{c, "en", "2024-04-02, newer"}, {c, "ru", "2024-04-02, новее"}, {old, "en", "2024-03-12, older"}, {old, "ru", "2024-03-12, старее"},
		{schemas.Citation{Updated: "2024-03-12T09:00:00Z"}, "ru", "2024-03-12"}, {schemas.Citation{}, "en", ""}} {
		if got := answer.SourceLabel(tt.c, tt.lang); got != tt.want {
			t.Errorf("SourceLabel(%+v, %s) = %q, want %q", tt.c, tt.lang, got, tt.want)
		}
	}
}

// budgetContexts are two notes on the Atlas budget, dated a month apart.
func budgetContexts(ru bool) []schemas.Context {
	a, b := "The Atlas project budget is 5000 EUR.", "The Atlas project budget is 7000 EUR."
	if ru {
		a, b = "Бюджет проекта Атлас — 5000 евро.", "Бюджет проекта Атлас — 7000 евро."
	}
	return []schemas.Context{
		{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Title: "Atlas, March", BlockID: "20240312100000-aaaaaaa",
			BlockIDs: []string{"20240312100000-aaaaaaa"}, Text: a, Updated: "2024-03-12T10:00:00Z"}},
		{Passage: schemas.Passage{ChunkID: "c2", DocID: "d2", Title: "Atlas, April", BlockID: "20240402090000-bbbbbbb",
			BlockIDs: []string{"20240402090000-bbbbbbb"}, Text: b, Updated: "2024-04-02T09:00:00Z"}},
	}
}

func TestAScriptedModelCitingBothBudgetsGetsTheNewerOneMarked(t *testing.T) {
	tests := []struct {
		name, lang, question, reply, wantNote string
	}{
		{"English", "en", "What is the Atlas budget?",
			"The notes say «The Atlas project budget is 5000 EUR.» [1]. A later note says «The Atlas project budget is 7000 EUR.» [2].",
			"Sources [1] (2024-03-12) and [2] (2024-04-02) disagree; [2] is newer."},
		{"Russian", "ru", "Какой бюджет у проекта Атлас?",
			"В заметках сказано: «Бюджет проекта Атлас — 5000 евро.» [1]. В другой заметке: «Бюджет проекта Атлас — 7000 евро.» [2].",
			"Источники [1] (2024-03-12) и [2] (2024-04-02) расходятся; [2] новее."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.SetAnswer(tt.reply)
			var streamed strings.Builder
			a := &answer.Answerer{Router: router(t, srv), Analyzer: analyzer(t), Emit: func(_ context.Context, tok *schemas.AnswerToken) error {
				if tok.Restart {
					streamed.Reset()
				}
				streamed.WriteString(tok.Text)
				return nil
			}}
			q := query()
			q.Question, q.Lang, q.Contexts = tt.question, tt.lang, budgetContexts(tt.lang == "ru")
			done := a.Answer(context.Background(), q)
			if done.Mode != schemas.AnswerLLM || len(done.Citations) != 2 {
				t.Fatalf("mode %s, %d citations, reasons %v: %q", done.Mode, len(done.Citations), done.Reasons, done.Answer)
			}
			if done.Citations[0].Recency != schemas.RecencyOlder || done.Citations[1].Recency != schemas.RecencyNewer {
				t.Errorf("recencies %q, %q; want older, newer", done.Citations[0].Recency, done.Citations[1].Recency)
			}
			if !strings.HasSuffix(done.Answer, "\n\n"+tt.wantNote) {
				t.Errorf("answer %q does not end with %q", done.Answer, tt.wantNote)
			}
			if streamed.String() != done.Answer {
				t.Errorf("streamed %q, final %q", streamed.String(), done.Answer)
			}
		})
	}
}
