package scope

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// word is one word of a text: its lower-case form (ё as е), what was
// written, and where.
type word struct {
	s, orig    string
	start, end int
	quoted     bool
}

// words cuts s into words: runs of letters and digits, joined by '-', '.',
// or an apostrophe between two of them ("2024-03-01", "01.03.2024", "1-го",
// "today's"), so a date phrase never matches part of a word. quoted marks
// bytes inside quotes (nil: none).
func words(s string, quoted []bool) []word {
	var out []word
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	start := -1
	for i := 0; i <= len(s); {
		r, n := rune(0), 1
		if i < len(s) {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case i < len(s) && isWord(r):
			if start < 0 {
				start = i
			}
		case start >= 0 && i < len(s) && strings.ContainsRune("-.'’", r) && i+n < len(s):
			if next, _ := utf8.DecodeRuneInString(s[i+n:]); isWord(next) {
				break
			}
			fallthrough
		default:
			if start >= 0 {
				w := word{orig: s[start:i], start: start, end: i}
				w.s = strings.ReplaceAll(strings.ToLower(w.orig), "ё", "е")
				for j := start; quoted != nil && j < i; j++ {
					w.quoted = w.quoted || quoted[j]
				}
				out = append(out, w)
				start = -1
			}
		}
		i += n
	}
	return out
}

// quoteMask marks the bytes of s inside "…", «…» or “…”: a date phrase in
// quotes is words to search for, not a range.
func quoteMask(s string) []bool {
	mask := make([]bool, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if closing, ok := quotePairs[r]; ok {
			if j := strings.IndexRune(s[i+n:], closing); j >= 0 {
				end := i + n + j + utf8.RuneLen(closing)
				for k := i; k < end; k++ {
					mask[k] = true
				}
				i = end
				continue
			}
		}
		i += n
	}
	return mask
}

var quotePairs = map[rune]rune{'"': '"', '«': '»', '“': '”', '„': '“'}

var months = map[string]time.Month{}

func init() {
	names := [12][]string{
		{"january", "jan", "январь", "января", "январе"},
		{"february", "feb", "февраль", "февраля", "феврале"},
		{"march", "mar", "март", "марта", "марте"},
		{"april", "apr", "апрель", "апреля", "апреле"},
		{"may", "май", "мая", "мае"},
		{"june", "jun", "июнь", "июня", "июне"},
		{"july", "jul", "июль", "июля", "июле"},
		{"august", "aug", "август", "августа", "августе"},
		{"september", "sep", "sept", "сентябрь", "сентября", "сентябре"},
		{"october", "oct", "октябрь", "октября", "октябре"},
		{"november", "nov", "ноябрь", "ноября", "ноябре"},
		{"december", "dec", "декабрь", "декабря", "декабре"},
	}
	for i, ns := range names {
		for _, n := range ns {
			months[n] = time.Month(i + 1)
		}
	}
}

// monthOf reads a month name. "may" only counts written "May": lower-case
// it is the verb.
func monthOf(w word) (time.Month, bool) {
	m, ok := months[w.s]
	if ok && w.s == "may" && w.orig != "May" && w.orig != "MAY" {
		return 0, false
	}
	return m, ok
}

var counts = map[string]int{
	"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2,
	"один": 1, "одна": 1, "одну": 1, "два": 2, "две": 2, "три": 3, "четыре": 4,
	"пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9, "десять": 10,
	"одиннадцать": 11, "двенадцать": 12, "пятнадцать": 15, "двадцать": 20, "тридцать": 30,
}

// countOf reads a count: digits (1 to 9999) or a number word.
func countOf(w word) (int, bool) {
	if n, ok := counts[w.s]; ok {
		return n, true
	}
	n, err := strconv.Atoi(w.s)
	return n, err == nil && n > 0 && n < 10000
}

var units = map[string]byte{
	"hour": 'h', "hours": 'h', "day": 'd', "days": 'd', "week": 'w', "weeks": 'w',
	"month": 'm', "months": 'm', "year": 'y', "years": 'y',
	"час": 'h', "часа": 'h', "часов": 'h', "день": 'd', "дня": 'd', "дней": 'd',
	"сутки": 'd', "суток": 'd', "неделя": 'w', "неделю": 'w', "недели": 'w', "недель": 'w',
	"месяц": 'm', "месяца": 'm', "месяцев": 'm', "год": 'y', "года": 'y', "лет": 'y',
}

// dayOf reads a day of the month: "5", "5th", "1st", "1-го".
func dayOf(w word) (int, bool) {
	s := w.s
	for _, suf := range []string{"st", "nd", "rd", "th", "-го", "-е"} {
		s = strings.TrimSuffix(s, suf)
	}
	d, err := strconv.Atoi(s)
	return d, err == nil && d >= 1 && d <= 31
}
