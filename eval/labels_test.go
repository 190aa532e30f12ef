package eval

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
)

// The notes of the label tests: the file-history block, a block that
// repeats its sentence, and the snapshot block, in English and Russian.
var labelBlocks = map[string]string{
	"days":   "SiYuan keeps file history for 30 days by default.",
	"copy":   "Remember: SiYuan keeps file history for 30 days by default. Older history is removed.",
	"snap":   "A snapshot is uploaded every 10 minutes.",
	"ru":     "SiYuan хранит историю файлов 30 дней по умолчанию.",
	"ruSnap": "Снимок загружается каждые 10 минут.",
}

const (
	faithfulEN = "SiYuan keeps file history for 30 days by default."
	changedEN  = "SiYuan keeps file history for 97 days by default."
	faithfulRU = "SiYuan хранит историю файлов 30 дней по умолчанию."
	changedRU  = "SiYuan хранит историю файлов 97 дней по умолчанию."
)

func label(sentence, kind, source, sourceSentence string, request int) Label {
	return Label{Sentence: sentence, Label: kind, SourceBlock: source, SourceSentence: sourceSentence, Supported: llmtest.SupportedLabel(kind), Request: request}
}

func TestAShownSentenceMatchesTheClaimItCameFrom(t *testing.T) {
	labels := []Label{
		label(faithfulEN, "faithful", "days", faithfulEN, 1),
		label("A snapshot is uploaded every 37 minutes.", "changed_number", "snap", "A snapshot is uploaded every 10 minutes.", 1),
		label("According to the notes, «SiYuan keeps file history for 30 days by default», but only in the paid edition.", "appended_condition", "days", faithfulEN, 1),
		label(changedRU, "changed_number", "ru", faithfulRU, 1),
		label("Alt+5 opens the diary.", "faithful", "d", "Alt+5 opens the diary.", 1),
	}
	cases := []struct {
		name, shown string
		want        int
	}{
		{"the same text with a marker", "SiYuan keeps file history for 30 days by default [1].", 0},
		{"the same text in other case and punctuation", "siyuan keeps file-history for 30 days, by default", 0},
		{"one number changed is the changed claim", "A snapshot is uploaded every 37 minutes [2].", 1},
		{"the condition kept", "According to the notes, «SiYuan keeps file history for 30 days by default», but only in the paid edition [1].", 2},
		{"the condition cut away matches no claim: it is counted as an unmatched cited sentence", "According to the notes, «SiYuan keeps file history for 30 days by default» [1].", -1},
		{"a Russian claim", "SiYuan хранит историю файлов 97 дней по умолчанию [1].", 3},
		{"a short sentence with one word changed", "Alt+7 opens the diary [3].", 4},
		{"an unrelated sentence", "The weather is fine today [1].", -1},
		{"markers alone", "[1]", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchClaim(tc.shown, labels); got != tc.want {
				t.Errorf("MatchClaim(%q) = %d, want %d", tc.shown, got, tc.want)
			}
		})
	}
	t.Run("the same claim of two requests goes to the later one", func(t *testing.T) {
		two := []Label{label(faithfulEN, "faithful", "days", faithfulEN, 1), label(faithfulEN, "faithful", "days", faithfulEN, 2)}
		if got := MatchClaim(faithfulEN, two); got != 1 {
			t.Errorf("got %d, want 1", got)
		}
	})
}

