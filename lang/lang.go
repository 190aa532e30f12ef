// Package lang estimates tokens and detects the language (ru, en) of text by
// its scripts, for the chunker, the answerer and retrieval. It imports
// nothing of the application.
package lang

import "unicode"

// script is the class of a rune for token estimates and language detection.
type script uint8

const (
	scSpace    script = iota // whitespace and controls: ends a word, no token
	scPunct                  // punctuation, symbols, emoji: a token each (runs of one rune share)
	scLatin                  // Latin letters
	scCyrillic               // Cyrillic letters
	scDigit                  // digits
	scLetter                 // letters of other alphabets (Greek, Arabic, ...)
	scIdeo                   // Han, kana, Hangul: about a token per rune
	scMark                   // combining marks and format runes: part of the word they are in
)

func classify(r rune) script {
	if r < 0x80 {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			return scLatin
		case '0' <= r && r <= '9':
			return scDigit
		case r <= ' ' || r == 0x7f:
			return scSpace
		default:
			return scPunct
		}
	}
	switch {
	case 0x400 <= r && r <= 0x52f: // Cyrillic and Cyrillic Supplement
		switch {
		case r == 0x482:
			return scPunct // ҂
		case 0x483 <= r && r <= 0x489:
			return scMark
		}
		return scCyrillic
	case 0xc0 <= r && r <= 0x24f && r != 0xd7 && r != 0xf7: // Latin-1 letters, Latin Extended-A and B
		return scLatin
	}
	switch {
	case unicode.IsSpace(r):
		return scSpace
	case unicode.IsLetter(r):
		switch {
		case r < 0x250, 0x1e00 <= r && r <= 0x1eff:
			return scLatin
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			return scIdeo
		}
		return scLetter
	case unicode.IsDigit(r):
		return scDigit
	case unicode.IsMark(r), unicode.Is(unicode.Cf, r):
		return scMark
	case unicode.IsControl(r):
		return scSpace
	}
	return scPunct
}

// wordTokens estimates the SentencePiece pieces of a run of n runes of class c.
// XLM-R keeps frequent short words whole and cuts long ones into pieces of a
// few letters; Russian words are cut a little finer than English ones.
func wordTokens(c script, n int) int {
	if n == 0 {
		return 0
	}
	switch c {
	case scLatin:
		return 1 + (n-1)/6
	case scCyrillic:
		return 1 + (n-1)/5
	case scDigit:
		return 1 + (n-1)/4
	}
	return 1 + (n-1)/4
}

// punctTokens estimates a run of n equal punctuation runes ("...", "---").
func punctTokens(n int) int {
	if n == 0 {
		return 0
	}
	return 1 + (n-1)/4
}

// EstimateTokens approximates the number of XLM-R SentencePiece tokens of s
// (without the <s> and </s> markers) for Russian and English text, without a
// vocabulary: every word (a run of letters or digits of one script) counts 1
// plus one more for every 6 further Latin or 5 further Cyrillic runes (4 for
// digits and other alphabets), every punctuation or symbol rune counts 1 (a
// run of the same rune counts 1 per 4), and ideographs count 1 each. It leans
// towards over-counting, and it is additive over whitespace: the estimate of
// "a b" is the estimate of "a" plus that of "b". It does not allocate.
func EstimateTokens(s string) int {
	total := 0
	word, wordLen := scSpace, 0
	var punct rune
	punctLen := 0
	for _, r := range s {
		c := classify(r)
		if c == scMark {
			continue
		}
		if c != scPunct && punctLen > 0 {
			total += punctTokens(punctLen)
			punctLen = 0
		}
		switch c {
		case scLatin, scCyrillic, scDigit, scLetter:
			if c == word {
				wordLen++
				continue
			}
			total += wordTokens(word, wordLen)
			word, wordLen = c, 1
		case scPunct:
			total += wordTokens(word, wordLen)
			word, wordLen = scSpace, 0
			if punctLen > 0 && r == punct {
				punctLen++
				continue
			}
			total += punctTokens(punctLen)
			punct, punctLen = r, 1
		case scIdeo:
			total += wordTokens(word, wordLen) + 1
			word, wordLen = scSpace, 0
		default:
			total += wordTokens(word, wordLen)
			word, wordLen = scSpace, 0
		}
	}
	return total + wordTokens(word, wordLen) + punctTokens(punctLen)
}

// Languages returned by DetectLang.
const (
	LangRussian = "ru"
	LangEnglish = "en"
)

// DetectLang tells the language of s from its letters: "ru" when Cyrillic
// letters are at least 30% of them (Russian notes are full of English terms),
// "en" when Latin letters are the majority, and "" otherwise (no letters, or
// another script).
func DetectLang(s string) string {
	letters, latin, cyrillic := 0, 0, 0
	for _, r := range s {
		switch classify(r) {
		case scLatin:
			latin++
			letters++
		case scCyrillic:
			cyrillic++
			letters++
		case scLetter, scIdeo:
			letters++
		}
	}
	switch {
	case letters == 0:
		return ""
	case cyrillic*10 >= letters*3:
		return LangRussian
	case latin*2 > letters:
		return LangEnglish
	}
	return ""
}
