package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Script is the writing system of a token, which decides how it is analysed.
type Script uint8

const (
	Other    Script = iota // letters of other scripts, or letters mixed with digits
	Cyrillic               // Cyrillic letters only: analysed as Russian
	Latin                  // Latin letters only: analysed as English
	Digits                 // digits only
)

// Lang is the language a token of this script is analysed in: "ru", "en" or "".
func (s Script) Lang() string {
	switch s {
	case Cyrillic:
		return "ru"
	case Latin:
		return "en"
	}
	return ""
}

// Token is one word of a text.
type Token struct {
	// Text is the word lower-cased, ё written as е, and with look-alike
	// letters of the other script replaced when the word mixes Cyrillic and
	// Latin ("Mосква" with a Latin M is "москва").
	Text string
	// Start and End are the word's byte offsets in the text.
	Start, End int
	Script     Script
	// Hyphen reports that a hyphen joins this word to the one before it
	// ("северо-западный", "1990-х").
	Hyphen bool
}

// Tokenize splits text into words: runs of letters, digits and combining
// marks. Everything else separates words, as in SQLite's unicode61
// tokenizer, so a query finds what the index holds. A single hyphen between
// two words is remembered in Token.Hyphen.
func Tokenize(text string) []Token {
	toks := make([]Token, 0, len(text)/6)
	return appendTokens(toks, text)
}

func appendTokens(toks []Token, text string) []Token {
	i := 0
	prevEnd := -1
	for i < len(text) {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if !isWordRune(r) {
			i += size
			continue
		}
		start := i
		for i < len(text) {
			r, size = rune(text[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(text[i:])
			}
			if !isWordRune(r) {
				break
			}
			i += size
		}
		hyphen := prevEnd >= 0 && start-prevEnd == 1 && text[prevEnd] == '-'
		if t := normalize(text[start:i], start, hyphen); t.Text != "" {
			toks = append(toks, t)
		}
		prevEnd = i
	}
	return toks
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// normalize lower-cases a word, folds ё and classifies its script.
func normalize(w string, start int, hyphen bool) Token {
	var cyr, lat, dig, other int
	simple := true // only ASCII and basic Cyrillic, already lower case
	for _, r := range w {
		switch {
		case r >= 'а' && r <= 'я':
			cyr++
		case r >= 'a' && r <= 'z':
			lat++
		case r >= '0' && r <= '9':
			dig++
		case isCyrillic(r):
			cyr++
			simple = false
		case unicode.IsMark(r):
			simple = false // a stress mark or other diacritic: dropped
		case r >= 'A' && r <= 'Z':
			lat++
			simple = false
		case unicode.Is(unicode.Latin, r):
			lat++
			simple = false
		case unicode.IsDigit(r):
			dig++
			simple = false
		default:
			other++
			simple = false
		}
	}
	t := Token{Text: w, Start: start, End: start + len(w), Hyphen: hyphen}
	if !simple {
		// й and ё may come decomposed (и or е and a combining mark); any
		// other mark, such as a stress mark, is dropped.
		t.Text = Fold(strings.Map(dropMarks, composeReplacer.Replace(w)))
	}
	switch {
	case other > 0:
		t.Script = Other
	case cyr > 0 && lat > 0:
		t.Text, t.Script = fixHomoglyphs(t.Text, cyr, lat, dig)
	case cyr > 0 && dig == 0:
		t.Script = Cyrillic
	case lat > 0 && dig == 0:
		t.Script = Latin
	case dig > 0 && cyr == 0 && lat == 0:
		t.Script = Digits
	}
	return t
}

func isCyrillic(r rune) bool { return r >= 0x400 && r <= 0x4FF }

func dropMarks(r rune) rune {
	if unicode.IsMark(r) {
		return -1
	}
	return r
}

var composeReplacer = strings.NewReplacer("и\u0306", "й", "И\u0306", "Й", "е\u0308", "ё", "Е\u0308", "Ё")

var foldReplacer = strings.NewReplacer("ё", "е")

// Fold lower-cases text and writes ё as е, the normal form of every term.
func Fold(s string) string { return foldReplacer.Replace(strings.ToLower(s)) }

// Look-alike letters: Latin letters that look like Cyrillic ones and back.
var (
	latinToCyrillic = map[rune]rune{'a': 'а', 'b': 'в', 'c': 'с', 'e': 'е', 'h': 'н', 'k': 'к', 'm': 'м',
		'o': 'о', 'p': 'р', 't': 'т', 'x': 'х', 'y': 'у'}
	cyrillicToLatin = func() map[rune]rune {
		m := map[rune]rune{}
		for l, c := range latinToCyrillic {
			m[c] = l
		}
		return m
	}()
)

// fixHomoglyphs turns a lower-case word that mixes Cyrillic and Latin letters
// into one script when the minority's letters all have look-alikes in the
// majority's ("пpивет" with a Latin p). Otherwise the word stays as it is.
func fixHomoglyphs(w string, cyr, lat, dig int) (string, Script) {
	table, script := latinToCyrillic, Cyrillic
	if lat > cyr {
		table, script = cyrillicToLatin, Latin
	}
	var b strings.Builder
	b.Grow(len(w))
	for _, r := range w {
		if m, ok := table[r]; ok {
			r = m
		} else if isCyrillic(r) != (script == Cyrillic) && !unicode.IsDigit(r) {
			return w, Other
		}
		b.WriteRune(r)
	}
	if dig > 0 {
		return b.String(), Other
	}
	return b.String(), script
}
