package claimcheck

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/exocortex/exocortex/analysis"
)

// Options tune a check.
type Options struct {
	// CrossLanguage: the claim is in another language than the evidence (a
	// Russian claim over an English note). Clauses are not checked for
	// shared words and names written in the other script are not required;
	// numbers, dates, times, quantities, percentages, versions, money and
	// limiting words still are.
	CrossLanguage bool
}

// Problem is one thing a claim states that its evidence does not.
type Problem struct {
	// Kind is one of number, date, time, quantity, percent, version, money,
	// name, limiter, clause.
	Kind string
	// Item is the claim's text for it: "97", "30 hours", "Obsidian", "only",
	// a clause.
	Item string
}

// String reads `number "97" is not in the block`.
func (p Problem) String() string { return fmt.Sprintf("%s %q is not in the block", p.Kind, p.Item) }

// Check returns what the claim states that the evidence (a note block's own
// text) does not: every number, date, time, quantity with its unit,
// percentage, version, money amount, proper name and limiting word of the
// claim must be in the evidence, and each clause of the claim must share
// its words with it. Empty means nothing is missing. It does not judge
// negation, nor the claim's overall word overlap: the verifier does. a may
// be nil (words are then compared as they are, without lemmas).
func Check(a *analysis.Analyzer, claim, evidence string, o Options) []Problem {
	return Prepare(a, evidence).Check(claim, o)
}

// Evidence is a block's text read once, for checking many claims against it.
type Evidence struct {
	a    *analysis.Analyzer
	raw  string // the block's text as given, lower case
	text string
	toks []token
	used []bool
	scr  uint8 // the script most of its letters are in

	facts    []fact
	nums     map[string]bool // every number written: bare, measured, a date's year and day, a time's hour
	bare     map[string]bool // numbers written without a unit
	measured map[string]bool // "30|day"
	units    map[string]bool // unit concepts named anywhere
	dates    []ymd
	times    []hms

	words    map[string]bool // folded words and identifiers
	wordList []string        // distinct folded words, for stem comparison
	lemmas   map[string]bool
	limiters map[string]bool // limiting concepts it expresses
	names    []string        // its own names (capitalised inside a sentence, mixed case, acronyms), folded
	ratios   map[string]bool // numbers joined by colons ("1:2:2"), ratios and times alike
}

// Prepare reads a block's text for Check. The result is safe for
// concurrent use.
func Prepare(a *analysis.Analyzer, evidence string) *Evidence {
	text := cleanEvidence(evidence)
	e := &Evidence{a: a, raw: strings.ToLower(evidence), text: text, toks: lex(text), nums: map[string]bool{}, bare: map[string]bool{},
		measured: map[string]bool{}, units: map[string]bool{}, words: map[string]bool{}}
	e.scr = dominantScript(e.toks)
	e.ratios = evidenceRatios(text)
	e.facts, e.used = readFacts(text, e.toks)
	for _, f := range e.facts {
		switch f.kind {
		case KindDate:
			for _, d := range f.dates {
				e.dates = append(e.dates, d)
				if d.y != 0 {
					e.nums[itoa(d.y)] = true
				}
				if d.d != 0 {
					e.nums[itoa(d.d)] = true
				}
			}
		case KindTime:
			e.times = append(e.times, f.tm)
			e.nums[itoa(f.tm.h)] = true
		case KindName:
			e.words[f.num] = true
			continue
		}
		if f.num == "" {
			continue
		}
		e.nums[f.num] = true
		if f.unit == "" {
			e.bare[f.num] = true
		} else {
			e.measured[f.num+"|"+f.unit] = true
			e.units[f.unit] = true
		}
	}
	for i, t := range e.toks {
		switch t.kind {
		case tWord:
			if !e.words[t.low] {
				e.words[t.low] = true
				e.wordList = append(e.wordList, t.low)
			}
			if u, ok := unitWords[t.low]; ok {
				e.units[u.concept] = true
			}
			if isEvidenceName(e.toks, i) && !e.used[i] {
				e.names = append(e.names, t.low)
			}
		case tPunct:
			if t.raw == "%" {
				e.units["percent"] = true
			} else if c, ok := currencySymbols[t.raw]; ok {
				e.units[c] = true
			}
		}
	}
	e.lemmas = lemmaSet(a, text)
	e.limiters = limitersOf(e.toks, false)
	return e
}

// Check returns what the claim states that this evidence does not; see the
// package function Check.
func (e *Evidence) Check(claim string, o Options) []Problem {
	var out []Problem
	// Block ids state nothing by their numbers, but one the claim writes
	// (in a file name, say) must be the block's own, character for character.
	for _, id := range identifiers(claim) {
		if !strings.Contains(e.raw, strings.ToLower(id)) {
			out = append(out, Problem{KindName, id})
		}
	}
	text := cleanClaim(claim)
	toks := lex(text)
	facts, used := readFacts(text, toks)
	add := func(kind, item string) {
		for _, p := range out {
			if p.Kind == kind && p.Item == item {
				return
			}
		}
		out = append(out, Problem{kind, item})
	}
	for _, r := range e.missingRatios(text) {
		add(KindRatio, r)
	}
	for _, f := range facts {
		if !e.hasFact(f) {
			add(f.kind, f.item)
		}
	}
	for _, n := range claimNames(e, text, toks, used, o) {
		add(KindName, n)
	}
	for _, l := range e.missingLimiters(text, toks) {
		add(KindLimiter, l)
	}
	if !o.CrossLanguage {
		for _, c := range e.missingClauses(text, toks, used) {
			add(KindClause, c)
		}
	}
	return out
}