func TestAnAnswerSplitsIntoShownSentencesWithTheirCitations(t *testing.T) {
	done := &schemas.AnswerDone{
		Answer: "According to the notes, «Version 2.5. is out» [1]. It lives in «workspace/history/» [2][3]. Then e.g. 1.5 GB. [1]\nLast one",
		Citations: []schemas.Citation{
			{BlockID: "a", Number: 1},
			{BlockID: "b", Number: 2},
			{BlockID: "c", Number: 3, Spans: []schemas.TextSpan{{Start: 0, End: 5}}},
			{BlockID: "d"}, // neither spans nor a number: the whole answer
		},
	}
	got := ShownSentences(done)
	want := []struct {
		text  string
		cites []int
	}{
		{"According to the notes, «Version 2.5. is out» [1].", []int{0, 2, 3}},
		{"It lives in «workspace/history/» [2][3].", []int{1, 2, 3}},
		{"Then e.g.", []int{3}},
		{"1.5 GB. [1]", []int{0, 3}},
		{"Last one", []int{3}},
	}
	if len(got) != len(want) {
		t.Fatalf("sentences %+v, want %d", got, len(want))
	}
	runes := []rune(done.Answer)
	for i, w := range want {
		if got[i].Text != w.text || string(runes[got[i].Start:got[i].End]) != w.text || !equalInts(got[i].Citations, w.cites) {
			t.Errorf("sentence %d: %q [%d:%d] cites %v; want %q cites %v", i, got[i].Text, got[i].Start, got[i].End, got[i].Citations, w.text, w.cites)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cited is an answer in mode llm whose sentences are cited in order: the
// i-th sentence to blocks[i] with marker [i+1] and a span over it.
func cited(confidence float64, sentences []string, blocks ...string) *schemas.AnswerDone {
	done := &schemas.AnswerDone{Mode: schemas.AnswerLLM, Confidence: confidence}
	var b strings.Builder
	for i, s := range sentences {
		if i > 0 {
			b.WriteString(" ")
		}
		start := len([]rune(b.String()))
		text := strings.TrimSuffix(s, ".")
		b.WriteString(text + " [" + string(rune('1'+i)) + "].")
		if i < len(blocks) && blocks[i] != "" {
			done.Citations = append(done.Citations, schemas.Citation{BlockID: blocks[i], Number: len(done.Citations) + 1,
				Spans: []schemas.TextSpan{{Start: start, End: len([]rune(b.String()))}}})
		}
	}
	done.Answer = b.String()
	return done
}

func TestLabelScoringCountsWhatTheAnswerShowsAgainstTheLabels(t *testing.T) {
	twoClaims := []Label{label(faithfulEN, "faithful", "days", faithfulEN, 1),
		label("A snapshot is uploaded every 37 minutes.", "changed_number", "snap", "A snapshot is uploaded every 10 minutes.", 1)}
	cases := []struct {
		name   string
		done   *schemas.AnswerDone
		labels []Label
		want   LabelScore // Shown compared by size and kept count
		kept   int        // labels shown with a correct citation
	}{
		{"a changed number shown with a citation is a false claim shown as supported",
			cited(0.9, []string{faithfulEN, "A snapshot is uploaded every 37 minutes."}, "days", "snap"), twoClaims,
			LabelScore{Citations: 2, CorrectCitations: 1, FalseSupported: 1, FalseByLabel: map[string]int{"changed_number": 1}, Faithful: 1, FaithfulKept: 1}, 1},
		{"the changed number removed, only the faithful claim is shown and kept",
			cited(0.9, []string{faithfulEN}, "days"), twoClaims,
			LabelScore{Citations: 1, CorrectCitations: 1, FalseByLabel: map[string]int{}, Faithful: 1, FaithfulKept: 1}, 1},
		{"a changed number left without a citation is not shown as supported",
			cited(0.9, []string{faithfulEN, "A snapshot is uploaded every 37 minutes."}, "days", ""), twoClaims,
			LabelScore{Citations: 1, CorrectCitations: 1, FalseByLabel: map[string]int{}, Faithful: 1, FaithfulKept: 1}, 1},
		{"a faithful claim cited to a block that does not hold it is not kept",
			cited(0.9, []string{faithfulEN}, "snap"), twoClaims,
			LabelScore{Citations: 1, FalseByLabel: map[string]int{}, Faithful: 1}, 0},
		{"a faithful claim cited to another block holding its sentence is kept",
			cited(0.9, []string{faithfulEN}, "copy"), twoClaims,
			LabelScore{Citations: 1, CorrectCitations: 1, FalseByLabel: map[string]int{}, Faithful: 1, FaithfulKept: 1}, 1},
		{"an off-by-one citation left to the neighbour is supported but not kept",
			cited(0.9, []string{faithfulEN}, "snap"), []Label{label(faithfulEN, "off_by_one_citation", "days", faithfulEN, 1)},
			LabelScore{Citations: 1, FalseByLabel: map[string]int{}, Faithful: 1}, 0},
		{"an off-by-one citation repaired is kept",
			cited(0.9, []string{faithfulEN}, "days"), []Label{label(faithfulEN, "off_by_one_citation", "days", faithfulEN, 1)},
			LabelScore{Citations: 1, CorrectCitations: 1, FalseByLabel: map[string]int{}, Faithful: 1, FaithfulKept: 1}, 1},
		{"a Russian claim translated from an English note is kept with the English block",
			cited(0.9, []string{"В заметках сказано: «" + strings.TrimSuffix(faithfulEN, ".") + "»."}, "days"),
			[]Label{label("В заметках сказано: «"+strings.TrimSuffix(faithfulEN, ".")+"».", "translated", "days", faithfulEN, 1)},
			LabelScore{Citations: 1, CorrectCitations: 1, FalseByLabel: map[string]int{}, Faithful: 1, FaithfulKept: 1}, 1},
		{"a Russian changed number shown with its source block is false, and its citation not correct",
			cited(0.9, []string{changedRU}, "ru"), []Label{label(changedRU, "changed_number", "ru", faithfulRU, 1)},
			LabelScore{Citations: 1, FalseSupported: 1, FalseByLabel: map[string]int{"changed_number": 1}}, 0},
		{"a loop shown three times is one false claim",
			cited(0.97, []string{faithfulEN, faithfulEN, faithfulEN}, "days", "days", "days"), []Label{label(faithfulEN, "loop", "days", faithfulEN, 1)},
			LabelScore{Citations: 1, FalseSupported: 1, FalseByLabel: map[string]int{"loop": 1}}, 0},
		{"a cited sentence that matches no claim is counted apart",
			cited(0.9, []string{"The sky is green in the notes."}, "days"), twoClaims,
			LabelScore{UnmatchedCited: 1, FalseByLabel: map[string]int{}, Faithful: 1}, 0},
		{"the faithful claims counted are the latest request's",
			cited(0.9, []string{faithfulEN}, "days"),
			[]Label{label("According to the notes, «x»", "wrong_language", "days", faithfulEN, 1), label(faithfulEN, "faithful", "days", faithfulEN, 2),
				label("A snapshot is uploaded every 10 minutes.", "faithful", "snap", "A snapshot is uploaded every 10 minutes.", 2)},
			LabelScore{Citations: 1, CorrectCitations: 1, FalseByLabel: map[string]int{}, Faithful: 2, FaithfulKept: 1}, 1},
		{"search-only passages show no claim",
			&schemas.AnswerDone{Mode: schemas.AnswerSearchOnly, Answer: changedEN, Citations: []schemas.Citation{{BlockID: "days"}}},
			[]Label{label(changedEN, "changed_number", "days", faithfulEN, 1)},
			LabelScore{FalseByLabel: map[string]int{}}, 0},
		{"an abstaining answer shows no claim",
			&schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: changedEN + " [1].", Reasons: []string{answer.ReasonNotInNotes + ": x"},
				Citations: []schemas.Citation{{BlockID: "days", Number: 1}}},
			[]Label{label(changedEN, "changed_number", "days", faithfulEN, 1)},
			LabelScore{FalseByLabel: map[string]int{}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ScoreLabels(tc.done, tc.labels, labelBlocks)
			kept := 0
			for _, k := range got.Shown {
				if k {
					kept++
				}
			}
			if kept != tc.kept || got.UnmatchedCited != tc.want.UnmatchedCited || got.Citations != tc.want.Citations ||
				got.CorrectCitations != tc.want.CorrectCitations || got.FalseSupported != tc.want.FalseSupported ||
				got.Faithful != tc.want.Faithful || got.FaithfulKept != tc.want.FaithfulKept || !equalCounts(got.FalseByLabel, tc.want.FalseByLabel) {
				t.Errorf("answer %q:\ngot  %+v (kept %d)\nwant %+v (kept %d)", tc.done.Answer, got, kept, tc.want, tc.kept)
			}
		})
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestAUCCountsTiesAsHalf(t *testing.T) {
	cases := []struct {
		name     string
		pos, neg []float64
		want     float64
		ok       bool
	}{
		{"perfect separation", []float64{0.9, 0.8}, []float64{0.2, 0.1}, 1, true},
		{"reversed", []float64{0.1}, []float64{0.9, 0.5}, 0, true},
		// pairs: 0.9 beats both (2), each 0.5 ties 0.5 (0.5) and beats
		// 0.1 (1): 2 + 1.5 + 1.5 = 5 of 6.
		{"ties count half", []float64{0.9, 0.5, 0.5}, []float64{0.5, 0.1}, 5.0 / 6, true},
		{"all tied", []float64{1, 1}, []float64{1}, 0.5, true},
		{"no negatives", []float64{0.5}, nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AUC(tc.pos, tc.neg)
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("AUC = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestTheAnswersOwnWordsDecideItsLanguage(t *testing.T) {
	cases := []struct{ answer, want string }{
		{"В заметках сказано: «SiYuan keeps file history for 30 days by default» [1].", "ru"},
		{"According to the notes, «SiYuan хранит историю файлов 30 дней» [1].", "en"},
		{"«SiYuan keeps file history for 30 days» [1].", ""},
		{"История хранится «30 days [1].", "ru"},
	}
	for _, tc := range cases {
		if got := AnswerLanguage(tc.answer); got != tc.want {
			t.Errorf("AnswerLanguage(%q) = %q, want %q", tc.answer, got, tc.want)
		}
	}
}

// TestRunAnswersScoresAgainstTheLabels runs four questions: a faithful
// answer (confidence 0.6), one showing a changed number (0.9), a Russian
// question answered in English with a faithful quote (0.5), an
// unanswerable question abstained; then the report's fields, in the JSON
// by their names.
func TestRunAnswersScoresAgainstTheLabels(t *testing.T) {
	set := &Set{Name: "labels", Questions: []Question{
		{ID: "en-1", Question: "How long is file history kept?", Lang: "en", Gold: []string{"days"}, Answers: []string{"30 days"}},
		{ID: "en-2", Question: "How often is a snapshot uploaded?", Lang: "en", Gold: []string{"snap"}, Answers: []string{"10 minutes"}},
		{ID: "ru-1", Question: "Как долго хранится история файлов?", Lang: "ru", Gold: []string{"days"}, Answers: []string{"30 days"}},
		{ID: "u-1", Question: "What is the capital of Australia?", Lang: "en", Answers: []string{}, Unanswerable: true},
	}}
	en3 := "According to the notes, «SiYuan keeps file history for 30 days by default»."
	answers := map[string]*schemas.AnswerDone{
		"en-1": cited(0.6, []string{faithfulEN}, "days"),
		"en-2": cited(0.9, []string{"A snapshot is uploaded every 37 minutes."}, "snap"),
		"ru-1": cited(0.5, []string{en3}, "days"),
		"u-1":  {Mode: schemas.AnswerLLM, Answer: "The notes do not say anything about this.", Reasons: []string{answer.ReasonNotInNotes + ": none"}},
	}
	labels := map[string][]Label{
		"How long is file history kept?":     {label(faithfulEN, "faithful", "days", faithfulEN, 1)},
		"How often is a snapshot uploaded?":  {label("A snapshot is uploaded every 37 minutes.", "changed_number", "snap", "A snapshot is uploaded every 10 minutes.", 2)},
		"Как долго хранится история файлов?": {label(en3, "wrong_language", "days", faithfulEN, 3)},
	}
	ask := func(_ context.Context, q Question) (*schemas.AnswerDone, error) { return answers[q.ID], nil }
	rep, err := RunAnswers(context.Background(), ask, set, labelBlocks, AnswerOptions{LabelSource: "test",
		Labels: func(_ context.Context, q string) ([]Label, error) { return labels[q], nil }})
	if err != nil {
		t.Fatal(err)
	}
	l := rep.LabelReport
	if l == nil || rep.Labels != "test" {
		t.Fatalf("no label report: %+v", rep)
	}
	if l.LabelledClaims != 3 || l.ShownCitedClaims != 3 || l.FalseSupported != 2 || l.FalseSupportedShare != 0.6667 ||
		l.FalseSupportedByLabel["changed_number"] != 1 || l.FalseSupportedByLabel["wrong_language"] != 1 {
		t.Errorf("claims %d shown %d false %d (%v) %v; want 3, 3, 2 (0.6667), one changed number and one wrong language",
			l.LabelledClaims, l.ShownCitedClaims, l.FalseSupported, l.FalseSupportedShare, l.FalseSupportedByLabel)
	}
	if l.LabelledCitations != 3 || l.CorrectCitations != 1 || l.CitationPrecision != 0.3333 {
		t.Errorf("citations %d correct %d precision %v; want 3, 1, 0.3333", l.LabelledCitations, l.CorrectCitations, l.CitationPrecision)
	}
	if l.FaithfulClaims != 1 || l.FaithfulKeptClaims != 1 || l.FaithfulKept != 1 {
		t.Errorf("faithful %d kept %d (%v)", l.FaithfulClaims, l.FaithfulKeptClaims, l.FaithfulKept)
	}
	// The clean answer (0.6) against the false ones (0.9, 0.5): it beats
	// one of two.
	if l.ConfidenceAUC == nil || *l.ConfidenceAUC != 0.5 || l.ConfidenceAUCClean != 1 || l.ConfidenceAUCFalse != 2 {
		t.Errorf("confidence AUC %v over %d clean and %d false, want 0.5 over 1 and 2", l.ConfidenceAUC, l.ConfidenceAUCClean, l.ConfidenceAUCFalse)
	}
	if rep.WrongLanguage != 1 || rep.LanguageChecked != 4 || rep.Abstention != 1 {
		t.Errorf("wrong language %d of %d checked, abstention %v; want 1 of 4, 1", rep.WrongLanguage, rep.LanguageChecked, rep.Abstention)
	}
	misses := strings.Join(rep.Misses, "\n")
	if !strings.Contains(misses, "en-2: mode llm, confidence 0.90, shows a false claim with a citation: changed_number") ||
		!strings.Contains(misses, "ru-1: the question is in ru, the answer (mode llm) in en") {
		t.Errorf("misses %q", rep.Misses)
	}
	raw, _ := json.Marshal(rep)
	var keys map[string]any
	_ = json.Unmarshal(raw, &keys)
	for _, k := range []string{"labels", "false_supported", "false_supported_share", "citation_precision", "faithful_kept", "confidence_auc",
		"abstention", "wrong_language", "gold_citation_precision", "overlap_support_precision", "unmatched_cited_sentences"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("the JSON has no %q: %s", k, raw)
		}
	}

	merged := MergeAnswers("all", []AnswerReport{rep, rep})
	if m := merged.LabelReport; m == nil || m.FalseSupported != 4 || m.ConfidenceAUC == nil || *m.ConfidenceAUC != 0.5 || m.ConfidenceAUCClean != 2 {
		t.Errorf("merged label report %+v", m)
	}

	bare, err := RunAnswers(context.Background(), ask, set, labelBlocks, AnswerOptions{NoLabels: "no scripted provider"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(bare)
	if strings.Contains(string(raw), `"false_supported"`) || strings.Contains(string(raw), `"citation_precision"`) ||
		!strings.Contains(string(raw), `"labels_missing":"no scripted provider"`) {
		t.Errorf("without labels the label fields must be absent and say why: %s", raw)
	}
}

// TestTheScriptedProvidersClaimsReadAsLabels reads the claims of a
// scripted provider over HTTP, as eval --labels does.
func TestTheScriptedProvidersClaimsReadAsLabels(t *testing.T) {
	srv := llmtest.NewScripted(t, llmtest.ScriptOptions{Behaviour: llmtest.ChangeNumber, Blocks: map[string]string{"20240101000000-aaaaaaa": faithfulEN}})
	question := "How many days does SiYuan keep file history?"
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{
		{"role": "system", "content": "Answer in English."},
		{"role": "user", "content": "<context n=\"1\" block=\"20240101000000-aaaaaaa\" title=\"t\" section=\"\">\n" + faithfulEN + "\n</context>\n\nQuestion: " + question}}})
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got, err := HTTPLabels(srv.ClaimsURL())(context.Background(), question)
	if err != nil {
		t.Fatal(err)
	}
	want := Label{Question: question, Sentence: changedEN, Label: "changed_number", SourceBlock: "20240101000000-aaaaaaa", SourceSentence: faithfulEN, Request: 1}
	if len(got) != 1 || got[0] != want {
		t.Errorf("labels %+v, want %+v", got, want)
	}
	if _, err := HTTPLabels(srv.URL())(context.Background(), question); err == nil || !strings.Contains(err.Error(), "/exocortex/claims") {
		t.Errorf("a URL that is not the claims': %v", err)
	}
}
