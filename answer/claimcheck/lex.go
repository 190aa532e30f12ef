package claimcheck

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
)

// tokKind is what a token is: a word (letters), a number (ASCII digits) or
// one punctuation character.
type tokKind uint8

const (
	tWord tokKind = iota
	tNum
	tPunct
)

// script of a word.
const (
	scriptOther uint8 = iota
	scriptCyr
	scriptLat
)

// token is one word, digit run or punctuation character of a text. Unlike
// analysis.Tokenize, the lexer keeps punctuation and the original case,
// splits letters from digits ("v3", "10GB" are two tokens, attached) and
// remembers whether whitespace came before each token, which is what the
// number, date and name rules read.
type token struct {
	kind  tokKind
	raw   string // as written
	low   string // words: analysis.Fold(raw); numbers and punctuation: raw
	start int    // byte offsets in the text
	end   int
	space bool // whitespace (or the start of the text) before the token
	nl    bool // a line break before the token
	scr   uint8
	// initial: a word that starts a sentence (the text's first word, or the
	// first after . ! ? : ; … or a line break).
	initial bool
}

// attached reports that token i follows token i-1 with nothing between.
func attached(toks []token, i int) bool { return i > 0 && i < len(toks) && !toks[i].space }

// isIgnorable are invisible characters that SiYuan and editors leave in text:
// they separate tokens like a space.
func isIgnorable(r rune) bool {
	return r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == '\u2060'
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r)
}

// lex splits text into tokens.
func lex(text string) []token {
	toks := make([]token, 0, len(text)/4)
	space, nl := true, false
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		switch {
		case r == '\n' || r == '\r':
			space, nl = true, true
			i += size
		case unicode.IsSpace(r) || isIgnorable(r):
			space = true
			i += size
		case r >= '0' && r <= '9':
			j := i + 1
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			toks = append(toks, token{kind: tNum, raw: text[i:j], low: text[i:j], start: i, end: j, space: space, nl: nl})
			space, nl = false, false
			i = j
		case isLetter(r):
			j := i + size
			cyr, lat := 0, 0
			countScript(r, &cyr, &lat)
			simple := r < utf8.RuneSelf && r >= 'a'
			if r >= 'а' && r <= 'я' {
				simple = true
			}
			for j < len(text) {
				r2, s2 := rune(text[j]), 1
				if r2 >= utf8.RuneSelf {
					r2, s2 = utf8.DecodeRuneInString(text[j:])
				}
				if !isLetter(r2) {
					break
				}
				countScript(r2, &cyr, &lat)
				if !(r2 >= 'a' && r2 <= 'z' || r2 >= 'а' && r2 <= 'я') {
					simple = false
				}
				j += s2
			}
			raw := text[i:j]
			low := raw
			if !simple {
				low = analysis.Fold(raw)
			}
			scr := scriptOther
			if cyr > lat {
				scr = scriptCyr
			} else if lat > 0 {
				scr = scriptLat
			}
			toks = append(toks, token{kind: tWord, raw: raw, low: low, start: i, end: j, space: space, nl: nl, scr: scr})
			space, nl = false, false
			i = j
		default:
			toks = append(toks, token{kind: tPunct, raw: text[i : i+size], low: text[i : i+size], start: i, end: i + size, space: space, nl: nl})
			space, nl = false, false
			i += size
		}
	}
	markInitial(toks)
	return toks
}

func countScript(r rune, cyr, lat *int) {
	switch {
	case r < utf8.RuneSelf:
		*lat++
	case r >= 0x400 && r <= 0x4FF:
		*cyr++
	case unicode.Is(unicode.Latin, r):
		*lat++
	}
}

// markInitial sets token.initial on the first word of each sentence.
func markInitial(toks []token) {
	start := true
	for i := range toks {
		t := &toks[i]
		if t.nl {
			start = true
		}
		switch t.kind {
		case tWord:
			t.initial = start
			start = false
		case tNum:
			start = false
		case tPunct:
			switch t.raw {
			case ".", "!", "?", "…", ":", ";":
				// "conf.json", "3.1": a dot inside a word ends nothing.
				if i+1 >= len(toks) || toks[i+1].space || !isWordOrNum(toks[i+1]) {
					start = true
				}
			}
		}
	}
}

func isWordOrNum(t token) bool { return t.kind == tWord || t.kind == tNum }

// isUpper reports whether a word starts with a capital letter.
func firstUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}

// caseShape classifies a word's capitals: "Word" (capitalised), "WORD" (all
// capitals, two letters at least), "SiYuan"/"iCloud" (mixed), or plain.
type caseShape uint8

const (
	shapeLower caseShape = iota
	shapeCapital
	shapeAllCaps
	shapeMixed
)

func shape(s string) caseShape {
	upper, lower, n := 0, 0, 0
	firstUp := false
	laterUp := false
	for i, r := range s {
		n++
		switch {
		case unicode.IsUpper(r):
			upper++
			if i == 0 {
				firstUp = true
			} else {
				laterUp = true
			}
		case unicode.IsLower(r):
			lower++
		}
	}
	switch {
	case upper == 0:
		return shapeLower
	case lower == 0 && upper >= 2:
		return shapeAllCaps
	case lower == 0:
		return shapeCapital // one capital letter alone: "A", "X"
	case laterUp:
		return shapeMixed
	case firstUp:
		return shapeCapital
	}
	return shapeLower
}

// dominantScript is the script most of the text's letters are in.
func dominantScript(toks []token) uint8 {
	cyr, lat := 0, 0
	for _, t := range toks {
		if t.kind != tWord {
			continue
		}
		switch t.scr {
		case scriptCyr:
			cyr += len(t.low)
		case scriptLat:
			lat += len(t.low) * 2 // Cyrillic letters take two bytes
		}
	}
	switch {
	case cyr == 0 && lat == 0:
		return scriptOther
	case cyr > lat:
		return scriptCyr
	}
	return scriptLat
}

// joinRaw is the text from token i to token j (inclusive).
func joinRaw(text string, toks []token, i, j int) string {
	return strings.TrimSpace(text[toks[i].start:toks[j].end])
}
