package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// preTokenizer cuts a normalized piece into the words the model sees.
// Empty words are dropped by the caller.
type preTokenizer interface {
	split(n *normalized) []normalized
}

type preTokenizerSeq []preTokenizer

func (s preTokenizerSeq) split(n *normalized) []normalized {
	pieces := []normalized{*n}
	for _, p := range s {
		pieces = splitAll(p, pieces)
	}
	return pieces
}

// splitAll applies p to every piece and drops the empty results.
func splitAll(p preTokenizer, pieces []normalized) []normalized {
	var out []normalized
	for i := range pieces {
		for _, w := range p.split(&pieces[i]) {
			if w.s != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// prependScheme says when Metaspace puts the replacement before a piece.
type prependScheme int

const (
	prependAlways prependScheme = iota
	prependFirst                // only before the piece at the start of the input
	prependNever
)

// metaspace replaces spaces by the replacement character (usually "▁"),
// prepends one per its scheme and, with split, cuts before every
// replacement character.
type metaspace struct {
	rep        string
	scheme     prependScheme
	splitWords bool
}

func (m metaspace) split(n *normalized) []normalized {
	n.replaceByte(' ', m.rep)
	if !strings.HasPrefix(n.s, m.rep) {
		switch m.scheme {
		case prependAlways:
			n.prepend(m.rep)
		case prependFirst:
			if n.shift == 0 {
				n.prepend(m.rep)
			}
		}
	}
	if !m.splitWords {
		return []normalized{*n}
	}
	// Splitting on the replacement with MergedWithNext cuts before every
	// replacement character.
	out := make([]normalized, 0, strings.Count(n.s, m.rep)+1)
	start := 0
	for i := 1; i < len(n.s); {
		k := strings.Index(n.s[i:], m.rep)
		if k < 0 {
			break
		}
		out = append(out, n.slice(start, i+k))
		start = i + k
		i = start + len(m.rep)
	}
	return append(out, n.slice(start, len(n.s)))
}

// patternSplit is a split on a pattern with a delimiter behavior: the
// Split, WhitespaceSplit, Whitespace, Punctuation, Digits and
// CharDelimiterSplit pre-tokenizers.
type patternSplit struct {
	pat pattern
	how behavior
}

func (p patternSplit) split(n *normalized) []normalized { return n.split(p.pat, p.how) }

var (
	whitespaceSplit = patternSplit{runePattern(isSpace), removed}
	whitespaceWords = patternSplit{invertPattern{wordPattern{}}, removed}
)

// bertPreTokenizer splits on whitespace (dropped) and around punctuation
// (kept, one character a word), in one pass.
type bertPreTokenizer struct{}

func (bertPreTokenizer) split(n *normalized) []normalized {
	var out []normalized
	start := -1 // start of the current word
	for i, r := range n.s {
		switch {
		case isSpace(r):
			if start >= 0 {
				out = append(out, n.slice(start, i))
				start = -1
			}
		case isBertPunct(r):
			if start >= 0 {
				out = append(out, n.slice(start, i))
				start = -1
			}
			_, sz := utf8.DecodeRuneInString(n.s[i:])
			out = append(out, n.slice(i, i+sz))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		out = append(out, n.slice(start, len(n.s)))
	}
	return out
}

func newMetaspace(rep string, scheme prependScheme, split bool) metaspace {
	return metaspace{rep: rep, scheme: scheme, splitWords: split}
}
