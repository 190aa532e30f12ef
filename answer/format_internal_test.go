package answer

import (
	"strings"
	"testing"
)

func TestTheStreamShowsOnlyTheAnswerTextOfAJSONReply(t *testing.T) {
	for _, tc := range []struct {
		name, reply, shown string
	}{
		{"prose passes as it is", "Sync is optional [1].", "Sync is optional [1]."},
		{"JSON gives its answer string", `{"answer": "Sync \"is\" optional.\nYes \u00e9 \ud83d\ude00", "citations": [{"block_id": "b", "quote": "answer"}]}`,
			"Sync \"is\" optional.\nYes é 😀"},
		{"JSON in fences", "```json\n{\"answer\": \"Да, «можно».\", \"citations\": []}\n```", "Да, «можно»."},
		{"a fence that holds no JSON is prose", "```\nsome code\n```", "```\nsome code\n```"},
		{"a JSON reply cut short shows what came", `{"citations": [], "answer": "Cut he`, "Cut he"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time: escapes and runes arrive split.
			var got strings.Builder
			s := &answerStream{send: func(tok string) error { got.WriteString(tok); return nil }}
			for i := 0; i < len(tc.reply); i++ {
				if err := s.write(tc.reply[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != tc.shown || s.shown.String() != tc.shown {
				t.Errorf("shown %q, want %q", got.String(), tc.shown)
			}
		})
	}
}

func TestAJSONReplyIsParsedWhateverItsWrapping(t *testing.T) {
	for _, tc := range []struct {
		reply, answer string
		cites         int
		ok            bool
	}{
		{`{"answer": "A.", "citations": [{"block_id": 2, "quote": "q"}], "confidence": 0.5}`, "A.", 1, true},
		{"```json\n{\"answer\": \"A.\", \"citations\": []}\n```", "A.", 0, true},
		{`{"answer": "A. B`, "A. B", 0, true},
		{`{"result": "A."}`, "", 0, false},
		{`A plain answer {with braces}.`, "", 0, false},
	} {
		j, ok := parseJSON(tc.reply)
		if ok != tc.ok || j.Answer != tc.answer || len(j.Citations) != tc.cites {
			t.Errorf("%s: ok %v, %+v", tc.reply, ok, j)
		}
		if tc.cites == 1 && j.Citations[0].BlockID != "2" {
			t.Errorf("a numeric block_id: %+v", j.Citations[0])
		}
	}
}
