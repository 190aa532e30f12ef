package research

import (
	"regexp"
	"strings"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/answer/claimcheck"
	"github.com/exocortex/exocortex/lang"
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

// factKinds are the claim check problems that name a value: a number,
// date, time, ratio, quantity, percentage, version, amount or name.
var factKinds = map[string]bool{"number": true, "date": true, "time": true, "ratio": true, "quantity": true, "percent": true,
	"version": true, "money": true, "name": true}

// valuesMissing tells whether claim gives a value (number, date, time,
// name...) that evidence does not.
func valuesMissing(a *analysis.Analyzer, claim, evidence string) bool {
	for _, p := range claimcheck.Check(a, claim, evidence, claimcheck.Options{CrossLanguage: crossLanguage(claim, evidence)}) {
		if factKinds[p.Kind] {
			return true
		}
	}
	return false
}

// conflicts tells whether newer says otherwise than older rather than
// refining it: each gives a value the other lacks ("02:00" and "every 6
// hours", "Anna" and "Boris"), or newer gives a value older lacks and
// says that something changed ("now", "теперь").
func conflicts(a *analysis.Analyzer, older, newer string) bool {
	if !valuesMissing(a, newer, older) {
		return false
	}
	return valuesMissing(a, older, newer) || ChangeMarked(newer)
}

// changeRE matches the words that say a statement replaces an earlier one.
var changeRE = regexp.MustCompile(`(?i)(?:^|[^\p{L}])(?:now|no longer|not anymore|any more|anymore|instead|changed|switched|moved|updated|from now on|as of|since then|henceforth|` +
	`теперь|сейчас|отныне|больше не|уже не|вместо|изменил\p{L}*|изменен\p{L}*|изменён\p{L}*|перен[её]с\p{L}*|перенесен\p{L}*|перевел\p{L}*|перевели|обновл\p{L}*|с тех пор|начиная с)(?:$|[^\p{L}])`)

// ChangeMarked tells whether text says that something changed ("now runs
// every 6 hours", "теперь раз в 6 часов", "was moved to", "перенесли на").
func ChangeMarked(text string) bool { return changeRE.MatchString(text) }

func crossLanguage(a, b string) bool {
	la, lb := lang.DetectLang(a), lang.DetectLang(b)
	return la != "" && lb != "" && la != lb
}

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
