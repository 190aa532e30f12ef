package research

import (
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// evidence is the report without a language model: themes are the section
// headings of the documents the best passages come from, in the order of
// their best passage, and each theme lists its best passages.
func (b *builder) evidence(d *schemas.ResearchDraft, facts []numberedFact, cfg ReportConfig) {
	b.rep.Title = fmt.Sprintf(reportText(b.lang, "title_evidence"), oneLine(d.Question))
	index := map[string]int{}
	var kept []numberedFact
	for _, nf := range facts {
		var blocks []string
		for _, id := range nf.Fact.BlockIDs {
			if _, ok := b.blocks[id]; ok || hasCitation(nf.Fact, id) {
				blocks = append(blocks, id)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		theme := b.theme(nf.Fact, blocks[0])
		k, ok := index[theme]
		if !ok {
			if len(b.sections) >= cfg.EvidenceThemes {
				continue
			}
			k = len(b.sections)
			index[theme] = k
			b.sections = append(b.sections, pendingSection{title: theme})
		}
		if len(b.sections[k].sentences) >= cfg.EvidencePerTheme {
			continue
		}
		b.sections[k].sentences = append(b.sections[k].sentences, pendingSentence{text: oneLine(nf.Fact.Text), blocks: blocks})
		if b.quotes == nil {
			b.quotes = map[string]string{}
		}
		if _, ok := b.quotes[blocks[0]]; !ok {
			b.quotes[blocks[0]] = oneLine(nf.Fact.Text)
		}
		b.kept++
		kept = append(kept, nf)
	}
	b.setFacts(kept)
}

func hasCitation(f schemas.Fact, blockID string) bool {
	for _, c := range f.Citations {
		if c.BlockID == blockID {
			return true
		}
	}
	return false
}

// theme is a passage's section heading (the last of its section path), or
// its document's title.
func (b *builder) theme(f schemas.Fact, block string) string {
	c := b.citation(block, f)
	if n := len(c.SectionPath); n > 0 && strings.TrimSpace(c.SectionPath[n-1]) != "" {
		return strings.TrimSpace(c.SectionPath[n-1])
	}
	if c.Title != "" {
		return c.Title
	}
	return reportText(b.lang, "untitled")
}
