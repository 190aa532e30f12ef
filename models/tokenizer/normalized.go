package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// span is a byte range [start, end) of the original input.
type span struct{ start, end int32 }

// normalized is a piece of the input after normalization. Every byte of s
// carries the span of the original input it came from, which is how token
// offsets find their way back to the caller's string. It follows the
// NormalizedString of the HF tokenizers library, including the way it gives
// inserted and replaced characters their alignment, so that offsets match the
// reference byte for byte. Spans are absolute (offsets into the whole input),
// where HF keeps them relative to each piece plus a shift; the results agree.
type normalized struct {
	s     string
	align []span // len(align) == len(s)
	// shift is where this piece starts in the original input: the alignment
	// of a character inserted before everything else.
	shift int32
}

// newNormalized returns text unchanged, aligned onto the original input
// from byte base on.
func newNormalized(text string, base int) *normalized {
	align := make([]span, len(text))
	for i := 0; i < len(text); {
		n := 1
		if text[i] >= utf8.RuneSelf {
			_, n = utf8.DecodeRuneInString(text[i:])
		}
		sp := span{int32(base + i), int32(base + i + n)}
		for k := 0; k < n; k++ {
			align[i+k] = sp
		}
		i += n
	}
	return &normalized{s: text, align: align, shift: int32(base)}
}

// change is one character of a transformation and what it does to the
// string: 0 replaces the next original character, +1 inserts a new one, -k
// replaces the next character and removes the k after it.
type change struct {
	r  rune
	ch int32
}

// transform rebuilds the string from dest, skipping the first skip
// characters of the current one (NormalizedString::transform). A replacing
// character takes the alignment of the character it replaces; an inserted
// one the alignment of the byte before it.
func (n *normalized) transform(dest []change, skip int) {
	off := 0
	for ; skip > 0 && off < len(n.s); skip-- {
		_, sz := utf8.DecodeRuneInString(n.s[off:])
		off += sz
	}
	var b strings.Builder
	b.Grow(len(n.s))
	align := make([]span, 0, len(n.s))
	for _, d := range dest {
		var a span
		if d.ch > 0 {
			if off == 0 {
				a = span{n.shift, n.shift}
			} else {
				a = n.align[off-1]
			}
		} else {
			if off < len(n.align) {
				a = n.align[off]
			} else if off > 0 {
				a = n.align[off-1]
			} else {
				a = span{n.shift, n.shift}
			}
			for k := int32(0); k <= -d.ch && off < len(n.s); k++ {
				_, sz := utf8.DecodeRuneInString(n.s[off:])
				off += sz
			}
		}
		b.WriteRune(d.r)
		for k := utf8.RuneLen(d.r); k > 0; k-- {
			align = append(align, a)
		}
	}
	n.s = b.String()
	n.align = align
}

// mapRunes replaces every character by f of it.
func (n *normalized) mapRunes(f func(rune) rune) {
	same := true
	for _, r := range n.s {
		if f(r) != r {
			same = false
			break
		}
	}
	if same {
		return
	}
	dest := make([]change, 0, len(n.s))
	for _, r := range n.s {
		dest = append(dest, change{f(r), 0})
	}
	n.transform(dest, 0)
}

// filter keeps the characters for which keep is true.
func (n *normalized) filter(keep func(rune) bool) {
	all := true
	for _, r := range n.s {
		if !keep(r) {
			all = false
			break
		}
	}
	if all {
		return
	}
	var b strings.Builder
	align := make([]span, 0, len(n.s))
	for i, r := range n.s {
		if keep(r) {
			sz := utf8.RuneLen(r)
			if r == utf8.RuneError {
				_, sz = utf8.DecodeRuneInString(n.s[i:])
			}
			b.WriteString(n.s[i : i+sz])
			align = append(align, n.align[i:i+sz]...)
		}
	}
	n.s = b.String()
	n.align = align
}