// hasFact reports whether the evidence states the claim's fact f.
func (e *Evidence) hasFact(f fact) bool {
	switch f.kind {
	case KindName:
		return e.words[f.num]
	case KindTime:
		for _, t := range e.times {
			if t.h == f.tm.h && t.m == f.tm.m && (!f.tm.hasS || t.s == f.tm.s || !t.hasS && f.tm.s == 0) {
				return true
			}
		}
		return false
	case KindDate:
		if len(f.dates) == 0 { // a year: "2024 года"
			return e.nums[f.num]
		}
		for _, c := range f.dates {
			for _, d := range e.dates {
				if e.dateFits(c, d) {
					return true
				}
			}
		}
		return false
	}
	if f.one {
		return true
	}
	if f.unit == "" {
		return e.nums[f.num]
	}
	// The same number in the same unit, or the number written alone in a
	// block that names the unit ("5, 8 or 16 minutes").
	return e.measured[f.num+"|"+f.unit] || e.bare[f.num] && e.units[f.unit]
}

// dateFits reports whether evidence date d states claim date c: every part
// the claim gives is d's, or, where d lacks it, a number the block writes;
// at least one part matches d itself.
func (e *Evidence) dateFits(c, d ymd) bool {
	matched := 0
	for _, p := range [3][3]int{{c.y, d.y, 1}, {c.m, d.m, 0}, {c.d, d.d, 1}} {
		cv, dv, loose := p[0], p[1], p[2] == 1
		switch {
		case cv == 0:
		case cv == dv:
			matched++
		case dv == 0 && loose && e.nums[itoa(cv)]:
		default:
			return false
		}
	}
	return matched > 0
}

// Markers, links and block ids: their numbers state nothing.
var (
	markerRE  = regexp.MustCompile(`\[[^\]]*\]`)
	urlRE     = regexp.MustCompile(`(?i)\b(?:https?|ftp|siyuan|file)://\S+|\bwww\.\S+`)
	blockIDRE = regexp.MustCompile(`\b\d{14}-[0-9a-z]{7}\b`)
	// A list marker opening a claim: "1. ", "2) ", "- ".
	listRE = regexp.MustCompile(`^\s*(?:\d{1,2}[.)]\s+|[-*•]\s+)`)
)

// identifiers are the block ids a claim writes outside its citation
// markers (a file named by one, say).
func identifiers(claim string) []string {
	if strings.IndexByte(claim, '[') >= 0 {
		claim = markerRE.ReplaceAllString(claim, " ")
	}
	var out []string
	if hasIDLike(claim) {
		out = append(out, blockIDRE.FindAllString(claim, -1)...)
	}
	return out
}

// cleanEvidence takes the links and block ids out of a block's text.
func cleanEvidence(s string) string {
	if strings.Contains(s, "://") || strings.Contains(s, "www.") {
		s = urlRE.ReplaceAllString(s, " ")
	}
	if hasIDLike(s) {
		s = blockIDRE.ReplaceAllString(s, " ")
	}
	return s
}

// cleanClaim takes citation markers, links, block ids, a list marker and
// connective fillers ("According to the notes,") out of a claim.
func cleanClaim(s string) string {
	if strings.IndexByte(s, '[') >= 0 {
		s = markerRE.ReplaceAllString(s, " ")
	}
	s = cleanEvidence(s)
	s = listRE.ReplaceAllString(s, "")
	return stripFillers(s)
}

// hasIDLike is a cheap test before the block id regexp: 14 digits and a dash.
func hasIDLike(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			run++
		case c == '-' && run >= 14:
			return true
		default:
			run = 0
		}
	}
	return false
}

func isStopword(w string) bool { return analysis.IsStopword(w) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [12]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// lemmaSet is the set of the text's lemmas (folded words without an analyzer
// or in Plain mode).
func lemmaSet(a *analysis.Analyzer, text string) map[string]bool {
	set := map[string]bool{}
	if a == nil || a.Mode() == analysis.Plain {
		for _, t := range analysis.Tokenize(text) {
			if !analysis.IsStopword(t.Text) {
				set[t.Text] = true
			}
		}
		return set
	}
	for _, l := range strings.Fields(a.Lemmas(text)) {
		set[l] = true
	}
	return set
}

// readings are a word's lemmas (the word itself without an analyzer).
func readings(a *analysis.Analyzer, word string) []string {
	if a == nil || a.Mode() == analysis.Plain {
		return []string{word}
	}
	return strings.Fields(a.Lemmas(word))
}

// quoteRE matches a quote in «», “” or "" inside a claim.
var quoteRE = regexp.MustCompile(`«[^»]*»|“[^”]*”|"[^"]*"`)

// OwnWords are the content words a claim says outside its quotes, citation
// markers and connective fillers ("В заметках сказано:"): what a claim over
// a note in another language says that its quote of the note cannot vouch
// for, since no word of it can be compared with the note's.
func OwnWords(claim string) []string {
	text := cleanClaim(quoteRE.ReplaceAllString(claim, " … "))
	var out []string
	for _, t := range lex(text) {
		if t.kind != tWord || isStopword(t.low) || fillerWords[t.low] || negationWords[t.low] || connectives[t.low] || sourceWords[t.low] {
			continue
		}
		out = append(out, t.raw)
	}
	return out
}

// sourceWords say where a claim comes from, not what it states.
var sourceWords = wordSet(`according notes note guide documentation says say said states mentions written
	заметках заметке заметки сказано говорится указано написано согласно руководстве документации`)
