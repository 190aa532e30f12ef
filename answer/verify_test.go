package answer_test

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// storage is one chunk of four blocks with their spans, and a second chunk
// without spans (indexed before block spans existed).
func storage() []schemas.Context {
	blocks := []struct{ id, text string }{
		{"20240101000000-head001", "## Storage"},
		{"20240101000000-para001", "SiYuan keeps all data in the workspace folder on your own disk."},
		{"20240101000000-para002", "Sync to the cloud is optional and needs a subscription."},
		{"20240101000000-para003", "You cannot open the same workspace from two devices at once."},
	}
	var text strings.Builder
	var spans []schemas.BlockSpan
	var ids []string
	for i, b := range blocks {
		if i > 0 {
			text.WriteString("\n\n")
		}
		spans = append(spans, schemas.BlockSpan{ID: b.id, Start: text.Len(), End: text.Len() + len(b.text)})
		text.WriteString(b.text)
		ids = append(ids, b.id)
	}
	return []schemas.Context{
		{Passage: schemas.Passage{ChunkID: "guide:1", DocID: "guide", Title: "Guide", SectionPath: []string{"Guide", "Storage"},
			BlockID: ids[0], BlockIDs: ids, BlockSpans: spans, Text: text.String()}},
		{Passage: schemas.Passage{ChunkID: "birds:1", DocID: "birds", Title: "Птицы", BlockID: "20210808180117-abc1234",
			BlockIDs: []string{"20210808180117-abc1234", "20210808180117-abc1235"}, Text: "Вороны используют инструменты для добычи пищи. Они живут стаями."}},
	}
}

