package answer

import (
	"regexp"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer/claimcheck"
	"github.com/exocortex/exocortex/lang"
)

// What two notes disagree on, decided from their text alone (no language
// model): shared by answers (MarkNewer) and research reports (research's
// fact conflicts and disagreements).

// valueKinds are the claim check problems that name a value: a number,
// date, time, ratio, quantity, percentage, version, amount or name.
var valueKinds = map[string]bool{"number": true, "date": true, "time": true, "ratio": true, "quantity": true, "percent": true,
	"version": true, "money": true, "name": true}

// MissingValues are the kinds of value (number, date, time, quantity,
// money, name...) that claim gives and evidence does not: empty when
// evidence states every value of claim.
func MissingValues(a *analysis.Analyzer, claim, evidence string) map[string]bool {
	var out map[string]bool
	for _, p := range claimcheck.Check(a, claim, evidence, claimcheck.Options{CrossLanguage: CrossLanguage(claim, evidence)}) {
		if valueKinds[p.Kind] {
			if out == nil {
				out = map[string]bool{}
			}
			out[p.Kind] = true
		}
	}
	return out
}

// Conflicts tells whether newer says otherwise than older rather than
// refining it: each gives a value the other lacks ("02:00" and "every 6
// hours", "Anna" and "Boris"), or newer gives a value older lacks and
// says that something changed ("now", "теперь"). Research's rule for two
// facts that a model already said disagree.
func Conflicts(a *analysis.Analyzer, older, newer string) bool {
	if len(MissingValues(a, newer, older)) == 0 {
		return false
	}
	return len(MissingValues(a, older, newer)) > 0 || ChangeMarked(newer)
}

// ValuesDiffer is the stricter rule for two passages nobody said disagree:
// both give a value of one kind that the other lacks ("5000 EUR" and "7000
// EUR", "March 3" and "April 10", "Anna" and "Boris"). The same value in
// both, a value only one of them gives (a refinement), values of different
// kinds ("5000 EUR" and "March 3"), or different names beside different
// values ("Atlas costs 5000 EUR", "Borealis costs 7000 EUR": two subjects)
// are no disagreement.
func ValuesDiffer(a *analysis.Analyzer, x, y string) bool {
	xs := MissingValues(a, x, y)
	if len(xs) == 0 {
		return false
	}
	both := map[string]bool{}
	for k := range MissingValues(a, y, x) {
		if xs[k] {
			both[k] = true
		}
	}
	if both["name"] && len(both) > 1 {
		return false
	}
	return len(both) > 0
}

// changeRE matches the words that say a statement replaces an earlier one.
var changeRE = regexp.MustCompile(`(?i)(?:^|[^\p{L}])(?:now|no longer|not anymore|any more|anymore|instead|changed|switched|moved|updated|from now on|as of|since then|henceforth|` +
	`теперь|сейчас|отныне|больше не|уже не|вместо|изменил\p{L}*|изменен\p{L}*|изменён\p{L}*|перен[её]с\p{L}*|перенесен\p{L}*|перевел\p{L}*|перевели|обновл\p{L}*|с тех пор|начиная с)(?:$|[^\p{L}])`)

// ChangeMarked tells whether text says that something changed ("now runs
// every 6 hours", "теперь раз в 6 часов", "was moved to", "перенесли на").
func ChangeMarked(text string) bool { return changeRE.MatchString(text) }

// CrossLanguage tells whether a and b are in two different languages.
func CrossLanguage(a, b string) bool {
	la, lb := lang.DetectLang(a), lang.DetectLang(b)
	return la != "" && lb != "" && la != lb
}

// SubjectStems are text's content words, each cut to its first five
// letters so that word forms meet ("backups"/"backup",
// "резервные"/"резервное"), numbers kept, stopwords and the words of a
// change ("now", "теперь") left out.
func SubjectStems(text string) map[string]bool {
	out := map[string]bool{}
	for _, t := range analysis.Tokenize(text) {
		w := analysis.Fold(t.Text)
		if analysis.IsStopword(w) || changeRE.MatchString(w) {
			continue
		}
		if utf8.RuneCountInString(w) > 5 {
			w = string([]rune(w)[:5])
		}
		out[w] = true
	}
	return out
}
