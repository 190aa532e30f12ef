package scope

import (
	"strings"
	"time"
)

// DateRange is a date phrase found in a question and the range it means:
// Since <= note time < Until, a zero side open.
type DateRange struct {
	Phrase       string // as written ("в прошлом месяце")
	Start, End   int    // its byte offsets in the text
	Since, Until time.Time
}

// String tells the range as the page shows it: "since 2026-11-01",
// "before 2026-05-01", "2026-10-01 to 2026-10-31" (the last day included).
func (d DateRange) String() string { return describe(d.Since, d.Until) }

func describe(since, until time.Time) string {
	const day = time.DateOnly
	switch {
	case since.IsZero() && until.IsZero():
		return "any time"
	case until.IsZero():
		return "since " + since.Format(day)
	case since.IsZero():
		return "before " + until.Format(day)
	}
	last := until.Add(-time.Nanosecond)
	if isMidnight(since) && isMidnight(until) {
		if since.Format(day) == last.Format(day) {
			return "on " + since.Format(day)
		}
		return since.Format(day) + " to " + last.Format(day)
	}
	return since.Format(time.RFC3339) + " to " + until.Format(time.RFC3339)
}

func isMidnight(t time.Time) bool { return t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 }

// FindDates finds the date phrases of a question, in English and Russian,
// and the range each means in loc (nil: now's location), weeks starting on
// Monday. A month name counts only after a preposition that makes it a
// time ("in March", "с марта", "до мая"): "March of the Penguins" is words.
// Phrases inside quotes are words too.
func FindDates(text string, now time.Time, loc *time.Location) []DateRange {
	return newCal(now, loc).findDates(text, quoteMask(text))
}

func (c cal) findDates(text string, quoted []bool) []DateRange {
	ws := words(text, quoted)
	var out []DateRange
	for i := 0; i < len(ws); {
		p, n, ok := c.phraseAt(ws, i)
		if !ok || anyQuoted(ws[i:i+n]) {
			i++
			continue
		}
		start, end := ws[i].start, ws[i+n-1].end
		out = append(out, DateRange{Phrase: text[start:end], Start: start, End: end, Since: p.start, Until: p.end})
		i += n
	}
	return out
}

func anyQuoted(ws []word) bool {
	for _, w := range ws {
		if w.quoted {
			return true
		}
	}
	return false
}

// phraseAt tries every rule at word i, the longest forms first.
func (c cal) phraseAt(ws []word, i int) (period, int, bool) {
	for _, rule := range []func([]word, int) (period, int, bool){
		c.fixedPhrase, c.rolling, c.prepMonth, c.prepYear, c.prepDate,
	} {
		if p, n, ok := rule(ws, i); ok {
			return p, n, true
		}
	}
	return period{}, 0, false
}

// fixed phrases name a calendar unit relative to now; sinceOnly ones open
// the range towards now ("since last week", "с начала года").
type fixed struct {
	words     string
	unit      byte
	offset    int
	sinceOnly bool
}

