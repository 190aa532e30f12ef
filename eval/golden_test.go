package eval

import (
	"os"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
)

const siyuanSet = "testdata/siyuan-guide-answers.jsonl"

// guideBlocks walks the set's notes and returns every block's text by id.
func guideBlocks(t *testing.T, set *Set) map[string]string {
	t.Helper()
	if len(set.Notes) == 0 {
		t.Fatalf("%s names no notes folder (# notes: PATH)", siyuanSet)
	}
	for _, n := range set.Notes {
		if _, err := os.Stat(n); err != nil {
			t.Skipf("SiYuan guide not found at %s (the shared eval data): %v", n, err)
		}
	}
	blocks := map[string]string{}
	err := files.Walk(set.Notes, func(d *schemas.DocChanged) error {
		for _, b := range d.Blocks {
			blocks[b.ID] = b.Text
		}
		return nil
	}, func(p string, err error) { t.Errorf("walk %s: %v", p, err) })
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

func TestSiYuanGoldenSetHoldsItsAnswersInItsGoldBlocks(t *testing.T) {
	set, err := Load(siyuanSet)
	if err != nil {
		t.Fatal(err)
	}
	blocks := guideBlocks(t, set)
	ru, unanswerable := 0, 0
	ids := map[string]bool{}
	for _, q := range set.Questions {
		if ids[q.ID] {
			t.Errorf("%s: id used twice", q.ID)
		}
		ids[q.ID] = true
		if q.Lang == "ru" {
			ru++
			if strings.TrimSpace(q.Translations["en"]) == "" {
				t.Errorf("%s: a Russian question needs translations.en", q.ID)
			}
		}
		if q.Unanswerable {
			unanswerable++
			if len(q.Gold) != 0 || len(q.Answers) != 0 {
				t.Errorf("%s: an unanswerable question has gold %v, answers %v", q.ID, q.Gold, q.Answers)
			}
			continue
		}
		if len(q.Gold) == 0 || len(q.Answers) == 0 {
			t.Errorf("%s: an answerable question needs gold blocks and answers", q.ID)
			continue
		}
		for _, g := range q.Gold {
			text, ok := blocks[g]
			if !ok {
				t.Errorf("%s: gold block %s is not in the guide", q.ID, g)
				continue
			}
			held := false
			for _, a := range q.Answers {
				held = held || strings.Contains(text, a)
			}
			if !held {
				t.Errorf("%s: gold block %s holds none of the answers %q: %q", q.ID, g, q.Answers, text)
			}
		}
		for _, a := range q.Answers {
			found := false
			for _, g := range q.Gold {
				found = found || strings.Contains(blocks[g], a)
			}
			if !found {
				t.Errorf("%s: answer %q is in none of its gold blocks", q.ID, a)
			}
		}
	}
	if n := len(set.Questions); n < 40 || 2*ru < n || unanswerable < 10 {
		t.Errorf("%d questions, %d Russian, %d unanswerable: want at least 40, half Russian, 10 unanswerable", n, ru, unanswerable)
	}
}

func TestParseJSONLReadsNotesTranslationsAndEmptyAnswersAsUnanswerable(t *testing.T) {
	raw := "# notes: guide\n" +
		`{"id":"a","question":"Где лежит история?","gold":["b1"],"answers":["workspace/history/"],"translations":{"en":"Where is the history?"}}` + "\n" +
		`{"id":"b","question":"What is the capital of Australia?","answers":[]}` + "\n" +
		`{"id":"c","question":"Retrieval only","gold":["d1"]}` + "\n"
	set, err := ParseJSONL([]byte(raw), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Notes) != 1 || set.Notes[0] != "guide" {
		t.Errorf("notes %v, want [guide]", set.Notes)
	}
	q := set.Questions
	if q[0].Lang != "ru" || q[0].Translations["en"] != "Where is the history?" || q[0].Unanswerable {
		t.Errorf("question a: %+v", q[0])
	}
	if !q[1].Unanswerable {
		t.Errorf(`question b has "answers": [] but is not unanswerable`)
	}
	if q[2].Unanswerable {
		t.Errorf("question c has no answers key (a retrieval question) but is unanswerable")
	}
}