func TestVerifyCitesTheBlockThatHoldsTheSupport(t *testing.T) {
	a := analyzer(t)
	cases := []struct {
		name        string
		answer      string
		text        string   // the verified text
		blocks      []string // the kept citations' block ids, in order
		corrected   int
		unsupported []string // reasons
	}{
		{"a quote cites the block that holds it, not the chunk's heading",
			"Sync is optional: «sync to the cloud is optional and needs a subscription» [1].",
			"Sync is optional: «sync to the cloud is optional and needs a subscription» [1].",
			[]string{"20240101000000-para002"}, 0, nil},
		{"a quote that leaves words out is found piece by piece",
			"Sync needs «sync to the cloud … needs a subscription» [1].",
			"Sync needs «sync to the cloud … needs a subscription» [1].",
			[]string{"20240101000000-para002"}, 0, nil},
		{"a quote whose pieces are not in order is not found",
			"Sync needs «needs a subscription ... sync to the cloud» [1].",
			"", nil, 0, []string{answer.DropQuoteNotFound}},
		{"a claim without a quote cites the block that holds its words",
			"SiYuan keeps its data in a workspace folder on disk [1].",
			"SiYuan keeps its data in a workspace folder on disk [1].",
			[]string{"20240101000000-para001"}, 0, nil},
		{"a chunk without block spans is cited by its first block",
			"Вороны используют инструменты [2].",
			"Вороны используют инструменты [1].",
			[]string{"20210808180117-abc1234"}, 0, nil},
		{"a block id marker of another block of the chunk is corrected",
			"«You cannot open the same workspace from two devices» [20240101000000-head001].",
			"«You cannot open the same workspace from two devices» [1].",
			[]string{"20240101000000-para003"}, 1, nil},
		{"markers are renumbered in order of first use and a block is cited once",
			"Sync to the cloud needs a subscription [1]. Вороны используют инструменты [2]. The cloud sync is optional [1].",
			"Sync to the cloud needs a subscription [1]. Вороны используют инструменты [2]. The cloud sync is optional [1].",
			[]string{"20240101000000-para002", "20210808180117-abc1234"}, 0, nil},
		{"an unsupported sentence is removed and the rest renumbered",
			"SiYuan stores every note on a remote server in Peru [1]. Вороны используют инструменты [2].",
			"Вороны используют инструменты [1].",
			[]string{"20210808180117-abc1234"}, 0, []string{answer.DropUnsupported}},
		{"a negated claim is not supported by the block it negates",
			"It is not true that «SiYuan keeps all data in the workspace folder» [1].",
			"", nil, 0, []string{answer.DropPolarity}},
		{"a claim that drops the block's negation is not supported",
			"You can open «the same workspace from two devices at once» [1].",
			"", nil, 0, []string{answer.DropPolarity}},
		{"a claim that keeps the block's negation is supported",
			"Нельзя: «you cannot open the same workspace from two devices at once» [1].",
			"Нельзя: «you cannot open the same workspace from two devices at once» [1].",
			[]string{"20240101000000-para003"}, 0, nil},
		{"a one-word quote is no support",
			"The gist is «workspace» [1].",
			"", nil, 0, []string{answer.DropUnsupported}},
		{"a quote its context does not hold is re-cited to the context that holds it",
			"The guide says «SiYuan keeps all data in the workspace folder» [2].",
			"The guide says «SiYuan keeps all data in the workspace folder» [1].",
			[]string{"20240101000000-para001"}, 1, nil},
		{"a quote no context holds is no support",
			"The guide says «SiYuan keeps all data in a cloud folder» [2].",
			"", nil, 0, []string{answer.DropQuoteNotFound}},
		{"a sentence without content words is no claim and loses its marker",
			"Yes [1]. Sync to the cloud is optional [1].",
			"Yes. Sync to the cloud is optional [1].",
			[]string{"20240101000000-para002"}, 0, nil},
		{"a JSON answer without markers is placed by its quotes",
			`{"answer": "Sync to the cloud is optional. It needs a subscription. SiYuan runs on Mars.", "citations": [{"block_id": "20240101000000-head001", "quote": "Sync to the cloud is optional and needs a subscription"}], "confidence": 0.9}`,
			"Sync to the cloud is optional [1]. It needs a subscription [1].",
			[]string{"20240101000000-para002"}, 2, []string{answer.DropUncited}},
		{"a JSON answer in fences with markers naming its citations",
			"```json\n{\"answer\": \"Data stays «in the workspace folder on your own disk» [1].\", \"citations\": [{\"block_id\": \"20240101000000-para001\", \"quote\": \"in the workspace folder on your own disk\"}]}\n```",
			"Data stays «in the workspace folder on your own disk» [1].",
			[]string{"20240101000000-para001"}, 0, nil},
		{"a JSON block_id not among the contexts is re-cited to the block that holds its quote",
			`{"answer": "Sync to the cloud is optional.", "citations": [{"block_id": "20990101000000-zzzzzzz", "quote": "Sync to the cloud is optional"}]}`,
			"Sync to the cloud is optional [1].", []string{"20240101000000-para002"}, 1, nil},
		{"a JSON block_id not among the contexts, whose quote no context holds, is dropped",
			`{"answer": "Sync to the moon is optional.", "citations": [{"block_id": "20990101000000-zzzzzzz", "quote": "Sync to the moon is optional"}]}`,
			"", nil, 0, []string{answer.DropNotRetrieved}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := answer.Verify(a, c.answer, storage())
			if v.Text != c.text {
				t.Errorf("text = %q, want %q", v.Text, c.text)
			}
			var got []string
			for i, cit := range v.Citations {
				got = append(got, cit.BlockID)
				if cit.Number != i+1 {
					t.Errorf("citation %d has number %d", i, cit.Number)
				}
				if cit.Link != "siyuan://blocks/"+cit.BlockID || cit.Title == "" {
					t.Errorf("citation %+v: want the block's link and its document's title", cit)
				}
				if len(cit.Spans) == 0 {
					t.Errorf("citation %d supports no span", i+1)
				}
				runes := []rune(v.Text)
				for _, sp := range cit.Spans {
					claim := string(runes[sp.Start:sp.End])
					if !strings.Contains(claim, "["+itoa(i+1)) && !strings.Contains(claim, ", "+itoa(i+1)) {
						t.Errorf("span %v of citation %d is %q, which does not cite it", sp, i+1, claim)
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(c.blocks, " ") {
				t.Errorf("cited blocks %q, want %q (dropped %+v)", got, c.blocks, v.Dropped)
			}
			if len(v.Corrected) != c.corrected {
				t.Errorf("corrected %+v, want %d", v.Corrected, c.corrected)
			}
			var reasons []string
			for _, u := range v.Unsupported {
				reasons = append(reasons, u.Reason)
			}
			if strings.Join(reasons, " ") != strings.Join(c.unsupported, " ") {
				t.Errorf("unsupported %+v, want reasons %q", v.Unsupported, c.unsupported)
			}
			if len(c.unsupported) > 0 && v.Confidence >= 1 {
				t.Errorf("confidence %v with unsupported text", v.Confidence)
			}
		})
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestConfidenceFollowsTheShareAndStrengthOfSupport(t *testing.T) {
	a := analyzer(t)
	quote := answer.Verify(a, "«Sync to the cloud is optional and needs a subscription» [1].", storage())
	words := answer.Verify(a, "Sync to the cloud needs a subscription [1].", storage())
	half := answer.Verify(a, "«Sync to the cloud is optional and needs a subscription» [1]. SiYuan runs on Mars [1].", storage())
	empty := answer.Verify(a, "Yes [1]. Indeed [1].", storage())
	if quote.Confidence != 1 || words.Confidence >= quote.Confidence || words.Confidence < 0.7 {
		t.Errorf("quote %v, words %v: a quote is the strongest support, most of the words weaker", quote.Confidence, words.Confidence)
	}
	if half.Confidence != 0.5 || half.Coverage != 0.5 || half.Claims != 2 {
		t.Errorf("half supported: confidence %v, coverage %v, claims %d", half.Confidence, half.Coverage, half.Claims)
	}
	if empty.Confidence != 0 || empty.Claims != 0 || len(empty.Citations) != 0 {
		t.Errorf("an answer without content words: %+v", empty)
	}
}

func TestAnAnswerThatOnlySaysTheNotesDoNotAnswerIsAnAbstention(t *testing.T) {
	a := analyzer(t)
	for _, text := range []string{
		"The notes do not say how much the subscription costs.",
		"В заметках не сказано, сколько стоит подписка.",
		`{"answer": "Your notes don't mention the price.", "citations": [], "confidence": 0.1}`,
		"Об этом в заметках нет информации.",
	} {
		v := answer.Verify(a, text, storage())
		if !v.Abstained || v.Claims != 0 || len(v.Citations) != 0 || len(v.Unsupported) != 0 || v.Text == "" || strings.Contains(v.Text, "{") {
			t.Errorf("%s: %+v", text, v)
		}
	}
	v := answer.Verify(a, "The notes do not say what it costs. Sync to the cloud needs a subscription [1].", storage())
	if v.Abstained || v.Claims != 1 || v.Supported != 1 || !strings.HasPrefix(v.Text, "The notes do not say") {
		t.Errorf("an abstention beside a supported claim is kept as text, not counted: %+v", v)
	}
}

// Polarity is judged against the sentence that supports the claim, so a "no"
// elsewhere in the block neither fails a plain claim nor passes a negated one.
func TestANoElsewhereInTheBlockDoesNotDecidePolarity(t *testing.T) {
	ctxs := []schemas.Context{{Passage: schemas.Passage{ChunkID: "c", DocID: "d", BlockID: "b1", BlockIDs: []string{"b1"},
		Text: "Backups run every night at 02:30 from a systemd timer. There is no backup on holidays, and no cloud copy."}}}
	for _, c := range []struct {
		name, answer string
		kept         bool
	}{
		{"a plain claim beside a negated sentence is supported", "Backups run every night at 02:30 from a systemd timer [1].", true},
		{"a negated claim of a plain sentence is not", "Backups do not run every night at 02:30 from a systemd timer [1].", false},
		{"a claim with its number changed is not, whatever the block's other sentences", "Backups run every night at 03:30 from a systemd timer [1].", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := answer.VerifyWith(analyzer(t), c.answer, ctxs, answer.Options{Lang: "en"})
			if kept := len(v.Citations) == 1; kept != c.kept {
				t.Errorf("kept %v, want %v: %+v", kept, c.kept, v.Dropped)
			}
		})
	}
}