var fixedPhrases = []fixed{
	{"today", 'd', 0, false}, {"yesterday", 'd', -1, false},
	{"this week", 'w', 0, false}, {"last week", 'w', -1, false}, {"previous week", 'w', -1, false},
	{"this month", 'm', 0, false}, {"last month", 'm', -1, false}, {"previous month", 'm', -1, false},
	{"this quarter", 'q', 0, false}, {"last quarter", 'q', -1, false},
	{"this year", 'y', 0, false}, {"last year", 'y', -1, false}, {"previous year", 'y', -1, false},
	{"since yesterday", 'd', -1, true}, {"since last week", 'w', -1, true}, {"since last month", 'm', -1, true},
	{"since last year", 'y', -1, true},
	{"since the start of the week", 'w', 0, true}, {"since the start of the month", 'm', 0, true},
	{"since the start of the year", 'y', 0, true}, {"since the beginning of the week", 'w', 0, true},
	{"since the beginning of the month", 'm', 0, true}, {"since the beginning of the year", 'y', 0, true},

	{"сегодня", 'd', 0, false}, {"вчера", 'd', -1, false}, {"позавчера", 'd', -2, false},
	{"на этой неделе", 'w', 0, false}, {"на прошлой неделе", 'w', -1, false},
	{"за эту неделю", 'w', 0, false}, {"за прошлую неделю", 'w', -1, false},
	{"в этом месяце", 'm', 0, false}, {"в прошлом месяце", 'm', -1, false},
	{"за этот месяц", 'm', 0, false}, {"за прошлый месяц", 'm', -1, false},
	{"в этом квартале", 'q', 0, false}, {"в прошлом квартале", 'q', -1, false},
	{"за этот квартал", 'q', 0, false}, {"за прошлый квартал", 'q', -1, false},
	{"в этом году", 'y', 0, false}, {"в прошлом году", 'y', -1, false},
	{"за этот год", 'y', 0, false}, {"за прошлый год", 'y', -1, false},
	{"со вчерашнего дня", 'd', -1, true}, {"с прошлой недели", 'w', -1, true},
	{"с прошлого месяца", 'm', -1, true}, {"с прошлого года", 'y', -1, true},
	{"с начала недели", 'w', 0, true}, {"с начала месяца", 'm', 0, true},
	{"с начала квартала", 'q', 0, true}, {"с начала года", 'y', 0, true},
}

func (c cal) fixedPhrase(ws []word, i int) (period, int, bool) {
	best, bestN := fixed{}, 0
	for _, f := range fixedPhrases {
		fw := strings.Fields(f.words)
		if len(fw) > bestN && matchWords(ws, i, fw) {
			best, bestN = f, len(fw)
		}
	}
	if bestN == 0 {
		return period{}, 0, false
	}
	p := c.span(best.unit, best.offset)
	if best.sinceOnly {
		p.end = time.Time{}
	}
	return p, bestN, true
}

func matchWords(ws []word, i int, want []string) bool {
	if i+len(want) > len(ws) {
		return false
	}
	for k, w := range want {
		if ws[i+k].s != w {
			return false
		}
	}
	return true
}

// is reports whether word i exists and is one of alts.
func is(ws []word, i int, alts ...string) bool {
	if i >= len(ws) {
		return false
	}
	for _, a := range alts {
		if ws[i].s == a {
			return true
		}
	}
	return false
}

// rolling reads a span back from now: "in the last 7 days", "past two
// weeks", "the last month", "за последние 7 дней", "за последнюю неделю".
// "last week" alone is the calendar week (fixedPhrase), "the last week" is
// the 7 days before now.
func (c cal) rolling(ws []word, i int) (period, int, bool) {
	j := i
	prep := is(ws, j, "in", "over", "during", "within", "for", "за", "в", "на")
	if prep {
		j++
	}
	the := is(ws, j, "the")
	if the {
		j++
	}
	past := is(ws, j, "past", "прошедшие", "прошедший", "прошедшую", "прошедших")
	if !past && !is(ws, j, "last", "последние", "последний", "последнюю", "последних") {
		return period{}, 0, false
	}
	j++
	n, counted := 1, false
	if j < len(ws) {
		if k, ok := countOf(ws[j]); ok {
			n, counted = k, true
			j++
		}
	}
	if j >= len(ws) {
		return period{}, 0, false
	}
	u, ok := units[ws[j].s]
	russian := ws[j].s[0] >= 0x80
	if !ok || !(counted || past || the || (russian && prep)) {
		return period{}, 0, false
	}
	return period{c.ago(n, u), time.Time{}}, j + 1 - i, true
}

// How a preposition bounds the period it is put before.
const (
	whole  = iota // in March, в марте, за март: the period itself
	since         // since March, с марта: from its start on
	after         // after March, после марта: from its end on
	before        // before May, до мая: up to its start
	until         // until May, по май: up to its end
)

