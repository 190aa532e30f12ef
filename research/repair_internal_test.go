package research

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRepairJSONMakesValidJSONOfWhatModelsReallyWrite(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"clean JSON stays as it is", `{"a": [1, 2]}`, `{"a":[1,2]}`},
		{"text after the object is left out", `{"a": 1} Hope this helps! {"b": 2}`, `{"a":1}`},
		{"trailing commas go", `{"a": [1, 2,], "b": "x",}`, `{"a":[1,2],"b":"x"}`},
		{"single-quoted keys and strings get double quotes, apostrophes inside stay",
			`{'text': 'Crows don't forget', 'ids': ['b1']}`, `{"text":"Crows don't forget","ids":["b1"]}`},
		{"keys without quotes get them", `{sub_questions: [{question: "Why?"}]}`, `{"sub_questions":[{"question":"Why?"}]}`},
		{"Russian keys without quotes get them", `{вопрос: "Зачем?"}`, `{"вопрос":"Зачем?"}`},
		{"Python literals become JSON", `{"a": True, "b": None, "c": False}`, `{"a":true,"b":null,"c":false}`},
		{"raw line breaks in a string are escaped", "{\"text\": \"line one\nline two\"}", `{"text":"line one\nline two"}`},
		{"quotes inside a string that do not end it are kept", `{"text": "He said "hi" to me", "n": 1}`, `{"text":"He said \"hi\" to me","n":1}`},
		{"Russian guillemets and quotes inside text stay", `{"text": "Заметка «Вороны» говорит "да"."}`, `{"text":"Заметка «Вороны» говорит \"да\"."}`},
		{"a bad escape is mended", `{"text": "a\'b \d"}`, `{"text":"a'b \\d"}`},
		{"comments go", "{\"a\": 1, // the first\n \"b\": /* two */ 2}", `{"a":1,"b":2}`},
		{"a missing comma between objects is put back", `[{"a": 1} {"a": 2}]`, `[{"a":1},{"a":2}]`},
		{"a missing comma between members is put back", "{\"a\": \"x\"\n \"b\": \"y\"}", `{"a":"x","b":"y"}`},
		{"a reply cut inside a string is closed", `{"sub_questions": [{"question": "A?", "why": "x"}, {"question": "B`,
			`{"sub_questions":[{"question":"A?","why":"x"},{"question":"B"}]}`},
		{"a reply cut inside a key drops the incomplete member", `{"new": [{"text": "Crows use sticks.", "bloc`,
			`{"new":[{"text":"Crows use sticks."}]}`},
		{"a reply cut after a colon gets null", `{"new": [], "updated": `, `{"new":[],"updated":null}`},
		{"a reply cut after a comma closes the brackets", `{"contradicted": ["f1", "f2",`, `{"contradicted":["f1","f2"]}`},
		{"bare words as values become strings", `{"certainty": high}`, `{"certainty":"high"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, ok := repairJSON(tc.in)
			if !ok || !json.Valid([]byte(got)) {
				t.Fatalf("repairJSON(%q) = %q, %v; want valid JSON", tc.in, got, ok)
			}
			var g, w any
			_ = json.Unmarshal([]byte(got), &g)
			_ = json.Unmarshal([]byte(tc.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("repairJSON(%q) = %s; want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestRepairJSONFindsNoValueInPlainProse(t *testing.T) {
	for _, in := range []string{"I cannot help with that.", "Извините, я не могу ответить.", ""} {
		if got, _, ok := repairJSON(in); ok {
			t.Errorf("repairJSON(%q) = %q; want none", in, got)
		}
	}
}

func TestParsePlanReplyReadsPlansInEveryShapeModelsGive(t *testing.T) {
	two := []string{"What do crows eat?", "Where do crows sleep?"}
	for _, tc := range []struct {
		name, reply string
		want        []string
	}{
		{"an object in a json fence with prose around it",
			"Sure! Here is the plan:\n```json\n{\"sub_questions\": [{\"question\": \"What do crows eat?\", \"why\": \"food\"}, {\"question\": \"Where do crows sleep?\", \"why\": \"rest\"}]}\n```\nLet me know.", two},
		{"a fence left open by a cut reply",
			"```json\n{\"sub_questions\": [{\"question\": \"What do crows eat?\"}, {\"question\": \"Where do crows sleep?\"}, {\"question\": \"How lo", append(two, "How lo")},
		{"camelCase keys and single quotes",
			`{'subQuestions': [{'Question': 'What do crows eat?', 'Why': 'food'}, {'Question': 'Where do crows sleep?'}]}`, two},
		{"trailing commas", `{"sub_questions": [{"question": "What do crows eat?",}, {"question": "Where do crows sleep?",},],}`, two},
		{"a one-key wrapper", `{"plan": {"items": ["What do crows eat?", "Where do crows sleep?"]}}`, two},
		{"a remark under one plan key and the list under another", `{"plan": "two steps", "steps": ["What do crows eat?", "Where do crows sleep?"]}`, two},
		{"a bare array of strings after a citation marker", `See [1]. ["What do crows eat?", "Where do crows sleep?"]`, two},
		{"Russian keys and questions", `{"подвопросы": [{"вопрос": "Что едят вороны?", "зачем": "еда"}, {"вопрос": "Где спят вороны?"}]}`,
			[]string{"Что едят вороны?", "Где спят вороны?"}},
		{"a numbered list when there is no JSON", "1. What do crows eat? — food\n2. Where do crows sleep? — rest", two},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subs, err := ParsePlanReply(tc.reply, 0)
			var got []string
			for _, s := range subs {
				got = append(got, s.Question)
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParsePlanReply = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParsePlanReplySaysWhatIsWrongWithAnUnusableReply(t *testing.T) {
	for _, tc := range []struct{ name, reply, want string }{
		{"prose without JSON", "I am sorry, I cannot plan this.", "no JSON object"},
		{"JSON without sub-questions", `{"answer": "crows are clever", "confidence": 0.8}`, `"sub_questions"`},
		// A plan key holding words or a number talks about a plan: read as
		// a sub-question, "look at the notes" would be searched for.
		{"a plan key holding a remark and a count", `{"plan": "look at the notes", "steps": 3}`, `"sub_questions"`},
		{"a Russian remark under a plan key", `{"вопросы": "сначала посмотреть заметки"}`, `"sub_questions"`},
		{"a one-key wrapper around a remark", `{"answer": {"plan": "compare the notes"}}`, `"sub_questions"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subs, err := ParsePlanReply(tc.reply, 0)
			if len(subs) != 0 || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParsePlanReply = %v, %v; want an error naming %q", subs, err, tc.want)
			}
		})
	}
}

func TestParseFactStepReadsFactStepsInEveryShapeModelsGive(t *testing.T) {
	want := FactStep{New: []StepFact{{Text: "Crows use sticks as tools.", Certainty: "high", BlockIDs: []string{"b1"}}},
		Updated: []StepFact{{ID: "f1", Certainty: "high", BlockIDs: []string{"b2"}}}, Contradicted: []string{"f2"}}
	for _, tc := range []struct {
		name, reply string
		want        FactStep
	}{
		{"clean JSON", `{"new": [{"text": "Crows use sticks as tools.", "certainty": "high", "block_ids": ["b1"]}], "updated": [{"id": "f1", "certainty": "high", "block_ids": ["b2"]}], "contradicted": ["f2"]}`, want},
		{"prose, a fence and trailing text", "Here is what this document adds:\n```json\n" +
			`{"new": [{"text": "Crows use sticks as tools.", "certainty": "high", "block_ids": ["b1"]}], "updated": [{"id": "f1", "certainty": "high", "block_ids": ["b2"]}], "contradicted": ["f2"]}` +
			"\n```\nDone.", want},
		{"other key names and shapes", `{"newFacts": [{"fact": "Crows use sticks as tools.", "confidence": 0.9, "blocks": "b1"}], "updates": [{"fact_id": "F1", "confidence": "high", "block_id": "b2"}], "contradictions": [{"id": "F2"}]}`, want},
		{"single quotes, trailing commas and a number id", `{'new': [{'text': 'Crows use sticks as tools.', 'certainty': 'high', 'block_ids': ['b1',],},], 'updated': [{'id': 1, 'certainty': 'high', 'block_ids': ['b2']}], 'contradicted': [2],}`, want},
		{"a reply cut off at the end", `{"new": [{"text": "Crows use sticks as tools.", "certainty": "high", "block_ids": ["b1"]}], "updated": [{"id": "f1", "certainty": "high", "block_ids": ["b2"]}], "contradicted": ["f2"`, want},
		{"Russian text with quotes inside and a raw line break",
			"{\"new\": [{\"text\": \"Вороны используют \"палочки\"\nкак орудия.\", \"certainty\": \"высокая\", \"block_ids\": [\"b1\"]}], \"updated\": [], \"contradicted\": []}",
			FactStep{New: []StepFact{{Text: "Вороны используют \"палочки\"\nкак орудия.", Certainty: "высокая", BlockIDs: []string{"b1"}}}}},
		{"an empty step", `{"new": [], "updated": [], "contradicted": []}`, FactStep{}},
		{"an array of new facts", `[{"text": "Crows use sticks as tools.", "certainty": "high", "block_ids": ["b1"]}]`,
			FactStep{New: want.New}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFactStep(tc.reply)
			if err != nil {
				t.Fatalf("ParseFactStep: %v", err)
			}
			norm := func(s FactStep) FactStep {
				for _, l := range []*[]StepFact{&s.New, &s.Updated} {
					if len(*l) == 0 {
						*l = nil
					}
				}
				if len(s.Contradicted) == 0 {
					s.Contradicted = nil
				}
				return s
			}
			if g, w := norm(got), norm(tc.want); !reflect.DeepEqual(g, w) {
				t.Errorf("ParseFactStep =\n%+v\nwant\n%+v", g, w)
			}
		})
	}
}

func TestParseFactStepFailsWithAReasonThatIsErrUnparsable(t *testing.T) {
	for _, reply := range []string{"I could not find any facts in this document.", `{"answer": "crows"}`, "Вот факты: вороны умные."} {
		_, err := ParseFactStep(reply)
		if !errors.Is(err, ErrUnparsable) || err.Error() == ErrUnparsable.Error() {
			t.Errorf("ParseFactStep(%q) error %v; want ErrUnparsable with the reason", reply, err)
		}
	}
}

func TestParseOutlineReadsThemesDisagreementsAndGaps(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		themes      int
		gaps        []string
	}{
		{"clean", `{"themes": [{"title": "Tools", "facts": ["F1"]}], "disagreements": [], "gaps": ["Where do crows sleep?"]}`, 1, []string{"Where do crows sleep?"}},
		{"gaps as objects under another name, fenced", "```json\n{\"themes\": [{\"title\": \"Tools\", \"facts\": [1, 2]}], \"follow_up_questions\": [{\"question\": \"Где спят вороны?\", \"why\": \"не ясно\"}]}\n```", 1, []string{"Где спят вороны?"}},
		{"no gaps", `{"themes": ["Tools", "Memory"], "disagreements": [{"text": "F1 and F2 differ", "facts": "F1, F2"}]}`, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseOutline(tc.reply)
			var gaps []string
			for _, g := range o.Gaps {
				gaps = append(gaps, g.Question)
			}
			if err != nil || len(o.Themes) != tc.themes || !reflect.DeepEqual(gaps, tc.gaps) {
				t.Errorf("ParseOutline = %+v, %v; want %d themes, gaps %q", o, err, tc.themes, tc.gaps)
			}
		})
	}
	if _, err := ParseOutline("The themes are tools and memory."); !errors.Is(err, ErrUnusableReply) {
		t.Errorf("an outline in prose: %v; want ErrUnusableReply", err)
	}
}

func TestParseReportReadsReportsInOtherShapes(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		sections    int
		facts       []string
	}{
		{"a summary as one string and sections under content", `{"title": "Crows", "summary": "Crows use tools.", "sections": [{"heading": "Tools", "content": [{"sentence": "Crows shape hooks.", "citations": "F1, F2"}]}]}`, 1, []string{"F1", "F2"}},
		{"sections keyed by title, cut off at the end", `{"title": "Вороны", "sections": {"Орудия": [{"text": "Вороны делают крючки.", "facts": [1]}]}, "conclusion": [{"text": "Вороны умны`, 1, []string{"F1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := parseReport(tc.reply)
			if err != nil || len(rep.Sections) != tc.sections || len(rep.Sections[0].Sentences) != 1 || !reflect.DeepEqual(rep.Sections[0].Sentences[0].Facts, tc.facts) {
				t.Errorf("parseReport = %+v, %v", rep, err)
			}
		})
	}
}