// replaceByte replaces every byte c (ASCII) by rep, which takes the
// alignment of the byte it replaces (what replace does for a one-character
// pattern).
func (n *normalized) replaceByte(c byte, rep string) {
	k := strings.Count(n.s, string(c))
	if k == 0 {
		return
	}
	var b strings.Builder
	b.Grow(len(n.s) + k*(len(rep)-1))
	align := make([]span, 0, len(n.s)+k*(len(rep)-1))
	for i := 0; i < len(n.s); i++ {
		if n.s[i] != c {
			b.WriteByte(n.s[i])
			align = append(align, n.align[i])
			continue
		}
		b.WriteString(rep)
		for range len(rep) {
			align = append(align, n.align[i])
		}
	}
	n.s = b.String()
	n.align = align
}

// prepend puts p before the string (not before an empty one); the new
// characters take the alignment of the first character.
func (n *normalized) prepend(p string) {
	if n.s == "" || p == "" {
		return
	}
	first := n.align[0]
	align := make([]span, 0, len(p)+len(n.s))
	for range len(p) {
		align = append(align, first)
	}
	n.s = p + n.s
	n.align = append(align, n.align...)
}

// replace puts content in place of every match of pat. The new characters
// all take the alignment of the last byte of their match.
func (n *normalized) replace(pat pattern, content string) {
	ms := pat.find(n.s)
	found := false
	for _, m := range ms {
		if m.match {
			found = true
			break
		}
	}
	if !found {
		return
	}
	var b strings.Builder
	align := make([]span, 0, len(n.s))
	for _, m := range ms {
		if !m.match {
			b.WriteString(n.s[m.start:m.end])
			align = append(align, n.align[m.start:m.end]...)
			continue
		}
		var a span
		switch {
		case m.end > 0:
			a = n.align[m.end-1]
		default:
			a = span{n.shift, n.shift}
		}
		b.WriteString(content)
		for range len(content) {
			align = append(align, a)
		}
	}
	n.s = b.String()
	n.align = align
}

// slice returns the part [start, end) of the normalized string.
func (n *normalized) slice(start, end int) normalized {
	out := normalized{s: n.s[start:end], align: n.align[start:end], shift: n.shift}
	if start < end {
		out.shift = n.align[start].start
	}
	return out
}

// original returns the span of the original input behind [start, end) of
// the normalized string.
func (n *normalized) original(start, end int) span {
	if start >= end || end > len(n.align) {
		return span{n.shift, n.shift}
	}
	return span{n.align[start].start, n.align[end-1].end}
}

// behavior says what a split does with the delimiters it finds
// (SplitDelimiterBehavior).
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

// split cuts the string at the matches of pat (NormalizedString::split).
// Empty pieces are dropped by the caller.
func (n *normalized) split(pat pattern, how behavior) []normalized {
	ms := pat.find(n.s)
	type piece struct {
		start, end int
		drop       bool
	}
	var pieces []piece
	switch how {
	case isolated:
		for _, m := range ms {
			pieces = append(pieces, piece{m.start, m.end, false})
		}
	case removed:
		for _, m := range ms {
			pieces = append(pieces, piece{m.start, m.end, m.match})
		}
	case contiguous:
		prev := false
		for _, m := range ms {
			if m.match == prev && len(pieces) > 0 {
				pieces[len(pieces)-1].end = m.end
			} else {
				pieces = append(pieces, piece{m.start, m.end, false})
			}
			prev = m.match
		}
	case mergedWithPrevious:
		prev := false
		for _, m := range ms {
			if m.match && !prev && len(pieces) > 0 {
				pieces[len(pieces)-1].end = m.end
			} else {
				pieces = append(pieces, piece{m.start, m.end, false})
			}
			prev = m.match
		}
	case mergedWithNext:
		prev := false
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if m.match && !prev && len(pieces) > 0 {
				pieces[len(pieces)-1].start = m.start
			} else {
				pieces = append(pieces, piece{m.start, m.end, false})
			}
			prev = m.match
		}
		for i, j := 0, len(pieces)-1; i < j; i, j = i+1, j-1 {
			pieces[i], pieces[j] = pieces[j], pieces[i]
		}
	}
	out := make([]normalized, 0, len(pieces))
	for _, p := range pieces {
		if !p.drop {
			out = append(out, n.slice(p.start, p.end))
		}
	}
	return out
}