var preps = map[string]int{
	"in": whole, "during": whole, "в": whole, "во": whole, "за": whole,
	"since": since, "from": since, "с": since, "со": since,
	"after": after, "после": after,
	"before": before, "до": before,
	"until": until, "till": until, "through": until, "по": until,
}

func bound(kind int, p period) period {
	switch kind {
	case since:
		return period{p.start, time.Time{}}
	case after:
		return period{p.end, time.Time{}}
	case before:
		return period{time.Time{}, p.start}
	case until:
		return period{time.Time{}, p.end}
	}
	return p
}

// prepMonth reads a preposition and a month, with a day and a year if
// written: "in March", "since March 5", "in March 2024", "on March 5",
// "с 1 марта", "в марте 2024 года", "до мая".
func (c cal) prepMonth(ws []word, i int) (period, int, bool) {
	if i >= len(ws) {
		return period{}, 0, false
	}
	kind, ok := preps[ws[i].s]
	on := ws[i].s == "on"
	if !ok && !on {
		return period{}, 0, false
	}
	p, n, ok := c.bareMonth(ws, i+1)
	if !ok || (on && p.end.Sub(p.start) > 25*time.Hour) {
		return period{}, 0, false
	}
	return bound(kind, p), n + 1, true
}

// bareMonth reads a month with a day and a year if written: "March",
// "March 5", "March 5, 2024", "5 March", "1-го марта 2024 года".
func (c cal) bareMonth(ws []word, i int) (period, int, bool) {
	j, d := i, 0
	if j < len(ws) {
		if dd, ok := dayOf(ws[j]); ok && j+1 < len(ws) {
			if _, isMonth := monthOf(ws[j+1]); isMonth {
				d, j = dd, j+1
			}
		}
	}
	if j >= len(ws) {
		return period{}, 0, false
	}
	m, ok := monthOf(ws[j])
	if !ok {
		return period{}, 0, false
	}
	j++
	if d == 0 && j < len(ws) && ws[j].s != "" {
		if dd, ok := dayOf(ws[j]); ok && !isYearWord(ws, j) {
			d, j = dd, j+1
		}
	}
	y := 0
	if j < len(ws) {
		if yy, ok := parseYear(ws[j].s); ok {
			y, j = yy, j+1
			j = skipYearWord(ws, j)
		}
	}
	if d == 0 {
		return c.month(y, m), j - i, true
	}
	p, ok := c.day(y, m, d)
	return p, j - i, ok
}

func isYearWord(ws []word, j int) bool { _, ok := parseYear(ws[j].s); return ok }

func skipYearWord(ws []word, j int) int {
	if is(ws, j, "год", "года", "году", "г") {
		return j + 1
	}
	return j
}

// prepYear reads "in 2024", "since 2023", "в 2024 году", "до 2024 года".
// A year after now's next is a number, not a time; in Russian the year
// needs its word (год, года, году, г.): "с 2000 рублей" is no range.
func (c cal) prepYear(ws []word, i int) (period, int, bool) {
	if i+1 >= len(ws) {
		return period{}, 0, false
	}
	kind, ok := preps[ws[i].s]
	y, isYear := parseYear(ws[i+1].s)
	if !ok || !isYear || y > c.now.Year()+1 {
		return period{}, 0, false
	}
	end := skipYearWord(ws, i+2)
	if ws[i].s[0] >= 0x80 && end == i+2 {
		return period{}, 0, false
	}
	return bound(kind, c.year(y)), end - i, true
}

// prepDate reads a preposition and a written date: "since 2024-03-01",
// "after 2024-03", "on 01.03.2024", "до 2024-05-01".
func (c cal) prepDate(ws []word, i int) (period, int, bool) {
	if i+1 >= len(ws) || !strings.ContainsAny(ws[i+1].s, "-.") {
		return period{}, 0, false
	}
	kind, ok := preps[ws[i].s]
	if ws[i].s == "on" {
		kind, ok = whole, true
	}
	p, isDate := c.parseNumericDate(ws[i+1].s)
	if !ok || !isDate {
		return period{}, 0, false
	}
	return bound(kind, p), 2, true
}
