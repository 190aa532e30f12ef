package research

import (
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func TestTheModelsReportIsReadWhateverItsWrapping(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		ok    bool
		want  []string // the first summary sentence's fact ids
	}{
		{"plain JSON", `{"title": "T", "summary": [{"text": "A.", "facts": ["F1", "F2"]}]}`, true, []string{"F1", "F2"}},
		{"in code fences with words around", "Here it is:\n```json\n{\"title\": \"T\", \"summary\": [{\"text\": \"A.\", \"facts\": [\"f3\"]}]}\n```\nDone.", true, []string{"F3"}},
		{"fact ids as numbers", `{"title": "T", "summary": [{"text": "A.", "facts": [4, 5]}]}`, true, []string{"F4", "F5"}},
		{"ids written into the text", `{"title": "T", "summary": [{"text": "A holds [F2, F7].", "facts": []}]}`, true, []string{"F2", "F7"}},
		{"a bare string sentence cites nothing", `{"title": "T", "summary": ["A."]}`, true, nil},
		{"prose", "The notes say many things.", false, nil},
		{"an empty object", `{}`, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, ok := parseReportReply(c.reply)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			text, ids := cleanSentence(rep.Summary[0])
			if !slices.Equal(ids, c.want) || strings.Contains(text, "[") {
				t.Fatalf("sentence %q cites %q, want %q and no markers", text, ids, c.want)
			}
		})
	}
}

func TestMarkersGoBeforeTheClosingPunctuation(t *testing.T) {
	cases := map[string]schemas.ReportSentence{
		"Crows use tools [1, 3].": {Text: "Crows use tools.", Sources: []int{1, 3}},
		"Вороны помнят лица [2]…": {Text: "Вороны помнят лица…", Sources: []int{2}},
		"No sources here.":        {Text: "No sources here."},
		"Is it so [4]?":           {Text: "Is it so?", Sources: []int{4}},
	}
	for want, s := range cases {
		if got := sentenceMarkdown(s); got != want {
			t.Errorf("sentenceMarkdown(%+v) = %q, want %q", s, got, want)
		}
	}
	if got := withMarker("Crows use tools.", 2); got != "Crows use tools [1, 2]." {
		t.Errorf("withMarker = %q", got)
	}
}

func TestFixedStringsFollowTheReportsLanguage(t *testing.T) {
	rep := &schemas.ResearchReport{Lang: "ru", Mode: schemas.ResearchEvidenceOnly, Title: "Т",
		Reasons:  []string{"no_llm_provider: evidence only was asked for (--no-llm)"},
		Sections: []schemas.ReportSection{{Title: "Память", Sentences: []schemas.ReportSentence{{Text: "Вороны помнят лица.", Sources: []int{1}}}}},
		Sources:  []schemas.Citation{{BlockID: "20240101120000-abcdefg", Title: "Вороны", SectionPath: []string{"Вороны", "Память"}, Link: "siyuan://blocks/20240101120000-abcdefg"}},
	}
	md := RenderMarkdown(rep)
	for _, want := range []string{"*Синтез не написан: запрошены только фрагменты заметок (--no-llm).", "## Память", "- Вороны помнят лица [1].",
		"## Источники", "1. Вороны › Память — [20240101120000-abcdefg](siyuan://blocks/20240101120000-abcdefg)"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	rep.Lang = "en"
	if md := RenderMarkdown(rep); !strings.Contains(md, "*No synthesis was written: evidence only was asked for (--no-llm).") || !strings.Contains(md, "## Sources") {
		t.Errorf("English Markdown:\n%s", md)
	}
}
