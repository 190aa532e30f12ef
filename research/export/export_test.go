package export

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func report() *schemas.ResearchReport {
	return &schemas.ResearchReport{ResearchID: "research-1", Question: "Что я знаю о воронах?", Lang: "ru", Mode: schemas.ResearchSynthesis,
		Title:   "Вороны: орудия и память",
		Summary: []schemas.ReportSentence{{Text: "Вороны пользуются орудиями.", Sources: []int{1}}},
		Sections: []schemas.ReportSection{{Title: "Память", Sentences: []schemas.ReportSentence{
			{Text: "Вороны помнят лица.", Sources: []int{2, 7}}, // 7 names no source
			{Text: "Без источника."}}}},
		Disagreements: []schemas.ReportSentence{{Text: "Заметки расходятся в сроке памяти.", Sources: []int{1, 2}}},
		Conclusion:    []schemas.ReportSentence{{Text: "Вороны умны.", Sources: []int{1}}},
		Sources: []schemas.Citation{
			{BlockID: "20261121100831-aaaaaaa", Title: "Птицы", SectionPath: []string{"Птицы", "Вороны"}, Quote: "Вороны пользуются орудиями.",
				Link: "siyuan://blocks/20261121100831-aaaaaaa"},
			{BlockID: "b2f0c1", Title: "Заметки \"о\" памяти", SectionPath: []string{"Память (лица)"}, Quote: "Помнят лица.",
				Link: "file:///home/me/notes/memory notes.md"},
		},
		Reasons: []string{"budget: задача 2 остановлена"}}
}

func TestMarkdownWithLinksCitesEverySourceByItsLink(t *testing.T) {
	md := Markdown(report(), Links)
	for _, want := range []string{
		"# Вороны: орудия и память\n",
		"**Вопрос:** Что я знаю о воронах?",
		"## Кратко\n\nВороны пользуются орудиями. [1](siyuan://blocks/20261121100831-aaaaaaa)\n",
		"## Память\n\nВороны помнят лица. [2](file:///home/me/notes/memory%20notes.md) Без источника.\n",
		"## Где заметки расходятся\n\n- Заметки расходятся в сроке памяти. [1](siyuan://blocks/20261121100831-aaaaaaa) [2](file:///home/me/notes/memory%20notes.md)\n",
		"## Вывод\n",
		"## Источники\n\n1. [Птицы > Вороны](siyuan://blocks/20261121100831-aaaaaaa) (блок 20261121100831-aaaaaaa) — «Вороны пользуются орудиями.»\n" +
			"2. [Заметки \"о\" памяти > Память (лица)](file:///home/me/notes/memory%20notes.md) (блок b2f0c1) — «Помнят лица.»\n",
		"## Примечания\n\n- budget: задача 2 остановлена\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "[7]") {
		t.Errorf("a marker naming no source was written:\n%s", md)
	}
}

func TestSiYuanMarkdownRefersToTheCitedBlocks(t *testing.T) {
	md := Markdown(report(), SiYuanRefs)
	for _, want := range []string{
		"Вороны пользуются орудиями. ((20261121100831-aaaaaaa \"1\"))\n",
		// A Markdown folder's block is not in SiYuan: it stays a link.
		"Вороны помнят лица. [2](file:///home/me/notes/memory%20notes.md)",
		"1. ((20261121100831-aaaaaaa \"Птицы > Вороны\")) — «Вороны пользуются орудиями.»\n",
		"2. [Заметки \"о\" памяти > Память (лица)](file:///home/me/notes/memory%20notes.md) (блок b2f0c1)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("SiYuan Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.HasPrefix(md, "# ") {
		t.Errorf("a SiYuan document is titled by its path, not by a first heading:\n%s", md)
	}
	r := report()
	r.Sources[0].SectionPath = []string{`Say "hi"`}
	r.Sources[0].Title = ""
	if md := Markdown(r, SiYuanRefs); !strings.Contains(md, `((20261121100831-aaaaaaa "Say ”hi”"))`) {
		t.Errorf("a double quote in an anchor must not end it:\n%s", md)
	}
}

func TestFileNameIsSafe(t *testing.T) {
	for _, tc := range []struct{ title, question, want string }{
		{"Вороны: орудия и память", "", "Вороны орудия и память.md"},
		{"../../etc/passwd", "", "etc passwd.md"},
		{"  a\tb\nc  ", "", "a b c.md"},
		{"", "What is <this>?", "What is this.md"},
		{"...", "", "research research-1.md"},
		{strings.Repeat("я", 150), "", strings.Repeat("я", 100) + ".md"},
	} {
		r := &schemas.ResearchReport{ResearchID: "research-1", Title: tc.title, Question: tc.question}
		if got := FileName(r); got != tc.want {
			t.Errorf("FileName(%q, %q) = %q, want %q", tc.title, tc.question, got, tc.want)
		}
	}
}

func TestADisagreementIsWrittenWithEachSidesOwnCitation(t *testing.T) {
	r := report()
	r.Disagreements = []schemas.ReportSentence{{Text: "whole", Sources: []int{1, 2}, Sides: []schemas.ReportSide{
		{Lead: "«Птицы» (2024-03-12):", Text: "вороны помнят лица год;", Sources: []int{1}},
		{Lead: "более новая «Память» (2024-04-02):", Text: "вороны помнят лица пять лет.", Sources: []int{2}, Newer: true}}}}
	want := "- «Птицы» (2024-03-12): вороны помнят лица год; ((20261121100831-aaaaaaa \"1\")) " +
		"более новая «Память» (2024-04-02): вороны помнят лица пять лет. [2](file:///home/me/notes/memory%20notes.md)\n"
	if md := Markdown(r, SiYuanRefs); !strings.Contains(md, want) {
		t.Errorf("SiYuan Markdown lacks %q:\n%s", want, md)
	}
}

func TestASourceIsNamedWithItsTitleOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		c    schemas.Citation
		want string
	}{
		{"a SiYuan path that holds the title inside", schemas.Citation{Title: "Aurora kickoff", SectionPath: []string{"Work and home", "Aurora kickoff", "Decisions"}},
			"Work and home > Aurora kickoff > Decisions"},
		{"a path without the title", schemas.Citation{Title: "Птицы", SectionPath: []string{"Вороны"}}, "Птицы > Вороны"},
		{"a heading that repeats the title", schemas.Citation{Title: "Crows", SectionPath: []string{"crows", "Crows", "Tools"}}, "crows > Tools"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sourceName(c.c); got != c.want {
				t.Errorf("sourceName = %q, want %q", got, c.want)
			}
		})
	}
}
