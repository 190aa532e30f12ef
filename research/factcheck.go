package research

import (
	"regexp"
	"strings"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/answer/claimcheck"
	"github.com/exocortex/exocortex/schemas"
)

// checkFact verifies a fact's text against the blocks it names, each its
// own context, with the answer stage's verifier and its claim checks
// (answer.VerifyClaim). When none states it, the neighbours in order (the
// document's blocks in order) of the named blocks of that document are
// tried, the next block first: one that states it takes the citation
// (a Move). why is the drop reason, with what the block lacks for a claim
// check that failed ("not_stated: time \"02:03\" is not in the block").
func checkFact(a *analysis.Analyzer, text string, named, order []schemas.Context) (cites []schemas.Citation, moves []Move, why string) {
	cites, why = answer.VerifyClaim(a, text, named)
	if len(cites) > 0 {
		return cites, nil, ""
	}
	pos := map[string]int{}
	for i, b := range order {
		pos[b.BlockID] = i
	}
	tried := map[string]bool{}
	for _, c := range named {
		tried[c.BlockID] = true
	}
	for _, c := range named {
		k, ok := pos[c.BlockID]
		if !ok {
			continue
		}
		for _, j := range []int{k + 1, k - 1} {
			if j < 0 || j >= len(order) || tried[order[j].BlockID] {
				continue
			}
			tried[order[j].BlockID] = true
			if got, _ := answer.VerifyClaim(a, text, order[j:j+1]); len(got) > 0 {
				cites = append(cites, got...)
				moves = append(moves, Move{From: c.BlockID, To: order[j].BlockID})
				break
			}
		}
	}
	if len(cites) > 0 {
		return cites, moves, ""
	}
	if why == "" {
		why = answer.DropUnsupported
	}
	if why == answer.DropNotStated {
		for _, c := range named {
			if ps := claimcheck.Check(a, text, c.Text, claimcheck.Options{CrossLanguage: crossLanguage(text, c.Text)}); len(ps) > 0 {
				return nil, nil, why + ": " + ps[0].String()
			}
		}
	}
	return nil, nil, why
}

// conflicts is answer.Conflicts: newer says otherwise than older.
func conflicts(a *analysis.Analyzer, older, newer string) bool {
	return answer.Conflicts(a, older, newer)
}

// ChangeMarked tells whether text says that something changed
// (answer.ChangeMarked: "now runs every 6 hours", "теперь раз в 6 часов").
func ChangeMarked(text string) bool { return answer.ChangeMarked(text) }

func crossLanguage(a, b string) bool { return answer.CrossLanguage(a, b) }

// lemmaSet is the set of text's content lemmas (words, stopwords aside,
// numbers kept; the words themselves without lemmas in Plain mode).
func lemmaSet(a *analysis.Analyzer, text string) map[string]bool {
	set := map[string]bool{}
	for _, t := range analysis.Tokenize(text) {
		if analysis.IsStopword(t.Text) {
			continue
		}
		ls := []string{t.Text}
		if a != nil && a.Mode() != analysis.Plain {
			if l := strings.Fields(a.Lemmas(t.Text)); len(l) > 0 {
				ls = l
			}
		}
		for _, l := range ls {
			set[l] = true
		}
	}
	return set
}

// shared counts the members of want that have holds.
func shared(want, have map[string]bool) int {
	n := 0
	for l := range want {
		if have[l] {
			n++
		}
	}
	return n
}

// sentenceEnd ends a sentence: . ! ? … before a space, or a line break.
var sentenceEnd = regexp.MustCompile(`[.!?…]+["»”)]*\s+|\n+`)

// splitSentences cuts text into sentences, each with its end mark.
func splitSentences(text string) []string {
	var out []string
	last := 0
	for _, loc := range sentenceEnd.FindAllStringIndex(text, -1) {
		if s := strings.TrimSpace(text[last:loc[1]]); s != "" {
			out = append(out, s)
		}
		last = loc[1]
	}
	if s := strings.TrimSpace(text[last:]); s != "" {
		out = append(out, s)
	}
	return out
}
