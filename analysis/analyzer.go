// Package analysis turns text into the terms of the full-text index and of
// queries, the same way at both ends: tokenisation of Cyrillic, Latin, digits
// and mixed words, lower-casing, ё -> е, look-alike letters, stopwords, and
// per word by its script either Russian lemmas from the OpenCorpora
// dictionary (Snowball's Russian stemmer for words it lacks) or English
// Snowball stems.
package analysis

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/russian"
)

// Mode chooses how words become index terms.
type Mode string

const (
	// Plain keeps words as they are (lower-cased, ё folded): no lemma terms.
	Plain Mode = "plain"
	// Stem uses Snowball stemmers: Russian for Cyrillic words, English for Latin.
	Stem Mode = "stem"
	// Full uses the Russian dictionary's lemmas (all readings of an ambiguous
	// word), Snowball for Russian words it lacks, and English Snowball stems.
	Full Mode = "full"
)

// Modes lists the modes in order of strength.
var Modes = []Mode{Plain, Stem, Full}

// version changes whenever a mode's output for some text changes, so that
// indexes built by an older analyzer are rebuilt.
const version = 1

// maxCompoundParts bounds the hyphenated words looked up whole
// ("ростов-на-дону" has 3 parts); longer chains are looked up in pieces.
const maxCompoundParts = 4

// cacheSize bounds the word -> terms cache (it is emptied when full).
const cacheSize = 1 << 17

// Analyzer turns text into index and query terms. It is safe for
// concurrent use.
type Analyzer struct {
	mode Mode
	dict *Dict

	mu    sync.RWMutex
	cache map[string][]string
}

// New returns an analyzer in the given mode; Full loads the embedded Russian
// dictionary (once per process).
func New(mode Mode) (*Analyzer, error) {
	a := &Analyzer{mode: mode, cache: map[string][]string{}}
	switch mode {
	case Plain, Stem:
	case Full:
		d, err := Russian()
		if err != nil {
			return nil, err
		}
		a.dict = d
	default:
		return nil, fmt.Errorf("analysis: unknown mode %q (want plain, stem or full)", mode)
	}
	return a, nil
}

// ParseMode checks a mode's name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("analysis: unknown mode %q (want plain, stem or full)", s)
}

// Mode is the analyzer's mode.
func (a *Analyzer) Mode() Mode { return a.mode }

// Name identifies the analyzer's output, mode and version: an index built
// with one name must be queried with the same.
func (a *Analyzer) Name() string { return fmt.Sprintf("%s/%d", a.mode, version) }

// Words returns the text's words as the body column indexes them, space
// separated: every word, stopwords included, in normal form.
func (a *Analyzer) Words(text string) string { return joinWords(Tokenize(text)) }

// Lemmas returns the text's terms for the lemma column, space separated:
// for each word that is not a stopword, its lemmas or stem (none in Plain
// mode).
func (a *Analyzer) Lemmas(text string) string {
	if a.mode == Plain {
		return ""
	}
	return a.joinTerms(Tokenize(text))
}

// Index returns both Words and Lemmas of text, tokenising it once.
func (a *Analyzer) Index(text string) (words, lemmas string) {
	toks := Tokenize(text)
	if a.mode != Plain {
		lemmas = a.joinTerms(toks)
	}
	return joinWords(toks), lemmas
}

func joinWords(toks []Token) string {
	n := 0
	for _, t := range toks {
		n += len(t.Text) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.Text)
	}
	return b.String()
}

func (a *Analyzer) joinTerms(toks []Token) string {
	var b strings.Builder
	b.Grow(8 * len(toks))
	a.eachTerms(toks, func(_, _ int, ts []string) {
		for _, t := range ts {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t)
		}
	})
	return b.String()
}

// eachTerms calls fn with the index terms of each word that has any: the
// index of its first token, how many tokens it spans, and the terms. Words joined by hyphens are looked up whole first
// ("санкт-петербурга" -> санкт петербург); a short Russian ending after a
// number ("1990-х", "5-го") is dropped.
func (a *Analyzer) eachTerms(toks []Token, fn func(i, n int, terms []string)) {
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if isNumberEnding(toks, i) {
			continue
		}
		if a.mode == Full && t.Script == Cyrillic {
			// The longest hyphenated compound starting here that the
			// dictionary knows.
			j := i + 1
			for j < len(toks) && j-i < maxCompoundParts && toks[j].Hyphen && toks[j].Script == Cyrillic {
				j++
			}
			if j-i > 1 {
				if n, terms := a.compound(toks[i:j]); n > 0 {
					if len(terms) > 0 {
						fn(i, n, terms)
					}
					i += n - 1
					continue
				}
			}
		}
		if IsStopword(t.Text) {
			continue
		}
		if ts := a.terms(t); len(ts) > 0 {
			fn(i, 1, ts)
		}
	}
}

// isNumberEnding reports whether token i is a number's case ending: at most
// 3 Cyrillic letters joined by a hyphen to digits ("1990-х", "5-го").
func isNumberEnding(toks []Token, i int) bool {
	t := toks[i]
	return t.Script == Cyrillic && t.Hyphen && i > 0 && toks[i-1].Script == Digits && len(t.Text) <= 6
}

// compound finds the longest run of toks[0:n] (n >= 2) that the dictionary
// knows as one hyphenated word, and returns n and the parts of its lemmas.
func (a *Analyzer) compound(toks []Token) (int, []string) {
	var lemmas []string
	for n := len(toks); n >= 2; n-- {
		var b strings.Builder
		for k, t := range toks[:n] {
			if k > 0 {
				b.WriteByte('-')
			}
			b.WriteString(t.Text)
		}
		lemmas = a.dict.Lemmas(lemmas[:0], b.String())
		if len(lemmas) == 0 {
			continue
		}
		var terms []string
		seen := map[string]bool{}
		for _, l := range lemmas {
			for _, p := range strings.Split(l, "-") {
				if p != "" && !seen[p] && !IsStopword(p) {
					seen[p] = true
					terms = append(terms, p)
				}
			}
		}
		return n, terms
	}
	return 0, nil
}

// terms returns a token's index terms: its lemmas or stem, or the word
// itself for numbers and words of other scripts. The slice is shared: do
// not modify it.
func (a *Analyzer) terms(t Token) []string {
	switch t.Script {
	case Cyrillic, Latin:
	default:
		return []string{t.Text}
	}
	a.mu.RLock()
	ts, ok := a.cache[t.Text]
	a.mu.RUnlock()
	if ok {
		return ts
	}
	ts = a.lookup(t)
	a.mu.Lock()
	if len(a.cache) >= cacheSize {
		clear(a.cache)
	}
	a.cache[t.Text] = ts
	a.mu.Unlock()
	return ts
}

func (a *Analyzer) lookup(t Token) []string {
	if t.Script == Latin {
		return []string{english.Stem(t.Text, true)}
	}
	if a.dict != nil {
		if ls := a.dict.Lemmas(nil, t.Text); len(ls) > 0 {
			return ls
		}
	}
	return []string{russian.Stem(t.Text, true)}
}
