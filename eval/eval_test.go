package eval

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/store"
)

func TestGoldRankCountsDistinctDocumentsNotChunks(t *testing.T) {
	hits := []store.Hit{
		{DocID: "a", BlockIDs: []string{"a1"}},
		{DocID: "a", BlockIDs: []string{"a2"}},
		{DocID: "b", BlockIDs: []string{"b1"}},
		{DocID: "c", BlockIDs: []string{"c7", "c8"}},
	}
	cases := []struct {
		name string
		gold []string
		want int
	}{
		{"the first document is rank one", []string{"a"}, 1},
		{"a second chunk of a seen document does not push ranks down", []string{"b"}, 2},
		{"a gold block inside a chunk counts for its document's rank", []string{"c8"}, 3},
		{"absent gold is rank zero", []string{"z"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := GoldRank(hits, tc.gold); got != tc.want {
				t.Errorf("GoldRank(%v) = %d, want %d", tc.gold, got, tc.want)
			}
		})
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if p := Percentile(xs, 50); p != 5 {
		t.Errorf("p50 = %v", p)
	}
	if p := Percentile(xs, 95); p != 10 {
		t.Errorf("p95 = %v", p)
	}
	if p := Percentile(nil, 50); p != 0 {
		t.Errorf("empty p50 = %v", p)
	}
}

func TestParseSQuADMakesOneDocumentPerParagraphAndStripsTheBOM(t *testing.T) {
	raw := `{"version":"1.1","data":[{"title":"Super_Bowl_50","paragraphs":[
	  {"context":"\ufeffThe game was played in Santa Clara.","qas":[{"id":"q1","question":"Where was the game?","answers":[{"text":"Santa Clara","answer_start":24}]}]},
	  {"context":"Игра прошла в Санта-Кларе.","qas":[{"id":"q2","question":"Где прошла игра?","answers":[]}]}]}]}`
	set, err := ParseSQuAD([]byte(raw), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Docs) != 2 || len(set.Questions) != 2 {
		t.Fatalf("docs %d questions %d", len(set.Docs), len(set.Questions))
	}
	d := set.Docs[0]
	if strings.ContainsRune(d.Blocks[0].Text, '\ufeff') || d.Title != "Super Bowl 50" || set.Questions[0].Gold[0] != d.DocID {
		t.Errorf("doc = %+v, question = %+v", d, set.Questions[0])
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	if q := set.Questions[1]; q.Lang != "ru" || !q.Unanswerable || q.Gold[0] != set.Docs[1].DocID {
		t.Errorf("Russian question without answers = %+v", q)
	}
	if _, err := ParseSQuAD([]byte(`{"data":[]}`), "x"); err == nil {
		t.Error("an empty SQuAD file was accepted")
	}
}

func TestParseJSONLReportsTheBadLine(t *testing.T) {
	_, err := ParseJSONL([]byte("{\"question\":\"ok?\",\"gold\":[\"d\"]}\n{oops\n"), "g")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want it to name line 2", err)
	}
	set, err := ParseJSONL([]byte("# comment\n{\"question\":\"Как дела?\",\"gold\":[\"d\"]}\n"), "g")
	if err != nil || len(set.Questions) != 1 || set.Questions[0].Lang != "ru" {
		t.Errorf("set = %+v, err = %v", set, err)
	}
}

type fakeSearcher map[string][]store.Hit

func (f fakeSearcher) Search(_ context.Context, q string, _ store.SearchOptions) ([]store.Hit, error) {
	return f[q], nil
}

func TestRunScoresRecallAndMRR(t *testing.T) {
	set := &Set{Name: "s", Questions: []Question{
		{ID: "1", Question: "first", Gold: []string{"a"}},
		{ID: "2", Question: "second", Gold: []string{"b"}},
		{ID: "3", Question: "missing", Gold: []string{"z"}},
	}}
	s := fakeSearcher{
		"first":   {{DocID: "a"}},
		"second":  {{DocID: "a"}, {DocID: "b"}},
		"missing": {{DocID: "a"}},
	}
	rep, err := Run(context.Background(), s, set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != 3 || rep.RecallAt1 != 0.3333 || rep.RecallAt5 != 0.6667 || rep.MRRAt15 != 0.5 || len(rep.Misses) != 1 {
		t.Errorf("report = %+v", rep)
	}
}
