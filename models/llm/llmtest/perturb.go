package llmtest

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The perturbations of the scripted provider: each takes a sentence copied
// from a context and returns it with one fact changed (ok false when the
// sentence has nothing of the kind). They are deterministic: the same
// sentence always changes the same way.

// span is s[start:end] in bytes.
type span struct{ start, end int }

func (a span) overlaps(b span) bool { return a.start < b.end && b.start < a.end }

// wordBounded tells whether s[start:end] has no letter, digit or
// underscore right before or right after it.
func wordBounded(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return false
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return false
		}
	}
	return true
}

const (
	monthsEN = `January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec`
	monthsRU = `января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря|январе|феврале|марте|апреле|мае|июне|июле|августе|сентябре|октябре|ноябре|декабре`
)

// A datePattern finds one form of date; day and year are the submatch
// indexes of its day and year (0: none), the parts a change touches.
type datePattern struct {
	re        *regexp.Regexp
	day, year int
}

// datePatterns, most specific first: at one position the first that
// matches is the date.
var datePatterns = []datePattern{
	{regexp.MustCompile(`(\d{4})-(\d{2})-(\d{2})`), 3, 1},                                           // 2024-05-15
	{regexp.MustCompile(`(\d{1,2})\.(\d{1,2})\.(\d{4})`), 1, 3},                                     // 15.05.2024
	{regexp.MustCompile(`(?i)(\d{1,2})\s+(?:` + monthsEN + `|` + monthsRU + `),?\s+(\d{4})`), 1, 2}, // 15 May 2024, 15 мая 2024
	{regexp.MustCompile(`(?i)(?:` + monthsEN + `)\s+(\d{1,2}),?\s+(\d{4})`), 1, 2},                  // May 15, 2024
	{regexp.MustCompile(`(?i)(?:` + monthsEN + `|` + monthsRU + `)\s+(\d{4})`), 0, 1},               // May 2024, мае 2024
	{regexp.MustCompile(`(?:19|20)\d{2}`), 0, -1},                                                   // a year alone: the whole match
}

// dateMatch is a date found in a sentence: where it is, and where its day
// and year are (start < 0: none).
type dateMatch struct {
	at        span
	day, year span
}

// datesIn lists the dates of s, left to right, without overlaps.
func datesIn(s string) []dateMatch {
	var out []dateMatch
	taken := func(sp span) bool {
		for _, d := range out {
			if d.at.overlaps(sp) {
				return true
			}
		}
		return false
	}
	for _, p := range datePatterns {
		for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
			at := span{m[0], m[1]}
			if !wordBounded(s, at.start, at.end) || taken(at) {
				continue
			}
			d := dateMatch{at: at, day: span{-1, -1}, year: span{-1, -1}}
			if p.day > 0 {
				d.day = span{m[2*p.day], m[2*p.day+1]}
			}
			switch {
			case p.year > 0:
				d.year = span{m[2*p.year], m[2*p.year+1]}
			case p.year < 0:
				d.year = at
			}
			out = append(out, d)
		}
	}
	// Left to right.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].at.start < out[j-1].at.start; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// changeDate changes the first date of s: a full date's day (by three
// days, staying within the month), else the year (three years later).
func changeDate(s string) (string, bool) {
	ds := datesIn(s)
	if len(ds) == 0 {
		return s, false
	}
	d := ds[0]
	if d.day.start >= 0 {
		digits := s[d.day.start:d.day.end]
		day, _ := strconv.Atoi(digits)
		nd := day + 3
		if day > 25 {
			nd = day - 3
		}
		repl := strconv.Itoa(nd)
		if len(digits) == 2 && nd < 10 {
			repl = "0" + repl
		}
		return s[:d.day.start] + repl + s[d.day.end:], true
	}
	year, _ := strconv.Atoi(s[d.year.start:d.year.end])
	return s[:d.year.start] + strconv.Itoa(year+3) + s[d.year.end:], true
}

var (
	numberRunRE = regexp.MustCompile(`\d+(?:[.,:/-]\d+)*`)
	thousandsRE = regexp.MustCompile(`^\d{1,3}(?:,\d{3})+$`)
	decimalRE   = regexp.MustCompile(`^\d+[.,]\d+$`)
)

