package store

import (
	"strings"
	"unicode"
)

// maxTerms bounds the terms of one query; the rest of a very long query is
// dropped (BM25 over hundreds of OR-ed phrases costs time and adds nothing).
const maxTerms = 64

// stopwords are dropped from queries unless nothing else is left: English
// function words, which BM25 weighs little anyway but which make an OR query
// match nearly every chunk. (A Russian list made no difference on XQuAD-ru.)
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
a an and are as at be been but by can could did do does for from had has have he her his how i if in into is it its
me my no not of on or our she so than that the their them then there these they this those to us was we were what
when where which who whom whose why will with would you your`) {
		m[w] = true
	}
	return m
}()

// foldReplacer makes ё and е the same letter, as most Russian text does.
var foldReplacer = strings.NewReplacer("ё", "е", "Ё", "Е")

// fold normalises text for the full-text index and for queries alike.
func fold(s string) string { return foldReplacer.Replace(s) }

// words splits text into lowercase, folded words: runs of letters and digits
// (combining marks stay inside a word). Everything else separates words.
func words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	}) {
		out = append(out, fold(strings.ToLower(w)))
	}
	return out
}

// queryTerms returns the distinct search terms of text in order: its words
// without stopwords (or with them, when they are all there is), at most
// maxTerms of them.
func queryTerms(text string) []string {
	all := words(text)
	seen := map[string]bool{}
	var kept, stops []string
	for _, w := range all {
		if seen[w] {
			continue
		}
		seen[w] = true
		if stopwords[w] {
			stops = append(stops, w)
		} else {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		kept = stops
	}
	if len(kept) > maxTerms {
		kept = kept[:maxTerms]
	}
	return kept
}

// orTerms quotes each term as an FTS5 string and joins them with OR. Terms
// hold only letters, digits and marks, but quotes are doubled anyway so that
// no term can ever end the string early.
func orTerms(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// matchExpr builds the FTS5 MATCH expression for user text; "" means the
// text has no words and matches nothing. User text is never parsed as FTS5
// syntax: operators, quotes, column filters and the like become plain words
// or separators. With an analyzer, the query's lemmas are matched against the
// lemmas column and its words against the other columns.
func matchExpr(text string, a Analyzer) string {
	terms := queryTerms(text)
	var lemmas []string
	if a != nil {
		lemmas = queryTerms(a.Lemmas(text))
	}
	switch {
	case len(lemmas) == 0 && len(terms) == 0:
		return ""
	case len(lemmas) == 0:
		return orTerms(terms) // the lemmas column is empty without an analyzer
	case len(terms) == 0:
		return "lemmas : (" + orTerms(lemmas) + ")"
	}
	return "({body title section} : (" + orTerms(terms) + ")) OR (lemmas : (" + orTerms(lemmas) + "))"
}
