package research_test

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

func TestParsePlanReadsTheShapesModelsReplyIn(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		max         int
		want        []string
		why         string
	}{
		{"an object with sub_questions", `{"sub_questions":[{"question":"A?","why":"because"},{"question":"B?","why":"b"}]}`, 5, []string{"A?", "B?"}, "because"},
		{"an object in a fence with words around", "Sure:\n```json\n{\"questions\": [{\"question\": \"A?\"}]}\n```\nok", 5, []string{"A?"}, ""},
		{"an array of strings", `["A?", "B?", "C?"]`, 2, []string{"A?", "B?"}, ""},
		{"repeated and empty questions go", `{"sub_questions":[{"question":"A?"},{"question":"a"},{"question":" "},{"question":"B"}]}`, 5, []string{"A?", "B"}, ""},
		{"a numbered list with reasons", "1. Какие виды есть? — чтобы знать все\n2) Как их создать?\n", 5, []string{"Какие виды есть?", "Как их создать?"}, "чтобы знать все"},
		{"nothing usable", "I cannot help with that.", 5, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := research.ParsePlan(tc.reply, tc.max)
			var qs []string
			for _, s := range got {
				qs = append(qs, s.Question)
			}
			if strings.Join(qs, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("questions %q, want %q", qs, tc.want)
			}
			if tc.why != "" && got[0].Why != tc.why {
				t.Errorf("why %q, want %q", got[0].Why, tc.why)
			}
		})
	}
}

func TestParseFactStepReadsFencedJSONAndLooseIDs(t *testing.T) {
	step, err := research.ParseFactStep("Here:\n```json\n{\"new\":[{\"text\":\"x\",\"block_ids\":[\"b1\"]}],\"updated\":[{\"id\":\"f1\",\"certainty\":\"high\"}],\"contradicted\":[\"f2\",3,{\"id\":\"f4\"}]}\n```")
	if err != nil {
		t.Fatal(err)
	}
	if len(step.New) != 1 || len(step.Updated) != 1 || strings.Join(step.Contradicted, ",") != "f2,f3,f4" {
		t.Errorf("step %+v", step)
	}
	if _, err := research.ParseFactStep("no JSON here"); err == nil {
		t.Error("a reply without JSON parsed")
	}
}

func doc(id string, blocks ...[2]string) research.Document {
	c := schemas.Context{Passage: schemas.Passage{ChunkID: id + ":0", DocID: id, Title: id}}
	for _, b := range blocks {
		if c.Text != "" {
			c.Text += "\n\n"
		}
		c.BlockSpans = append(c.BlockSpans, schemas.BlockSpan{ID: b[0], Start: len(c.Text), End: len(c.Text) + len(b[1])})
		c.BlockIDs = append(c.BlockIDs, b[0])
		c.Text += b[1]
	}
	c.BlockID = c.BlockIDs[0]
	return research.Document{DocID: id, Title: id, Contexts: []schemas.Context{c}}
}

func TestApplyKeepsOnlyFactsTheirOwnBlocksSupport(t *testing.T) {
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	d1 := doc("d1", [2]string{"b1", "Ravens cache food under stones in winter."}, [2]string{"b2", "Jays bury acorns in autumn."},
		[2]string{"b3", "Magpies collect shiny objects near houses."})
	var fs research.Facts
	ap := fs.Apply(a, research.FactStep{New: []research.StepFact{
		{Text: "Ravens cache food under stones in winter.", Certainty: "medium", BlockIDs: []string{"b1"}},
		// True of b1, but it names b3, two blocks away: the block it names
		// (or a neighbour of it) must hold it.
		{Text: "Ravens cache food under stones.", Certainty: "high", BlockIDs: []string{"b3"}},
		{Text: "Magpies collect shiny objects.", Certainty: "bogus", BlockIDs: []string{"b3", "b9"}},
		{Text: "Ravens do not cache food under stones.", BlockIDs: []string{"b1"}},
	}}, d1)
	if ap.New != 2 || ap.Unsupported != 2 || len(fs.List) != 2 || fs.List[0].ID != "f1" || fs.List[1].ID != "f2" {
		t.Fatalf("applied %+v, facts %+v", ap, fs.List)
	}
	if fs.List[1].Certainty != schemas.CertaintyMedium || strings.Join(fs.List[1].BlockIDs, ",") != "b3" {
		t.Errorf("f2 = %+v; want medium (an unknown certainty) resting on b3 only (b9 is not in the document)", fs.List[1])
	}
	d2 := doc("d2", [2]string{"c1", "In winter ravens cache food under stones, often."}, [2]string{"c2", "Magpies never collect shiny objects."})
	ap = fs.Apply(a, research.FactStep{
		Updated:      []research.StepFact{{ID: "f1", Certainty: "high", BlockIDs: []string{"c1"}}, {ID: "f1", Text: "Ravens eat only fish."}},
		Contradicted: []string{"f2", "f9"},
	}, d2)
	if ap.Updated != 1 || ap.Contradicted != 1 || ap.Unsupported != 1 {
		t.Fatalf("applied %+v", ap)
	}
	if len(fs.List) != 3 || fs.List[0].ID != "f1" || fs.List[0].Certainty != schemas.CertaintyHigh || fs.List[0].Text != "Ravens cache food under stones in winter." ||
		strings.Join(fs.List[0].BlockIDs, ",") != "c1,b1" {
		t.Fatalf("facts %+v; want f1 high on c1 and b1, its text unchanged by the unsupported update", fs.List)
	}
	// The contradicted fact stays; the model gave no fact for the other
	// side, so the passage of d2 about magpies stands for it.
	f2, side := fs.List[1], fs.List[2]
	if f2.ID != "f2" || strings.Join(f2.ContradictedBy, ",") != side.ID || side.Text != "Magpies never collect shiny objects." ||
		strings.Join(side.BlockIDs, ",") != "c2" || side.Certainty != schemas.CertaintyLow {
		t.Errorf("f2 %+v, other side %+v; want f2 kept, contradicted by the passage of c2", f2, side)
	}
	if fs.Dropped != 3 || fs.Next != 4 {
		t.Errorf("dropped %d, next %d; want 3 unsupported dropped (the contradicted fact is kept), next f4", fs.Dropped, fs.Next)
	}
	summary, cites := research.Summary(fs.List[:1], 5)
	if summary != "Ravens cache food under stones in winter [1, 2]." || len(cites) != 2 || cites[1].BlockID != "b1" {
		t.Errorf("summary %q, citations %+v", summary, cites)
	}
}

func TestGroupDocumentsKeepsTheBestFirstAndCapsThem(t *testing.T) {
	ctx := func(chunk, doc string) schemas.Context {
		return schemas.Context{Passage: schemas.Passage{ChunkID: chunk, DocID: doc, BlockID: chunk, Text: chunk}}
	}
	docs := research.GroupDocuments([]schemas.Context{ctx("a1", "a"), ctx("b1", "b"), ctx("a2", "a"), ctx("a1", "a"), ctx("c1", "c")}, 2)
	if len(docs) != 2 || docs[0].DocID != "a" || len(docs[0].Contexts) != 2 || docs[1].DocID != "b" {
		t.Errorf("docs %+v", docs)
	}
}
