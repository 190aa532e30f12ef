package tokenizer

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a piece of text in place, keeping its alignments.
type normalizer interface {
	normalize(n *normalized)
}

type normalizerSeq []normalizer

func (s normalizerSeq) normalize(n *normalized) {
	for _, x := range s {
		x.normalize(n)
	}
}

// unicodeForm is one of NFC, NFD, NFKC, NFKD, with the alignment rules
// of the unicode-normalization-alignments crate the HF library uses: a
// character decomposed into several keeps its alignment on the first and
// marks the rest inserted; a composition takes the alignment of its starter
// and removes what it absorbed.
type unicodeForm struct{ form norm.Form }

func (u unicodeForm) normalize(n *normalized) {
	if u.form.QuickSpanString(n.s) == len(n.s) {
		return
	}
	decomp, compose := norm.NFD, false
	switch u.form {
	case norm.NFKD:
		decomp = norm.NFKD
	case norm.NFC:
		compose = true
	case norm.NFKC:
		decomp, compose = norm.NFKD, true
	}
	dest := make([]change, 0, len(n.s)+8)
	var seg []change
	s := n.s
	for len(s) > 0 {
		k := u.form.NextBoundaryInString(s, true)
		if k <= 0 {
			k = len(s)
		}
		if u.form.QuickSpanString(s[:k]) == k {
			for _, r := range s[:k] {
				dest = append(dest, change{r, 0})
			}
			s = s[k:]
			continue
		}
		seg = seg[:0]
		for i, r := range s[:k] {
			if decomp.PropertiesString(s[i:]).Decomposition() == nil && (r < 0xAC00 || r > 0xD7A3) {
				seg = append(seg, change{r, 0})
				continue
			}
			for j, x := range decomp.String(string(r)) {
				seg = append(seg, change{x, b2i(j > 0)})
			}
		}
		reorder(seg)
		if compose {
			seg = composeSegment(seg)
		}
		dest = append(dest, seg...)
		s = s[k:]
	}
	n.transform(dest, 0)
}

func ccc(r rune) uint8 {
	var buf [utf8.UTFMax]byte
	return norm.NFD.Properties(buf[:utf8.EncodeRune(buf[:], r)]).CCC()
}

// reorder puts runs of combining marks in canonical order (a stable sort
// by combining class), each keeping its change.
func reorder(seg []change) {
	for i := 1; i < len(seg); i++ {
		c := ccc(seg[i].r)
		if c == 0 {
			continue
		}
		for j := i; j > 0; j-- {
			p := ccc(seg[j-1].r)
			if p == 0 || p <= c {
				break
			}
			seg[j-1], seg[j] = seg[j], seg[j-1]
		}
	}
}

// composeSegment is canonical composition (UAX #15) of a decomposed
// segment. A starter that absorbs a mark adds the mark's change, less one.
func composeSegment(seg []change) []change {
	if len(seg) < 2 {
		return seg
	}
	starter := -1
	if ccc(seg[0].r) == 0 {
		starter = 0
	}
	last := -1 // class of the last character kept after the starter
	if starter < 0 {
		last = 256
	}
	out := seg[:1]
	for _, c := range seg[1:] {
		cls := int(ccc(c.r))
		if starter >= 0 && (last < cls || last == -1) {
			if comp, ok := composePair(out[starter].r, c.r); ok {
				out[starter].r = comp
				out[starter].ch += c.ch - 1
				continue
			}
		}
		if cls == 0 {
			starter = len(out)
			last = -1
		} else {
			last = cls
		}
		out = append(out, c)
	}
	return out
}

