package answer_test

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

func contexts() []schemas.Context {
	return []schemas.Context{
		{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Title: "Птицы", BlockID: "20210808180117-abc1234",
			BlockIDs: []string{"20210808180117-abc1234"}, Text: "Вороны используют инструменты для добычи пищи. Они живут стаями."}},
		{Passage: schemas.Passage{ChunkID: "c2", DocID: "d2", Title: "Garden", Path: "/notes/garden.md", BlockID: "md-1#b2",
			BlockIDs: []string{"md-1#b2", "md-1#b3"}, Text: "Tomatoes need sun, water and stakes. Ёлки зелёные круглый год."}},
	}
}

func analyzer(t *testing.T) *analysis.Analyzer {
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCitationsAreKeptOnlyWhenTheirContextSupportsTheSentence(t *testing.T) {
	a := analyzer(t)
	text := "Вороны умеют использовать инструменты [1]. Совы летают бесшумно [1]. Помидорам нужно солнце [7]. Tomatoes need stakes [2]."
	v := answer.Verify(a, text, contexts())
	if len(v.Citations) != 2 || v.Citations[0].BlockID != "20210808180117-abc1234" || v.Citations[1].BlockID != "md-1#b2" {
		t.Fatalf("citations = %+v", v.Citations)
	}
	if q := v.Citations[0].Quote; q != "Вороны используют инструменты для добычи пищи." {
		t.Errorf("quote = %q, want the context's sentence that supports the claim", q)
	}
	if v.Citations[0].Link != "siyuan://blocks/20210808180117-abc1234" || v.Citations[1].Link != "file:///notes/garden.md" {
		t.Errorf("links = %q, %q", v.Citations[0].Link, v.Citations[1].Link)
	}
	reasons := map[string]string{}
	for _, d := range v.Dropped {
		reasons[d.Marker+" "+strings.Fields(d.Sentence)[0]] = d.Reason
	}
	if reasons["1 Совы"] != answer.DropUnsupported || reasons["7 Помидорам"] != answer.DropNotRetrieved || len(v.Dropped) != 2 {
		t.Errorf("dropped = %+v", v.Dropped)
	}
	if len(v.Flagged) != 2 || !strings.HasPrefix(v.Flagged[0], "Совы") {
		t.Errorf("flagged = %q", v.Flagged)
	}
	if strings.Contains(v.Text, "[7]") || strings.Count(v.Text, "[1]") != 1 || !strings.Contains(v.Text, "stakes [2].") {
		t.Errorf("text = %q: unsupported markers must go, supported ones stay", v.Text)
	}
	if v.Coverage != 0.5 {
		t.Errorf("coverage = %v, want 2 of 4 sentences", v.Coverage)
	}
}

func TestAQuoteIsFoundWhateverItsCasePunctuationAndYo(t *testing.T) {
	a := analyzer(t)
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{`В заметке сказано: «елки, зеленые КРУГЛЫЙ год» [2].`, true},
		{`В заметке сказано: "вороны используют инструменты" [20210808180117-abc1234].`, true},
		{`В заметке сказано: «вороны строят мосты из веток» [1].`, false},
	} {
		v := answer.Verify(a, tc.text, contexts())
		if got := len(v.Citations) == 1; got != tc.ok {
			t.Errorf("%s: citations %+v, dropped %+v", tc.text, v.Citations, v.Dropped)
		}
	}
}

func TestAMarkerAfterTheFullStopBelongsToItsSentence(t *testing.T) {
	a := analyzer(t)
	v := answer.Verify(a, "Tomatoes need sun and water. [2] Crows live in flocks [1, 2].", contexts())
	if len(v.Citations) != 1 || v.Citations[0].BlockID != "md-1#b2" {
		t.Fatalf("citations = %+v (dropped %+v)", v.Citations, v.Dropped)
	}
	// "Crows live in flocks" is not in English in context 1 and not in 2:
	// the sentence goes, and context 2 becomes citation 1.
	if len(v.Flagged) != 1 || !strings.HasPrefix(v.Flagged[0], "Crows") {
		t.Errorf("flagged = %q", v.Flagged)
	}
	if v.Text != "Tomatoes need sun and water. [1]" {
		t.Errorf("text = %q", v.Text)
	}
}

func TestAnAnswerWithoutMarkersCitesNothingAndSupportsNothing(t *testing.T) {
	v := answer.Verify(analyzer(t), "Just words. No citations here.", contexts())
	if len(v.Citations) != 0 || len(v.Unsupported) != 2 || v.Coverage != 0 || v.Confidence != 0 || v.Text != "" {
		t.Errorf("%+v", v)
	}
	for _, u := range v.Unsupported {
		if u.Reason != answer.DropUncited {
			t.Errorf("unsupported %q: reason %q, want %q", u.Text, u.Reason, answer.DropUncited)
		}
	}
}
