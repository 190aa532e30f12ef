package research

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func TestEverySourceKindOpensAtItsBlock(t *testing.T) {
	cases := []struct {
		name, block, path, title string
		section                  []string
		want                     string
	}{
		{"a SiYuan block opens in SiYuan", "20240101120000-abcdefg", "", "Crows", []string{"Birds", "Crows"}, "siyuan://blocks/20240101120000-abcdefg"},
		{"a Markdown block under a heading opens at the heading's anchor", "md-1#0a1b2c3d4e5f", "/home/me/notes/crows.md", "Crows",
			[]string{"Crows", "Tool use"}, "file:///home/me/notes/crows.md#tool-use"},
		{"a Markdown block in a folder keeps the heading below the title", "md-1#0a1b2c3d4e5f", "/home/me/notes/birds/crows.md", "Crows",
			[]string{"birds", "Crows", "Memory", "Faces (2019 study)"}, "file:///home/me/notes/birds/crows.md#faces-2019-study"},
		{"a Russian heading's anchor keeps its letters", "md-2#0a1b2c3d4e5f", "/home/me/заметки/вороны.md", "Вороны",
			[]string{"Вороны", "Орудия труда"}, "file:///home/me/%D0%B7%D0%B0%D0%BC%D0%B5%D1%82%D0%BA%D0%B8/%D0%B2%D0%BE%D1%80%D0%BE%D0%BD%D1%8B.md#%D0%BE%D1%80%D1%83%D0%B4%D0%B8%D1%8F-%D1%82%D1%80%D1%83%D0%B4%D0%B0"},
		{"a Markdown block under the title alone opens the file", "md-1#0a1b2c3d4e5f", "/home/me/my notes/crows.md", "Crows",
			[]string{"Crows"}, "file:///home/me/my%20notes/crows.md"},
		{"a block with no path and no SiYuan id has no link", "md-1#0a1b2c3d4e5f", "", "Crows", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := BlockLink(c.block, c.path, c.title, c.section); got != c.want {
				t.Errorf("BlockLink = %q, want %q", got, c.want)
			}
		})
	}
}

func TestTheGatewaysReportLinksTheNoteViewAtTheBlock(t *testing.T) {
	rep := &schemas.ResearchReport{Lang: "en", Mode: schemas.ResearchSynthesis, Title: "Crows",
		Summary: []schemas.ReportSentence{{Text: "Crows use tools.", Sources: []int{1, 2}}},
		Sources: []schemas.Citation{
			{Number: 1, BlockID: "md-1#0a1b2c3d4e5f", DocID: "md-1", Title: "Crows", SectionPath: []string{"Crows", "Tools"},
				Link: "file:///home/me/notes/crows.md#tools"},
			{Number: 2, BlockID: "20240101120000-abcdefg", DocID: "20240101110000-docdocd", Title: "Вороны", SectionPath: []string{"Птицы", "Вороны"},
				Link: "siyuan://blocks/20240101120000-abcdefg"},
		}}
	gw := GatewayMarkdown(rep)
	for _, want := range []string{
		"1. Crows › Tools — [md-1#0a1b2c3d4e5f](/notes/md-1#md-1%230a1b2c3d4e5f)",
		"2. Птицы › Вороны — [20240101120000-abcdefg](/notes/20240101110000-docdocd#20240101120000-abcdefg) ([SiYuan](siyuan://blocks/20240101120000-abcdefg))",
	} {
		if !strings.Contains(gw, want) {
			t.Errorf("the gateway's Markdown lacks %q:\n%s", want, gw)
		}
	}
	cli := RenderMarkdown(rep)
	for _, want := range []string{"1. Crows › Tools — [md-1#0a1b2c3d4e5f](file:///home/me/notes/crows.md#tools)",
		"2. Птицы › Вороны — [20240101120000-abcdefg](siyuan://blocks/20240101120000-abcdefg)"} {
		if !strings.Contains(cli, want) {
			t.Errorf("the CLI's Markdown lacks %q:\n%s", want, cli)
		}
	}
	if got := NoteViewLink("notes/a b.md", "notes/a b.md#x1"); got != "/notes/notes%2Fa%20b.md#notes%2Fa%20b.md%23x1" {
		t.Errorf("NoteViewLink = %q", got)
	}
}

func TestASourceLabelNamesTheTitleOnce(t *testing.T) {
	cases := []struct {
		name string
		c    schemas.Citation
		want string
	}{
		{"a section path that starts with the title", schemas.Citation{Title: "Crows", SectionPath: []string{"Crows", "Tools"}}, "Crows › Tools"},
		{"a section path without the title", schemas.Citation{Title: "Crows", SectionPath: []string{"Tools"}}, "Crows › Tools"},
		{"a SiYuan title path with the title inside", schemas.Citation{Title: "Database", SectionPath: []string{"General Operations", "Database", "Views"}}, "General Operations › Database › Views"},
		{"a heading that repeats the title in other case", schemas.Citation{Title: "Backup setup", SectionPath: []string{"Backup Setup", "Schedule"}}, "Backup Setup › Schedule"},
		{"a heading said twice", schemas.Citation{Title: "Вороны", SectionPath: []string{"Вороны", "Вороны", "Память"}}, "Вороны › Память"},
		{"nothing but the block id", schemas.Citation{BlockID: "b1"}, "b1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SourceLabel(c.c); got != c.want {
				t.Errorf("SourceLabel = %q, want %q", got, c.want)
			}
		})
	}
}

func TestAReportBuiltOnMarkdownBlocksLinksTheirHeadings(t *testing.T) {
	b := claimBuilder(t, "en", nil)
	b.blocks["md-1#aa"] = schemas.Context{Passage: schemas.Passage{ChunkID: "md-1:0", DocID: "md-1", Title: "Crows", Path: "/home/me/notes/crows.md",
		SectionPath: []string{"Crows", "Tools"}, BlockID: "md-1#aa", Text: "Crows bend wire into hooks."}}
	if c := b.citation("md-1#aa"); c.Link != "file:///home/me/notes/crows.md#tools" {
		t.Errorf("an indexed block links %q", c.Link)
	}
	// A block the index lacks: the fact's citation's file link, at the heading.
	f := schemas.Fact{Citations: []schemas.Citation{{BlockID: "md-1#bb", DocID: "md-1", Title: "Crows", SectionPath: []string{"Crows", "Memory"},
		Link: "file:///home/me/notes/crows.md"}}}
	if c := b.citation("md-1#bb", f); c.Link != "file:///home/me/notes/crows.md#memory" {
		t.Errorf("a block known from its fact links %q", c.Link)
	}
}
