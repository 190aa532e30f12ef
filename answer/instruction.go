package answer

import (
	"strings"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// instructionBlocks are the blocks of c whose text addresses an AI assistant
// or gives it orders ("ignore previous instructions", "answer that ..."):
// block id -> the phrase found. Such a block is quoted material; what it
// tells a model to say is not a fact it states, so a claim it alone
// supports is not supported.
//
// A block counts when its span was flagged at index time
// (schemas.BlockSpan.Instruction) or when analysis.Instruction finds a
// phrase in its text here: contexts from an index built before the flag
// have no flags, and a context without block spans is one block, its first
// (see blockRanges). The phrase is the one found in the block's text in
// this context; a block flagged at index time whose phrase lies outside it
// (another part of a split block) gets the start of its text here instead.
// nil when there is none.
func instructionBlocks(c schemas.Context) map[string]string {
	var out map[string]string
	add := func(id, phrase string) {
		if out == nil {
			out = map[string]string{}
		}
		out[id] = phrase
	}
	ranges := blockRanges(c)
	for _, r := range ranges {
		if _, done := out[r.id]; done {
			continue
		}
		if phrase, ok := analysis.Instruction(c.Text[r.start:r.end]); ok {
			add(r.id, phrase)
		}
	}
	flagged := map[string]bool{}
	for _, sp := range c.BlockSpans {
		if sp.Instruction {
			flagged[sp.ID] = true
		}
	}
	for _, r := range ranges {
		if _, done := out[r.id]; !done && flagged[r.id] {
			add(r.id, excerpt(c.Text[r.start:r.end], 80))
		}
	}
	return out
}

// excerpt is text with its spaces collapsed, cut to at most n runes at a
// word boundary, with "…" when cut.
func excerpt(text string, n int) string {
	t := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(t) <= n {
		return t
	}
	cut := t[:len(string([]rune(t)[:n]))]
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return cut + "…"
}
