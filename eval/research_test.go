package eval_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/schemas"
)

func TestTheResearchSetPlantsFourDisagreementsInNotesThatSayThem(t *testing.T) {
	s, err := eval.LoadResearchSet("testdata/research-disagree.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Questions) != 6 || len(s.Disagreements) != 4 {
		t.Fatalf("%d questions, %d disagreements", len(s.Questions), len(s.Disagreements))
	}
	langs := map[string]int{}
	for _, q := range s.Questions {
		langs[q.Lang]++
		if len(q.Translations) == 0 {
			t.Errorf("%s has no translation", q.ID)
		}
	}
	if langs["ru"] < 2 || langs["en"] < 2 {
		t.Errorf("languages %v: want Russian and English questions", langs)
	}
	blocks, err := eval.CollectBlocks(nil, s.Notes[:1])
	if err != nil {
		t.Fatal(err)
	}
	// Every side's words are in exactly one block of the notes.
	for _, d := range s.Disagreements {
		for _, side := range d.Sides {
			n := 0
			for _, text := range blocks {
				if strings.Contains(text, side.Says) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %q is in %d blocks, want 1", d.ID, side.Says, n)
			}
		}
	}
	bad := t.TempDir() + "/bad.json"
	os.WriteFile(bad, []byte(`{"questions": [{"id": "q", "question": "Q?", "disagreements": ["nope"]}]}`), 0o644)
	if _, err := eval.LoadResearchSet(bad); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a question naming an unplanted disagreement: %v", err)
	}
}

// The notes: two meeting notes that disagree on a date, and a recipe.
var rsBlocks = map[string]string{
	"k1": "The Aurora mobile app launch is planned for 15 March 2025.",
	"k2": "Maria leads the backend and Tom leads the design.",
	"s1": "The Aurora mobile app launch is planned for 2 June 2025, after the payment provider review.",
	"r1": "Mix buckwheat flour, milk and water in the ratio 1:2:2 by volume.",
}

var rsPlanted = []eval.PlantedDisagreement{{ID: "launch", Sides: []eval.DisagreementSide{{Says: "15 March 2025"}, {Says: "2 June 2025"}}}}

func label(text, l, block, sentence string) eval.ResearchLabel {
	changed := strings.HasPrefix(l, "changed") || l == "added_clause"
	frag := ""
	if changed {
		frag = "2428"
	}
	return eval.ResearchLabel{Text: text, Label: l, SourceBlock: block, SourceSentence: sentence, Supported: !changed, Changed: changed, Fragment: frag}
}

var rsLabels = []eval.ResearchLabel{
	label(rsBlocks["k1"], "faithful", "k1", rsBlocks["k1"]),
	label(rsBlocks["s1"], "other_side", "s1", rsBlocks["s1"]),
	label("Maria leads the backend and Tom leads the design.", "neighbour_block", "k2", rsBlocks["k2"]),
	label("The Aurora mobile app launch is planned for 15 March 2428.", "changed_year", "k1", rsBlocks["k1"]),
}

func report(sources []string, sections [][]schemas.ReportSentence, dis []schemas.ReportSentence) *schemas.ResearchReport {
	rep := &schemas.ResearchReport{Mode: schemas.ResearchSynthesis, Disagreements: dis}
	for _, s := range sources {
		rep.Sources = append(rep.Sources, schemas.Citation{BlockID: s})
	}
	for _, sec := range sections {
		rep.Sections = append(rep.Sections, schemas.ReportSection{Title: "t", Sentences: sec})
	}
	return rep
}

func sent(text string, sources ...int) schemas.ReportSentence {
	return schemas.ReportSentence{Text: text, Sources: sources}
}

func TestScoreResearchJudgesSentencesByTheLabelsAndTheBlocks(t *testing.T) {
	sources := []string{"k1", "k2", "s1", "r1"}
	cases := []struct {
		name                    string
		sections                [][]schemas.ReportSentence
		dis                     []schemas.ReportSentence
		stated, cited, reported int
		reached                 []string
		repeated                int
	}{
		{"a faithful fact cited to its block is stated", [][]schemas.ReportSentence{{sent(rsBlocks["k1"], 1)}}, nil, 1, 1, 0, nil, 0},
		{"a true fact cited to the neighbouring block is not", [][]schemas.ReportSentence{{sent("Maria leads the backend and Tom leads the design.", 1)}}, nil, 0, 1, 0, nil, 0},
		{"the same fact re-cited to its own block is", [][]schemas.ReportSentence{{sent("Maria leads the backend and Tom leads the design.", 2)}}, nil, 1, 1, 0, nil, 0},
		{"a changed year reaches the report and is not stated", [][]schemas.ReportSentence{{sent("The Aurora mobile app launch is planned for 15 March 2428.", 1)}}, nil, 0, 1, 0,
			[]string{"The Aurora mobile app launch is planned for 15 March 2428."}, 0},
		{"both sides side by side, each cited, report the disagreement", nil,
			[]schemas.ReportSentence{sent(strings.TrimSuffix(rsBlocks["k1"], ".")+" — but another note says: "+rsBlocks["s1"], 1, 3)}, 1, 1, 1, nil, 0},
		{"a disagreement sentence citing one side only is not stated and does not report it", nil,
			[]schemas.ReportSentence{sent(strings.TrimSuffix(rsBlocks["k1"], ".")+" — but another note says: "+rsBlocks["s1"], 1)}, 0, 1, 0, nil, 0},
		{"a passage no fact made is judged by its cited block's words", [][]schemas.ReportSentence{{sent("Mix buckwheat flour, milk and water in the ratio 1:2:2 by volume.", 4)},
			{sent("Buckwheat needs 1:3:1.", 4)}}, nil, 1, 2, 0, nil, 0},
		{"one fact stated twice in the sections is a repeat", [][]schemas.ReportSentence{{sent(rsBlocks["k1"], 1)}, {sent("«"+strings.TrimSuffix(rsBlocks["k1"], ".")+"»", 1)}},
			nil, 2, 2, 0, nil, 1},
		{"a sentence without a citation is not counted", [][]schemas.ReportSentence{{sent("The notes say a lot.")}}, nil, 0, 0, 0, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := eval.ScoreResearch(report(sources, tc.sections, tc.dis), rsLabels, rsBlocks, rsPlanted)
			if sc.StatedSentences != tc.stated || sc.CitedSentences != tc.cited || sc.Reported != tc.reported || sc.Planted != 1 ||
				!slices.Equal(sc.ChangedReached, tc.reached) || sc.ChangedFacts != 1 || sc.Repeated != tc.repeated {
				t.Errorf("score %+v; want %d of %d stated, %d reported, changed reached %q, %d repeated", sc, tc.stated, tc.cited, tc.reported, tc.reached, tc.repeated)
			}
		})
	}
}

func TestSumResearchGivesThePrecisionAndTheCallsPerResearch(t *testing.T) {
	s := eval.SumResearch("x", "labels", []eval.ResearchScore{
		{Mode: "synthesis", CitedSentences: 4, StatedSentences: 3, Planted: 2, Reported: 1, Calls: 10, ChangedFacts: 2, ChangedReached: []string{"a"}},
		{Mode: "evidence_only", CitedSentences: 4, StatedSentences: 4, Planted: 1, Reported: 1, Calls: 20},
	})
	if s.Precision != 0.875 || s.Reported != 2 || s.Planted != 3 || s.CallsPerResearch != 15 || s.ChangedReached != 1 || s.ChangedFacts != 2 ||
		s.Modes["synthesis"] != 1 || s.Modes["evidence_only"] != 1 {
		t.Errorf("%+v", s)
	}
}
