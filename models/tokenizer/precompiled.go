package tokenizer

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// precompiled is SentencePiece's precompiled_charsmap normalizer (what real
// XLM-R, mBART and T5 tokenizer.json files carry, e.g. nmt_nfkc). The blob
// is a little-endian uint32 trie size, a darts-clone double-array trie of
// that many bytes whose values are offsets into the rest of the blob, and
// the rest: NUL-terminated replacement strings.
//
// Like the HF library (and unlike SentencePiece's own normalizer, which
// takes the longest rule at every byte), the string is walked by extended
// grapheme cluster: a cluster shorter than 6 bytes is looked up whole, and
// if some rule matches a prefix of it, the first (shortest) such rule
// replaces the whole cluster; otherwise every character is looked up alone.
type precompiled struct {
	units   []uint32
	strings []byte
	ascii   [utf8.RuneSelf]asciiRule // the rules for single ASCII characters
}

type asciiRule struct {
	rep string
	ok  bool
}

func newPrecompiled(blob []byte) (*precompiled, error) {
	if len(blob) == 0 {
		return &precompiled{}, nil
	}
	if len(blob) < 4 {
		return nil, fmt.Errorf("charsmap of %d bytes: too short", len(blob))
	}
	size := int(binary.LittleEndian.Uint32(blob))
	if size%4 != 0 || 4+size > len(blob) {
		return nil, fmt.Errorf("charsmap trie of %d bytes does not fit in %d bytes", size, len(blob))
	}
	units := make([]uint32, size/4)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	p := &precompiled{units: units, strings: blob[4+size:]}
	for c := range utf8.RuneSelf {
		p.ascii[c].rep, p.ascii[c].ok = p.lookup(string(rune(c)))
	}
	return p, nil
}

// lookup returns the replacement for the shortest rule that is a prefix of
// key (darts-clone commonPrefixSearch, first result).
func (p *precompiled) lookup(key string) (string, bool) {
	if len(p.units) == 0 {
		return "", false
	}
	units := p.units
	pos := uint32(0)
	pos ^= unitOffset(units[0])
	for i := 0; i < len(key); i++ {
		c := uint32(key[i])
		if c == 0 {
			break
		}
		pos ^= c
		if int(pos) >= len(units) {
			return "", false
		}
		u := units[pos]
		if unitLabel(u) != c {
			return "", false
		}
		pos ^= unitOffset(u)
		if unitHasLeaf(u) {
			if int(pos) >= len(units) {
				return "", false
			}
			return p.replacement(int(units[pos] & (1<<31 - 1)))
		}
	}
	return "", false
}

func (p *precompiled) replacement(off int) (string, bool) {
	if off >= len(p.strings) {
		return "", false
	}
	end := off
	for end < len(p.strings) && p.strings[end] != 0 {
		end++
	}
	return string(p.strings[off:end]), true
}

func unitHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }

func (p *precompiled) normalize(n *normalized) {
	if len(p.units) == 0 || n.s == "" {
		return
	}
	s := n.s
	gt := gcbTable()
	// dest stays nil until the first rule applies; the characters before it
	// are then copied in unchanged.
	var dest []change
	start := func(i int) {
		if dest == nil {
			dest = make([]change, 0, len(s))
			for _, r := range s[:i] {
				dest = append(dest, change{r, 0})
			}
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && (i+1 == len(s) || s[i+1] < utf8.RuneSelf && c != '\r') {
			// A lone ASCII character: one grapheme, one lookup.
			rule := p.ascii[c]
			switch {
			case rule.ok:
				start(i)
				dest = replaceChanges(dest, s[i:i+1], rule.rep)
			case dest != nil:
				dest = append(dest, change{rune(c), 0})
			}
			i++
			continue
		}
		g := s[i : i+nextGrapheme(s[i:], gt)]
		if len(g) < 6 {
			if rep, ok := p.lookup(g); ok {
				start(i)
				dest = replaceChanges(dest, g, rep)
				i += len(g)
				continue
			}
		}
		for j, r := range g {
			sz := utf8.RuneLen(r)
			if r == utf8.RuneError {
				_, sz = utf8.DecodeRuneInString(g[j:])
			}
			part := g[j : j+sz]
			if rep, ok := p.lookup(part); ok {
				start(i + j)
				dest = replaceChanges(dest, part, rep)
			} else if dest != nil {
				dest = append(dest, change{r, 0})
			}
		}
		i += len(g)
	}
	if dest != nil {
		n.transform(dest, 0)
	}
}

// replaceChanges appends the changes that turn old into rep, the way the HF
// library does: grown strings mark their last characters as inserted, shrunk
// ones put the removal on the last change written so far (which may belong
// to an earlier character, or to none at the very start).
func replaceChanges(dest []change, old, rep string) []change {
	oldCount := utf8.RuneCountInString(old)
	newCount := 0
	for _, r := range rep {
		dest = append(dest, change{r, 0})
		newCount++
	}
	diff := newCount - oldCount
	switch {
	case diff > 0:
		for k := 0; k < diff; k++ {
			dest[len(dest)-1-k].ch = 1
		}
	case diff < 0:
		if len(dest) > 0 {
			dest[len(dest)-1].ch += int32(diff)
		}
	}
	return dest
}
