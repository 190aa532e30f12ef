package answer

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer/claimcheck"
	"github.com/exocortex/exocortex/lang"
)

// stated lists what claim says that block does not state: numbers, dates,
// units, names, limiting words, clauses (claimcheck). cross: the claim
// translates the block.
func stated(a *analysis.Analyzer, claim, block string, cross bool) []claimcheck.Problem {
	return claimcheck.Check(a, claim, block, claimcheck.Options{CrossLanguage: cross})
}

// minLanguageLetters is how many letters a claim needs outside its quotes
// for its language to be judged.
const minLanguageLetters = 12

// inLanguage tells whether claim, its quotes, markers and names aside, is
// in language want; a claim with too few letters of its own passes.
func inLanguage(claim, want string) bool {
	own := unquoted(claim)
	letters := 0
	for _, r := range own {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if letters < minLanguageLetters {
		return true
	}
	got := lang.DetectLang(own)
	return got == "" || got == want
}

// unquoted is text without its «», “” and "" quotes, its citation markers
// and its inline code.
func unquoted(text string) string {
	text = quoted.ReplaceAllString(text, " ")
	text = marker.ReplaceAllString(text, " ")
	text = inlineCode.ReplaceAllString(text, " ")
	return strings.TrimSpace(text)
}

var inlineCode = regexp.MustCompile("`[^`]*`")