// composePair returns the primary composite of a and b, if there is one.
func composePair(a, b rune) (rune, bool) {
	s := norm.NFC.String(string([]rune{a, b}))
	r, n := utf8.DecodeRuneInString(s)
	if n != len(s) || r == a {
		return 0, false
	}
	return r, true
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// lowercase is Unicode lowercasing of every character (Rust's
// char::to_lowercase; İ becomes i + combining dot above).
type lowercase struct{}

func (lowercase) normalize(n *normalized) { lowercaseRunes(n) }

func lowercaseRunes(n *normalized) {
	changed := false
	for _, r := range n.s {
		if r == 'İ' || unicode.ToLower(r) != r {
			changed = true
			break
		}
	}
	if !changed {
		return
	}
	dest := make([]change, 0, len(n.s)+2)
	for _, r := range n.s {
		if r == 'İ' {
			dest = append(dest, change{'i', 0}, change{'\u0307', 1})
			continue
		}
		dest = append(dest, change{unicode.ToLower(r), 0})
	}
	n.transform(dest, 0)
}

// strip removes whitespace at the ends.
type strip struct{ left, right bool }

func (s strip) normalize(n *normalized) {
	start, end := 0, len(n.s)
	if s.left {
		for start < end {
			r, sz := utf8.DecodeRuneInString(n.s[start:])
			if !isSpace(r) {
				break
			}
			start += sz
		}
	}
	if s.right {
		for end > start {
			r, sz := utf8.DecodeLastRuneInString(n.s[start:end])
			if !isSpace(r) {
				break
			}
			end -= sz
		}
	}
	if start == 0 && end == len(n.s) {
		return
	}
	n.s = n.s[start:end]
	n.align = n.align[start:end]
}

// stripAccents removes combining marks (category M).
type stripAccents struct{}

func (stripAccents) normalize(n *normalized) {
	n.filter(func(r rune) bool { return !unicode.Is(unicode.M, r) })
}

// replaceNormalizer replaces every match of a pattern by a string.
type replaceNormalizer struct {
	pat     pattern
	content string
}

func (r replaceNormalizer) normalize(n *normalized) { n.replace(r.pat, r.content) }

// prependNormalizer puts a string before every non-empty piece.
type prependNormalizer struct{ prefix string }

func (p prependNormalizer) normalize(n *normalized) { n.prepend(p.prefix) }

// bertNormalizer is BERT's cleanup: drop NUL, U+FFFD and control characters
// and make whitespace a plain space; put spaces around CJK ideographs; strip
// accents (NFD, then drop Mn); lowercase.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

func (b bertNormalizer) normalize(n *normalized) {
	if b.cleanText {
		n.filter(func(r rune) bool { return !(r == 0 || r == 0xFFFD || isControl(r)) })
		n.mapRunes(func(r rune) rune {
			if isBertSpace(r) {
				return ' '
			}
			return r
		})
	}
	if b.chineseChars {
		has := false
		for _, r := range n.s {
			if isChinese(r) {
				has = true
				break
			}
		}
		if has {
			dest := make([]change, 0, len(n.s)+8)
			for _, r := range n.s {
				if isChinese(r) {
					dest = append(dest, change{' ', 0}, change{r, 1}, change{' ', 1})
				} else {
					dest = append(dest, change{r, 0})
				}
			}
			n.transform(dest, 0)
		}
	}
	if b.stripAccents {
		nfd.normalize(n)
		n.filter(func(r rune) bool { return !unicode.Is(unicode.Mn, r) })
	}
	if b.lowercase {
		lowercaseRunes(n)
	}
}

var nfd = unicodeForm{norm.NFD}

func isBertSpace(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || isSpace(r)
}

// isControl is category C (Cc, Cf, Cs, Co, Cn), tab, newline and CR aside.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	if unicode.Is(unicode.C, r) {
		return true
	}
	// Unassigned (Cn) is category C too.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

func isChinese(r rune) bool {
	return 0x4E00 <= r && r <= 0x9FFF || 0x3400 <= r && r <= 0x4DBF ||
		0x20000 <= r && r <= 0x2A6DF || 0x2A700 <= r && r <= 0x2B73F ||
		0x2B740 <= r && r <= 0x2B81F || 0x2B820 <= r && r <= 0x2CEAF ||
		0xF900 <= r && r <= 0xFAFF || 0x2F800 <= r && r <= 0x2FA1F
}
