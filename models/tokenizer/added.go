package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens: a string found in
// the text before the model sees it (special tokens like "<mask>", and any
// tokens added to the vocabulary later).
type addedToken struct {
	id         int
	content    string
	singleWord bool // only where it is not part of a longer word
	lstrip     bool // takes the whitespace on its left
	rstrip     bool // takes the whitespace on its right
	normalized bool // looked for in the normalized text, not the raw one
	special    bool
}

// matcher finds added tokens in a string, leftmost first and, among those
// that start at the same place, longest first (the HF library's
// Aho-Corasick with LeftmostLongest).
type matcher struct {
	pats    []string
	toks    []*addedToken
	byFirst [256][]int // pattern indexes by first byte, longest first
}

func newMatcher(pats []string, toks []*addedToken) *matcher {
	m := &matcher{pats: pats, toks: toks}
	for i, p := range pats {
		if p != "" {
			m.byFirst[p[0]] = append(m.byFirst[p[0]], i)
		}
	}
	for b := range m.byFirst {
		slices.SortStableFunc(m.byFirst[b], func(x, y int) int { return len(pats[y]) - len(pats[x]) })
	}
	return m
}

func (m *matcher) empty() bool { return m == nil || len(m.pats) == 0 }

// next returns the first match at or after from.
func (m *matcher) next(s string, from int) (start, end, idx int, ok bool) {
	for i := from; i < len(s); i++ {
		for _, k := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], m.pats[k]) {
				return i, i + len(m.pats[k]), k, true
			}
		}
	}
	return 0, 0, 0, false
}

// piece is a part of a sequence between added tokens, or one of them.
type piece struct {
	start, end int
	tok        *addedToken // nil: ordinary text
}

// split cuts s at the added tokens m finds, with their single_word, lstrip
// and rstrip rules (AddedVocabulary::find_matches).
func (m *matcher) split(s string) []piece {
	if s == "" {
		return []piece{{0, 0, nil}}
	}
	if m.empty() {
		return []piece{{0, len(s), nil}}
	}
	var out []piece
	offset := 0
	for from := 0; ; {
		start, stop, k, ok := m.next(s, from)
		if !ok {
			break
		}
		from = stop
		tok := m.toks[k]
		if tok.singleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.lstrip {
			start = max(spaceStartAtEnd(s[:start]), offset)
		}
		if tok.rstrip {
			stop += spaceLenAtStart(s[stop:])
		}
		if offset < start {
			out = append(out, piece{offset, start, nil})
		}
		out = append(out, piece{start, stop, tok})
		offset = stop
	}
	if offset != len(s) {
		out = append(out, piece{offset, len(s), nil})
	}
	return out
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWord(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWord(r)
}

// spaceStartAtEnd returns where the whitespace at the end of s begins.
func spaceStartAtEnd(s string) int {
	end := len(s)
	for end > 0 {
		r, sz := utf8.DecodeLastRuneInString(s[:end])
		if !isSpace(r) {
			break
		}
		end -= sz
	}
	return end
}

// spaceLenAtStart returns the length of the whitespace at the start of s.
func spaceLenAtStart(s string) int {
	n := 0
	for n < len(s) {
		r, sz := utf8.DecodeRuneInString(s[n:])
		if !isSpace(r) {
			break
		}
		n += sz
	}
	return n
}