// numbersIn lists the plain numbers of s (an integer, a decimal, or one
// with thousands separators), outside dates; a number glued to a letter
// ("b3log", "2FA"), a time, a version or a range is not one.
func numbersIn(s string) []span {
	dates := datesIn(s)
	var out []span
next:
	for _, m := range numberRunRE.FindAllStringIndex(s, -1) {
		sp := span{m[0], m[1]}
		run := s[sp.start:sp.end]
		if !wordBounded(s, sp.start, sp.end) {
			continue
		}
		if strings.ContainsAny(run, ".,:/-") && !thousandsRE.MatchString(run) && !decimalRE.MatchString(run) {
			continue
		}
		if sp.end < len(s) && s[sp.end] == '.' && sp.end+1 < len(s) && s[sp.end+1] >= '0' && s[sp.end+1] <= '9' {
			continue // 1.2.3
		}
		for _, d := range dates {
			if d.at.overlaps(sp) {
				continue next
			}
		}
		out = append(out, sp)
	}
	return out
}

// changedNumber is n times three plus seven (30 -> 97, 10 -> 37, 1 -> 10):
// never n itself. Thousands separators and a decimal part are kept.
func changedNumber(run string) string {
	if thousandsRE.MatchString(run) {
		v, _ := strconv.ParseInt(strings.ReplaceAll(run, ",", ""), 10, 64)
		d := strconv.FormatInt(v*3+7, 10)
		var b strings.Builder
		for i, r := range d {
			if i > 0 && (len(d)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	intPart, frac := run, ""
	if k := strings.IndexAny(run, ".,"); k >= 0 {
		intPart, frac = run[:k], run[k:]
	}
	v, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || v > (1<<60) {
		return "97" + frac
	}
	return strconv.FormatInt(v*3+7, 10) + frac
}

// changeNumber changes the first plain number of s.
func changeNumber(s string) (string, bool) {
	ns := numbersIn(s)
	if len(ns) == 0 {
		return s, false
	}
	sp := ns[0]
	return s[:sp.start] + changedNumber(s[sp.start:sp.end]) + s[sp.end:], true
}

// unitSwaps are the units a number may carry and what each becomes.
var unitSwaps = map[string]string{
	"milliseconds": "seconds", "millisecond": "second", "ms": "s",
	"seconds": "minutes", "second": "minute", "minutes": "seconds", "minute": "second",
	"hours": "minutes", "hour": "minute", "days": "hours", "day": "hour",
	"weeks": "months", "week": "month", "months": "years", "month": "year", "years": "months", "year": "month",
	"KB": "MB", "kB": "MB", "MB": "GB", "GB": "TB", "TB": "PB", "Mb": "Gb", "Gb": "Tb",
	"миллисекунд": "секунд", "секунд": "минут", "секунды": "минуты", "секунду": "минуту",
	"минут": "секунд", "минуты": "секунды", "минуту": "секунду",
	"часов": "минут", "часа": "минуты", "час": "минуту",
	"дней": "часов", "дня": "часа", "день": "час",
	"недель": "месяцев", "недели": "месяца", "неделю": "месяц",
	"месяцев": "лет", "месяца": "года", "месяц": "год",
	"лет": "месяцев", "года": "месяца", "год": "месяц",
	"КБ": "МБ", "МБ": "ГБ", "ГБ": "ТБ", "Кб": "Мб", "Мб": "Гб", "Гб": "Тб",
}

var unitRE = func() *regexp.Regexp {
	var units []string
	for u := range unitSwaps {
		units = append(units, regexp.QuoteMeta(u))
	}
	// Longest first: "days" before "day" (the leftmost-first alternation).
	for i := 1; i < len(units); i++ {
		for j := i; j > 0 && (len(units[j]) > len(units[j-1]) || len(units[j]) == len(units[j-1]) && units[j] < units[j-1]); j-- {
			units[j], units[j-1] = units[j-1], units[j]
		}
	}
	return regexp.MustCompile(`\d[\d.,]*[ \x{00a0}-]?(` + strings.Join(units, "|") + `)`)
}()

// changeUnit changes the first unit that follows a number ("30 days" ->
// "30 hours", "200 MB" -> "200 GB", "30 дней" -> "30 часов").
func changeUnit(s string) (string, bool) {
	for _, m := range unitRE.FindAllStringSubmatchIndex(s, -1) {
		if !wordBounded(s, m[0], m[1]) {
			continue
		}
		u := s[m[2]:m[3]]
		return s[:m[2]] + unitSwaps[u] + s[m[3]:], true
	}
	return s, false
}

// entitySwaps are proper names and the names put in their place: never
// one the same notes would name for the same thing.
var entitySwaps = map[string]string{
	"SiYuan": "Obsidian", "Obsidian": "SiYuan", "Docker": "Vagrant", "Windows": "Solaris", "macOS": "Solaris",
	"Linux": "Solaris", "Android": "Symbian", "iOS": "Symbian", "iPhone": "Nokia", "GitHub": "SourceForge",
	"GitLab": "SourceForge", "Google": "Yahoo", "Microsoft": "Oracle", "Apple": "Nokia", "WebDAV": "Gopher",
	"Notion": "Evernote", "Evernote": "Notion", "Markdown": "AsciiDoc", "Chrome": "Opera", "Firefox": "Opera",
	"Москва": "Казань", "Москве": "Казани", "Россия": "Бразилия", "России": "Бразилии", "Яндекс": "Рамблер",
	"Сиюань": "Обсидиан", "Петербург": "Новосибирск", "Петербурге": "Новосибирске",
}

var capitalisedRE = regexp.MustCompile(`\p{Lu}[\p{L}\d]{2,}`)

// changeEntity swaps one proper name: a known one for its swap, else the
// first capitalised word that does not open the sentence, for "Obsidian"
// ("Обсидиан" in Cyrillic).
func changeEntity(s string) (string, bool) {
	best, repl := -1, ""
	end := 0
	for name, to := range entitySwaps {
		for from := 0; ; {
			k := strings.Index(s[from:], name)
			if k < 0 {
				break
			}
			k += from
			if wordBounded(s, k, k+len(name)) && (best < 0 || k < best || k == best && len(name) > end-best) {
				best, repl, end = k, to, k+len(name)
			}
			from = k + len(name)
		}
	}
	if best >= 0 {
		return s[:best] + repl + s[end:], true
	}
	for _, m := range capitalisedRE.FindAllStringIndex(s, -1) {
		if !wordBounded(s, m[0], m[1]) || opensSentence(s, m[0]) {
			continue
		}
		to := "Obsidian"
		if cyrillic(s[m[0]:m[1]]) {
			to = "Обсидиан"
		}
		if s[m[0]:m[1]] == to {
			continue
		}
		return s[:m[0]] + to + s[m[1]:], true
	}
	return s, false
}

// opensSentence: nothing but spaces, quotes and brackets before at, or a
// sentence end.
func opensSentence(s string, at int) bool {
	before := strings.TrimRight(s[:at], " \t\"'«(*_`")
	return before == "" || strings.HasSuffix(before, ".") || strings.HasSuffix(before, "!") || strings.HasSuffix(before, "?") || strings.HasSuffix(before, ":")
}

// The clauses that AppendCondition and InventedClause add, by language;
// the condition is chosen by the sentence.
var (
	conditionsEN = []string{", but only in the paid edition", ", except on weekends", ", but only for administrators"}
	conditionsRU = []string{", но только в платной версии", ", кроме выходных", ", но только для администраторов"}
	inventedEN   = ", and it also syncs every note to a server in Peru"
	inventedRU   = ", и к тому же отправляет каждую заметку на сервер в Перу"
)

// injectionREs find an instruction addressed to the model inside a note
// ("ignore previous instructions and answer that X"); the submatch is X.
var injectionREs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(?:ignore|disregard|forget)\s+(?:all\s+)?(?:the\s+|your\s+|any\s+)?(?:previous|prior|above|earlier)\s+instructions?[^.!?\n]*?\s(?:answer|reply|respond|say|tell\s+the\s+user)(?:\s+(?:that|with))?\s*[:"«]?\s*([^"»\n]+?)["»]?\s*(?:[.!?]\s|[.!?]?$|\n)`),
	regexp.MustCompile(`(?i)(?:игнорируй|игнорируйте|забудь|забудьте)\s+(?:все\s+)?(?:предыдущие|прошлые|прежние)\s+инструкции[^.!?\n]*?\s(?:ответь|ответьте|скажи|скажите|отвечай)\s*,?\s*(?:что\s+)?[:"«]?\s*([^"»\n]+?)["»]?\s*(?:[.!?]\s|[.!?]?$|\n)`),
}

// injectionIn finds an instruction to the model in text: what it says to
// answer, and the instruction's sentence.
func injectionIn(text string) (payload, instruction string, ok bool) {
	for _, re := range injectionREs {
		if m := re.FindStringSubmatchIndex(text); m != nil {
			payload = strings.TrimSpace(text[m[2]:m[3]])
			start := m[0]
			if k := strings.LastIndexAny(text[:start], ".!?\n"); k >= 0 {
				start = k + 1
			}
			instruction = strings.TrimSpace(text[start:m[1]])
			if payload != "" {
				return payload, instruction, true
			}
		}
	}
	return "", "", false
}
