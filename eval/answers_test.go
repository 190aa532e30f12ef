package eval

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

var testBlocks = map[string]string{
	"h1": "File history",
	"p1": "File history: saved in the `workspace/history/` folder as the original file",
	"p2": "Data snapshot: saved in the `workspace/repo/` folder",
}

var historyQ = Question{ID: "q", Question: "Where is file history saved?", Gold: []string{"p1"}, Answers: []string{"workspace/history/"}}
var capitalQ = Question{ID: "u", Question: "What is the capital of Australia?", Answers: []string{}, Unanswerable: true}

func TestScoreAnswer(t *testing.T) {
	span := func(a, b int) []schemas.TextSpan { return []schemas.TextSpan{{Start: a, End: b}} }
	cases := []struct {
		name string
		q    Question
		done schemas.AnswerDone
		want AnswerScore
	}{
		{"a citation of the gold block is correct and supports its claim", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: "It is in «workspace/history/» [1].",
				Citations: []schemas.Citation{{BlockID: "p1", Number: 1, Quote: "workspace/history/", Spans: span(0, 33)}}},
			AnswerScore{Answered: true, Citations: 1, Correct: 1, Claims: 1, Supported: 1, SupportCitations: 1, AllClaims: 1, SupportClaims: 1}},
		{"the chunk's heading block is not the block that holds the answer", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: "It is in «workspace/history/» [1].",
				Citations: []schemas.Citation{{BlockID: "h1", Number: 1, Quote: "workspace/history/", Spans: span(0, 33)}}},
			AnswerScore{Answered: true, Citations: 1, Correct: 0, Claims: 1, Supported: 0, AllClaims: 1}},
		{"a block that holds a gold answer counts though it is not gold", Question{ID: "q2", Gold: []string{"zz"}, Answers: []string{"workspace/repo"}},
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Citations: []schemas.Citation{{BlockID: "p2"}}},
			AnswerScore{Answered: true, Citations: 1, Correct: 1, Claims: 1, Supported: 1, AllClaims: 1}},
		{"a claim without a quote is supported by its words in the block", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: "File history is saved as the original file [1].",
				Citations: []schemas.Citation{{BlockID: "p1", Number: 1, Spans: span(0, 43)}}},
			AnswerScore{Answered: true, Citations: 1, Correct: 1, Claims: 1, Supported: 1, SupportCitations: 1, AllClaims: 1, SupportClaims: 1}},
		{"a claim without a quote is not supported by a block without its words", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: "File history is saved as the original file [1].",
				Citations: []schemas.Citation{{BlockID: "p2", Number: 1, Spans: span(0, 43)}}},
			AnswerScore{Answered: true, Citations: 1, Correct: 0, Claims: 1, Supported: 0, AllClaims: 1}},
		{"two citations of one claim support it once; a marked unsupported sentence is a claim without support", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: "«File history» is in «workspace/history/» [1][2]. It is in Peru.",
				Citations:   []schemas.Citation{{BlockID: "h1", Quote: "File history", Spans: span(0, 47)}, {BlockID: "p1", Quote: "workspace/history/", Spans: span(0, 47)}},
				Unsupported: []schemas.Unsupported{{Text: "It is in Peru.", Span: &schemas.TextSpan{Start: 48, End: 62}}, {Text: "removed"}}},
			AnswerScore{Answered: true, Citations: 2, Correct: 1, Claims: 2, Supported: 1, Unsupported: 1, SupportCitations: 2, AllClaims: 2, SupportClaims: 1}},
		{"an abstention answers nothing", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerSearchOnly, Reasons: []string{answer.ReasonNotInNotes + ": no sentence matched"}},
			AnswerScore{Abstained: true}},
		{"an llm answer that says not in notes is an abstention, not an answer", capitalQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Reasons: []string{answer.ReasonNotInNotes}},
			AnswerScore{Abstained: true}},
		{"search-only passages are not claims", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerSearchOnly, Citations: []schemas.Citation{{BlockID: "p1"}}},
			AnswerScore{}},
		{"an answer to an unanswerable question is checked for support only", capitalQ,
			schemas.AnswerDone{Mode: schemas.AnswerLLM, Answer: "«Data snapshot» [1].", Citations: []schemas.Citation{{BlockID: "p2", Quote: "Data snapshot", Spans: span(0, 19)}}},
			AnswerScore{Answered: true, Citations: 1, SupportCitations: 1, AllClaims: 1, SupportClaims: 1}},
		{"an extractive answer is scored by exact match and F1", historyQ,
			schemas.AnswerDone{Mode: schemas.AnswerExtractive, Answer: "the workspace/history/",
				Citations: []schemas.Citation{{BlockID: "p1", Quote: "File history: saved in the `workspace/history/` folder as the original file"}}},
			AnswerScore{Answered: true, Citations: 1, Correct: 1, Claims: 1, Supported: 1, Extractive: true, EM: 1, F1: 1, SupportCitations: 1, AllClaims: 1, SupportClaims: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ScoreAnswer(tc.q, &tc.done, testBlocks)
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRunAnswersReportsPrecisionRecallAndAbstention(t *testing.T) {
	set := &Set{Name: "t", Questions: []Question{historyQ, capitalQ,
		{ID: "q3", Gold: []string{"p2"}, Answers: []string{"workspace/repo/"}}}}
	answers := map[string]*schemas.AnswerDone{
		"q":  {Mode: schemas.AnswerLLM, Confidence: 0.9, Citations: []schemas.Citation{{BlockID: "p1", Spans: []schemas.TextSpan{{Start: 0, End: 5}}}, {BlockID: "h1", Spans: []schemas.TextSpan{{Start: 6, End: 9}}}}, TimingsMS: map[string]float64{"llm": 10}},
		"u":  {Mode: schemas.AnswerLLM, Confidence: 0.4, Citations: []schemas.Citation{{BlockID: "p2"}}, TimingsMS: map[string]float64{"llm": 30}},
		"q3": {Mode: schemas.AnswerSearchOnly, Reasons: []string{answer.ReasonNotInNotes}},
	}
	rep, err := RunAnswers(context.Background(), func(_ context.Context, q Question) (*schemas.AnswerDone, error) {
		return answers[q.ID], nil
	}, set, testBlocks, AnswerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != 3 || rep.Answerable != 2 || rep.Unanswerable != 1 {
		t.Errorf("n %d answerable %d unanswerable %d", rep.N, rep.Answerable, rep.Unanswerable)
	}
	if rep.GoldCitations != 2 || rep.GoldCitationPrecision != 0.5 || rep.GoldCitationsUnanswerable != 1 {
		t.Errorf("citations %d precision %v on unanswerable %d; want 2, 0.5, 1", rep.GoldCitations, rep.GoldCitationPrecision, rep.GoldCitationsUnanswerable)
	}
	if rep.GoldClaims != 2 || rep.GoldCitationRecall != 0.5 || rep.GoldSupportedAnswers != 0.5 {
		t.Errorf("claims %d recall %v supported answers %v; want 2, 0.5, 0.5", rep.GoldClaims, rep.GoldCitationRecall, rep.GoldSupportedAnswers)
	}
	if rep.OverlapCitations != 3 || rep.OverlapSupportingCitations != 0 || rep.OverlapClaims != 3 || rep.OverlapSupportPrecision != 0 {
		t.Errorf("support: citations %d supporting %d claims %d precision %v; want 3, 0 (no quotes, no claim text), 3, 0",
			rep.OverlapCitations, rep.OverlapSupportingCitations, rep.OverlapClaims, rep.OverlapSupportPrecision)
	}
	if rep.LabelReport != nil {
		t.Errorf("label fields without labels: %+v", rep.LabelReport)
	}
	if rep.AbstainedRight != 0 || rep.AbstainedWrong != 1 || rep.Abstention != 0 {
		t.Errorf("abstained right %d wrong %d", rep.AbstainedRight, rep.AbstainedWrong)
	}
	if rep.Modes["llm"] != 2 || rep.Modes["search_only"] != 1 {
		t.Errorf("modes %v", rep.Modes)
	}
	if l := rep.LatencyMS["llm"]; l.N != 2 || l.P50 != 10 || l.P95 != 30 {
		t.Errorf("llm latency %+v", l)
	}
	if len(rep.Samples) != 2 || !rep.Samples[0].Correct || rep.Samples[1].Correct {
		t.Errorf("samples %+v: want the answer to q right and the answer to the unanswerable u wrong", rep.Samples)
	}
	if len(rep.Misses) != 2 {
		t.Errorf("misses %q", rep.Misses)
	}
}

func TestSQuADNormalisation(t *testing.T) {
	cases := []struct {
		pred, gold string
		em, f1     float64
	}{
		{"The Denver Broncos!", "Denver Broncos", 1, 1},
		{"Denver", "Denver Broncos", 0, 2.0 / 3},
		{"Санта-Клара", "Санта-Клара.", 1, 1},
		{"nothing", "Denver", 0, 0},
	}
	for _, tc := range cases {
		if em, f1 := ExactMatch(tc.pred, tc.gold), F1(tc.pred, tc.gold); em != tc.em || math.Abs(f1-tc.f1) > 1e-9 {
			t.Errorf("%q vs %q: EM %v F1 %v, want %v %v", tc.pred, tc.gold, em, f1, tc.em, tc.f1)
		}
	}
	if !HoldsAnswer("uid 1000/gid 1000", []string{"1000"}) || HoldsAnswer("uid 10000", []string{"1000"}) {
		t.Error("HoldsAnswer does not match whole words")
	}
}

func TestMergeAnswersPoolsCountsAndLatencies(t *testing.T) {
	one := func(id string) *Set {
		q := Question{ID: id, Answers: []string{}, Unanswerable: true}
		return &Set{Name: id, Questions: []Question{q}}
	}
	var reps []AnswerReport
	for i, ms := range []float64{10, 20, 30, 40} {
		done := &schemas.AnswerDone{Mode: schemas.AnswerSearchOnly, TimingsMS: map[string]float64{"lexical": ms}}
		if i%2 == 0 {
			done.Reasons = []string{answer.ReasonNotInNotes}
		}
		r, err := RunAnswers(context.Background(), func(context.Context, Question) (*schemas.AnswerDone, error) { return done, nil },
			one(fmt.Sprint(i)), nil, AnswerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	m := MergeAnswers("all", reps)
	if m.N != 4 || m.Unanswerable != 4 || m.AbstainedRight != 2 || m.Abstention != 0.5 || m.Modes["search_only"] != 4 {
		t.Errorf("merged %+v", m)
	}
	if l := m.LatencyMS["lexical"]; l.N != 4 || l.P50 != 20 || l.P95 != 40 {
		t.Errorf("merged lexical latency %+v, want p50 20 and p95 40 over 4", l)
	}
}
