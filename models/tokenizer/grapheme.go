package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Extended grapheme clusters (UAX #29), enough of them for the Precompiled
// normalizer, which looks whole clusters up before single characters. Only
// clusters shorter than six bytes are looked up whole, so what matters is a
// base character with its combining marks, CR LF and short Hangul jamo runs;
// the property tables below are the stable parts of Unicode 15, without the
// Indic conjunct rule (GB9c).

type gcbProp uint8

const (
	gcbOther gcbProp = iota
	gcbCR
	gcbLF
	gcbControl
	gcbExtend
	gcbZWJ
	gcbRegional
	gcbPrepend
	gcbSpacingMark
	gcbL
	gcbV
	gcbT
	gcbLV
	gcbLVT
	gcbPictographic
)

type runeRange struct{ lo, hi rune }

func inRanges(r rune, rs []runeRange) bool {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < rs[m].lo:
			hi = m
		case r > rs[m].hi:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// otherGraphemeExtend lists Other_Grapheme_Extend code points that are not
// already nonspacing or enclosing marks, plus the emoji modifiers.
var otherGraphemeExtend = []runeRange{
	{0x09BE, 0x09BE}, {0x09D7, 0x09D7}, {0x0B3E, 0x0B3E}, {0x0B57, 0x0B57},
	{0x0BBE, 0x0BBE}, {0x0BD7, 0x0BD7}, {0x0CC2, 0x0CC2}, {0x0CD5, 0x0CD6},
	{0x0D3E, 0x0D3E}, {0x0D57, 0x0D57}, {0x0DCF, 0x0DCF}, {0x0DDF, 0x0DDF},
	{0x1B35, 0x1B35}, {0x200C, 0x200C}, {0x302E, 0x302F}, {0xFF9E, 0xFF9F},
	{0x1D165, 0x1D165}, {0x1D16E, 0x1D172}, {0x1F3FB, 0x1F3FF}, {0xE0020, 0xE007F},
}

var prependRanges = []runeRange{
	{0x0600, 0x0605}, {0x06DD, 0x06DD}, {0x070F, 0x070F}, {0x0890, 0x0891},
	{0x08E2, 0x08E2}, {0x0D4E, 0x0D4E}, {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
	{0x111C2, 0x111C3}, {0x1193F, 0x1193F}, {0x11941, 0x11941}, {0x11A3A, 0x11A3A},
	{0x11A84, 0x11A89}, {0x11D46, 0x11D46}, {0x11F02, 0x11F02},
}

// pictographic approximates Extended_Pictographic.
var pictographic = []runeRange{
	{0x00A9, 0x00A9}, {0x00AE, 0x00AE}, {0x203C, 0x203C}, {0x2049, 0x2049},
	{0x2122, 0x2122}, {0x2139, 0x2139}, {0x2194, 0x2199}, {0x21A9, 0x21AA},
	{0x231A, 0x231B}, {0x2328, 0x2328}, {0x2388, 0x2388}, {0x23CF, 0x23CF},
	{0x23E9, 0x23F3}, {0x23F8, 0x23FA}, {0x24C2, 0x24C2}, {0x25AA, 0x25AB},
	{0x25B6, 0x25B6}, {0x25C0, 0x25C0}, {0x25FB, 0x25FE}, {0x2600, 0x2605},
	{0x2607, 0x2612}, {0x2614, 0x2685}, {0x2690, 0x2705}, {0x2708, 0x2712},
	{0x2714, 0x2714}, {0x2716, 0x2716}, {0x271D, 0x271D}, {0x2721, 0x2721},
	{0x2728, 0x2728}, {0x2733, 0x2734}, {0x2744, 0x2744}, {0x2747, 0x2747},
	{0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757},
	{0x2763, 0x2767}, {0x2795, 0x2797}, {0x27A1, 0x27A1}, {0x27B0, 0x27B0},
	{0x27BF, 0x27BF}, {0x2934, 0x2935}, {0x2B05, 0x2B07}, {0x2B1B, 0x2B1C},
	{0x2B50, 0x2B50}, {0x2B55, 0x2B55}, {0x3030, 0x3030}, {0x303D, 0x303D},
	{0x3297, 0x3297}, {0x3299, 0x3299}, {0x1F000, 0x1F0FF}, {0x1F10D, 0x1F10F},
	{0x1F12F, 0x1F12F}, {0x1F16C, 0x1F171}, {0x1F17E, 0x1F17F}, {0x1F18E, 0x1F18E},
	{0x1F191, 0x1F19A}, {0x1F1AD, 0x1F1E5}, {0x1F201, 0x1F20F}, {0x1F21A, 0x1F21A},
	{0x1F22F, 0x1F22F}, {0x1F232, 0x1F23A}, {0x1F23C, 0x1F23F}, {0x1F249, 0x1F3FA},
	{0x1F400, 0x1F53D}, {0x1F546, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F774, 0x1F77F},
	{0x1F7D5, 0x1F7FF}, {0x1F80C, 0x1F80F}, {0x1F848, 0x1F84F}, {0x1F85A, 0x1F85F},
	{0x1F888, 0x1F88F}, {0x1F8AE, 0x1F8FF}, {0x1F90C, 0x1F93A}, {0x1F93C, 0x1F945},
	{0x1F947, 0x1FAFF}, {0x1FC00, 0x1FFFD},
}

func gcb(r rune) gcbProp {
	switch {
	case r == '\r':
		return gcbCR
	case r == '\n':
		return gcbLF
	case r < 0x20 || r == 0x7F:
		return gcbControl
	case r < 0x7F:
		return gcbOther
	case r == 0x200D:
		return gcbZWJ
	case r == 0x0E33 || r == 0x0EB3:
		return gcbSpacingMark
	case 0x1F1E6 <= r && r <= 0x1F1FF:
		return gcbRegional
	case 0x1100 <= r && r <= 0x115F, 0xA960 <= r && r <= 0xA97C:
		return gcbL
	case 0x1160 <= r && r <= 0x11A7, 0xD7B0 <= r && r <= 0xD7C6:
		return gcbV
	case 0x11A8 <= r && r <= 0x11FF, 0xD7CB <= r && r <= 0xD7FB:
		return gcbT
	case 0xAC00 <= r && r <= 0xD7A3:
		if (r-0xAC00)%28 == 0 {
			return gcbLV
		}
		return gcbLVT
	}
	if unicode.In(r, unicode.Mn, unicode.Me) || inRanges(r, otherGraphemeExtend) {
		return gcbExtend
	}
	if inRanges(r, prependRanges) {
		return gcbPrepend
	}
	if unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Cf, unicode.Cs) {
		return gcbControl
	}
	if unicode.Is(unicode.Mc, r) {
		return gcbSpacingMark
	}
	if inRanges(r, pictographic) {
		return gcbPictographic
	}
	return gcbOther
}

// gcbTable holds the property of every BMP code point, built on first use.
var gcbTable = sync.OnceValue(func() *[0x10000]gcbProp {
	var t [0x10000]gcbProp
	for r := range rune(0x10000) {
		t[r] = gcb(r)
	}
	return &t
})

func gcbOf(t *[0x10000]gcbProp, r rune) gcbProp {
	if r < 0x10000 {
		return t[r]
	}
	return gcb(r)
}

// nextGrapheme returns the length in bytes of the first extended grapheme
// cluster of s (s not empty); t is gcbTable().
func nextGrapheme(s string, t *[0x10000]gcbProp) int {
	if len(s) == 1 || s[0] < utf8.RuneSelf && s[1] < utf8.RuneSelf && s[0] != '\r' {
		return 1
	}
	r, n := utf8.DecodeRuneInString(s)
	prev := gcbOf(t, r)
	// emoji is the GB11 state: 1 after ExtPict Extend*, 2 after a ZWJ that
	// follows that; riCount counts regional indicators in a row (GB12/13).
	emoji := 0
	if prev == gcbPictographic {
		emoji = 1
	}
	riCount := 0
	if prev == gcbRegional {
		riCount = 1
	}
	for n < len(s) {
		r, sz := utf8.DecodeRuneInString(s[n:])
		cur := gcbOf(t, r)
		if !joins(prev, cur, emoji == 2, riCount) {
			break
		}
		switch {
		case cur == gcbPictographic:
			emoji = 1
		case cur == gcbExtend && emoji == 1:
		case cur == gcbZWJ && emoji == 1:
			emoji = 2
		default:
			emoji = 0
		}
		if cur == gcbRegional {
			riCount++
		} else {
			riCount = 0
		}
		prev = cur
		n += sz
	}
	return n
}

// joins reports whether there is no cluster break between prev and cur.
func joins(prev, cur gcbProp, afterEmojiZWJ bool, riCount int) bool {
	switch {
	case prev == gcbCR && cur == gcbLF: // GB3
		return true
	case prev == gcbCR || prev == gcbLF || prev == gcbControl: // GB4
		return false
	case cur == gcbCR || cur == gcbLF || cur == gcbControl: // GB5
		return false
	case prev == gcbL && (cur == gcbL || cur == gcbV || cur == gcbLV || cur == gcbLVT): // GB6
		return true
	case (prev == gcbLV || prev == gcbV) && (cur == gcbV || cur == gcbT): // GB7
		return true
	case (prev == gcbLVT || prev == gcbT) && cur == gcbT: // GB8
		return true
	case cur == gcbExtend || cur == gcbZWJ: // GB9
		return true
	case cur == gcbSpacingMark: // GB9a
		return true
	case prev == gcbPrepend: // GB9b
		return true
	case prev == gcbZWJ && cur == gcbPictographic && afterEmojiZWJ: // GB11
		return true
	case prev == gcbRegional && cur == gcbRegional: // GB12, GB13
		return riCount%2 == 1
	}
	return false
}
