package answer

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

func TestTheStreamShowsVerifiedSentencesOfAReplyAsTheyComplete(t *testing.T) {
	ctxs := []schemas.Context{{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", BlockID: "b1", BlockIDs: []string{"b1"},
		Text: "Sync to the cloud is optional and needs a subscription. File history is kept for 30 days."}}}
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, reply string
		shown       []string // what the client gets, piece by piece, before the end
	}{
		{"prose, sentence by sentence",
			"Sync is «optional and needs a subscription» [1]. History is «kept for 30 days» [1]. More to come",
			[]string{"Sync is «optional and needs a subscription» [1].", " History is «kept for 30 days» [1]."}},
		{"a changed number is never shown; the verified sentence after it is",
			"History is kept for 97 days [1]. Sync is «optional and needs a subscription» [1]. More",
			[]string{"Sync is «optional and needs a subscription» [1]."}},
		{"JSON whose citations come first streams its answer text",
			`{"citations": [{"block_id": "b1", "quote": "Sync to the cloud is optional"}], "answer": "Sync to the cloud is optional [1]. And mo`,
			[]string{"Sync to the cloud is optional [1]."}},
		{"JSON whose answer comes before its citations shows nothing until the end",
			`{"answer": "Sync to the cloud is optional. And more", "citations": [`,
			nil},
		{"a sentence said again holds the stream",
			"Sync is «optional and needs a subscription» [1]. Sync is «optional and needs",
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			s := &verifiedStream{
				verify: func(text string, cites []jsonCitation, isJSON bool) Verified {
					return verifyText(a, text, cites, isJSON, ctxs, Options{Lang: "en"})
				},
				showable: func(v Verified) bool { return len(v.Citations) > 0 && v.Coverage >= 0.5 },
				send:     func(text string) { got = append(got, text) },
			}
			// One byte at a time: escapes and runes arrive split.
			for i := 0; i < len(tc.reply); i++ {
				if err := s.write(tc.reply[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.shown, "|") || s.Shown() != strings.Join(tc.shown, "") {
				t.Errorf("shown %q, want %q", got, tc.shown)
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
