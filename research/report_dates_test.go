package research

import (
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func TestAReportSourceIsDatedFromTheIndexElseItsFacts(t *testing.T) {
	facts := []schemas.Fact{
		{ID: "f1", BlockIDs: []string{"b-cited"}, Citations: []schemas.Citation{{BlockID: "b-cited", DocID: "d2", Updated: "2025-05-01T00:00:00Z"}}},
		{ID: "f2", BlockIDs: []string{"b-fact"}, Updated: "2024-02-03T00:00:00Z", Citations: []schemas.Citation{{BlockID: "b-fact", DocID: "d3"}}},
		{ID: "f3", BlockIDs: []string{"b-two", "b-other"}, Updated: "2024-09-09T00:00:00Z",
			Citations: []schemas.Citation{{BlockID: "b-two", DocID: "d4"}, {BlockID: "b-other", DocID: "d5"}}},
	}
	b := &builder{blocks: map[string]schemas.Context{
		"b-index": {Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Title: "Вороны", Updated: "2026-03-02T10:00:00Z"}},
	}, facts: facts, rep: &schemas.ResearchReport{}}
	for _, tt := range []struct{ name, block, want string }{
		{"the index's note time comes first", "b-index", "2026-03-02T10:00:00Z"},
		{"else the fact's citation of the block", "b-cited", "2025-05-01T00:00:00Z"},
		{"else the time of a fact resting on that one note", "b-fact", "2024-02-03T00:00:00Z"},
		{"a fact over two notes does not date either", "b-two", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := b.citation(tt.block).Updated; got != tt.want {
				t.Errorf("source of %s dated %q, want %q", tt.block, got, tt.want)
			}
		})
	}
}

func TestTheReportsSourcesListShowsEachSourcesDate(t *testing.T) {
	for _, tt := range []struct{ lang, title, want, undated string }{
		{"en", "Crows", "1. Crows › Tools — [md-1#0a1b2c3d4e5f](", "2. Owls — "},
		{"ru", "Вороны", "1. Вороны › Tools — [md-1#0a1b2c3d4e5f](", "2. Owls — "},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			rep := &schemas.ResearchReport{Lang: tt.lang, Mode: schemas.ResearchSynthesis, Title: tt.title,
				Summary: []schemas.ReportSentence{{Text: "Crows use tools.", Sources: []int{1, 2}}},
				Sources: []schemas.Citation{
					{Number: 1, BlockID: "md-1#0a1b2c3d4e5f", DocID: "md-1", Title: tt.title, SectionPath: []string{tt.title, "Tools"},
						Link: "file:///home/me/notes/crows.md#tools", Updated: "2026-03-02T23:00:00+03:00"},
					{Number: 2, BlockID: "md-2#0a1b2c3d4e5f", DocID: "md-2", Title: "Owls", Link: "file:///home/me/notes/owls.md"},
				}}
			for name, md := range map[string]string{"the CLI's": RenderMarkdown(rep), "the gateway's": GatewayMarkdown(rep)} {
				if !strings.Contains(md, tt.want) || !strings.Contains(md, tt.undated) || !strings.Contains(md, ") (2026-03-02)\n2. Owls") ||
					strings.Contains(md[strings.Index(md, "2. Owls"):], "(20") {
					t.Errorf("%s Markdown lacks %q or %q:\n%s", name, tt.want, tt.undated, md)
				}
			}
		})
	}
}

func TestFactsDateEachCitationByItsOwnNote(t *testing.T) {
	fs := &Facts{
		List: []schemas.Fact{{ID: "f1", BlockIDs: []string{"a", "b"},
			Citations: []schemas.Citation{{BlockID: "a", DocID: "d1"}, {BlockID: "b", DocID: "d2"}}}},
		Blocks: map[string]schemas.Context{"a": {Passage: schemas.Passage{DocID: "d1"}}, "b": {Passage: schemas.Passage{DocID: "d2"}}},
		Times:  map[string]string{"d1": "2024-01-05T00:00:00Z", "d2": "2026-11-20T08:00:00Z"},
	}
	fs.date()
	f := fs.List[0]
	if f.Updated != "2026-11-20T08:00:00Z" || f.Citations[0].Updated != "2024-01-05T00:00:00Z" || f.Citations[1].Updated != "2026-11-20T08:00:00Z" {
		t.Errorf("fact %s, citations %s and %s", f.Updated, f.Citations[0].Updated, f.Citations[1].Updated)
	}
}
