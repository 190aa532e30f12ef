package claimcheck

import (
	"strconv"
	"strings"
)

// Fact kinds, also Problem.Kind.
const (
	KindNumber   = "number"
	KindDate     = "date"
	KindTime     = "time"
	KindQuantity = "quantity"
	KindPercent  = "percent"
	KindVersion  = "version"
	KindMoney    = "money"
	KindName     = "name"
	KindLimiter  = "limiter"
	KindClause   = "clause"
)

// ymd is a date; a zero field was not written ("15 May" has no year).
type ymd struct{ y, m, d int }

// hms is a time of day on the 24-hour clock.
type hms struct {
	h, m, s int
	hasS    bool
}

// fact is one number, date, time, amount or identifier read from a text.
type fact struct {
	kind  string
	item  string // as written
	num   string // canonical number: "30", "3.5", "3.1.2"; an identifier's folded form
	unit  string // unit concept ("day", "percent", "usd"); "" for a bare number
	dates []ymd  // a date's readings (05/06/2024 has two)
	tm    hms
	// one: the number 1 written as a word ("one of", "одна из"): a claim
	// does not state a count by it.
	one bool
}

// reader walks a text's tokens and reads its facts.
type reader struct {
	text string
	toks []token
	used []bool // tokens that belong to a fact: not names, not clause words
	out  []fact
}

// readFacts returns the numeric facts and identifiers ("S3", "x64") of a
// text, and which tokens they took.
func readFacts(text string, toks []token) ([]fact, []bool) {
	r := &reader{text: text, toks: toks, used: make([]bool, len(toks))}
	for i := 0; i < len(toks); {
		i = r.at(i)
	}
	return r.out, r.used
}

func (r *reader) punct(j int, s string) bool {
	return j < len(r.toks) && r.toks[j].kind == tPunct && r.toks[j].raw == s && attached(r.toks, j)
}

func (r *reader) num(j int) bool {
	return j < len(r.toks) && r.toks[j].kind == tNum && attached(r.toks, j)
}

func (r *reader) word(j int) bool { return j < len(r.toks) && r.toks[j].kind == tWord }

func (r *reader) take(i, j int) {
	for k := i; k < j && k < len(r.toks); k++ {
		r.used[k] = true
	}
}

func (r *reader) span(i, j int) string { return joinRaw(r.text, r.toks, i, j-1) }

func (r *reader) add(f fact, i, j int) int {
	f.item = r.span(i, j)
	r.out = append(r.out, f)
	r.take(i, j)
	return j
}

// at reads what starts at token i and returns the index after it.
func (r *reader) at(i int) int {
	t := r.toks[i]
	switch t.kind {
	case tNum:
		return r.number(i)
	case tWord:
		if (t.low == "v" || t.low == "версия") && r.num(i+1) {
			if j, ok := r.dotted(i+1, true); ok {
				r.take(i, i+1)
				r.out[len(r.out)-1].item = r.span(i, j)
				return j
			}
		}
		if j := r.ident(i); j > i {
			return j
		}
		if _, ok := cardinals[t.low]; ok {
			return r.cardinal(i)
		}
		if m, ok := months[t.low]; ok {
			return r.monthFirst(i, m)
		}
	}
	return i + 1
}

// ident reads a word joined to digits ("S3", "x64", "mp4", "UTF-8",
// "iPhone15"): a name, not a number.
func (r *reader) ident(i int) int {
	j := i + 1
	hasNum := false
	for j < len(r.toks) && attached(r.toks, j) {
		switch {
		case r.toks[j].kind == tNum:
			hasNum = true
			j++
		case r.toks[j].kind == tWord:
			j++
		case r.toks[j].raw == "-" && j+1 < len(r.toks) && r.toks[j+1].kind == tNum && attached(r.toks, j+1) && !hasNum:
			j++
		default:
			goto done
		}
	}
done:
	if !hasNum {
		return i
	}
	return r.addName(i, j)
}

// number reads what starts with digits: a date, a time, a version, an
// amount with its unit or currency, or a bare number.
func (r *reader) number(i int) int {
	toks := r.toks
	// A digit run glued after letters belongs to an identifier ("2FA" is
	// read here: digits first).
	if r.word(i+1) && attached(toks, i+1) && !isUnitOrSuffix(toks[i+1].low) {
		j := i + 1
		for j < len(toks) && attached(toks, j) && (toks[j].kind == tWord || toks[j].kind == tNum) {
			j++
		}
		return r.addName(i, j)
	}
	if j, ok := r.isoDate(i); ok {
		return j
	}
	if len(toks[i].raw) <= 2 {
		if j, ok := r.dayMonthYear(i); ok {
			return j
		}
		if j, ok := r.clock(i); ok {
			return j
		}
	}
	// Versions and decimals: 3.1, 3.1.2; a decimal comma: 3,5.
	if r.punct(i+1, ".") && r.num(i+2) {
		if j, ok := r.dotted(i, false); ok {
			return j
		}
	}
	j, val := r.grouped(i)
	return r.measure(i, j, val)
}

// addName adds tokens i..j-1, glued together, as a name.
func (r *reader) addName(i, j int) int {
	var b strings.Builder
	for k := i; k < j; k++ {
		b.WriteString(r.toks[k].low)
	}
	return r.add(fact{kind: KindName, num: b.String()}, i, j)
}

// isoDate reads an ISO date at i: 2024-05-15, 2024/05/15, 2024.05.15; and
// 2024-05.
func (r *reader) isoDate(i int) (int, bool) {
	toks := r.toks
	n0 := toks[i].raw
	if len(n0) != 4 {
		return 0, false
	}
	for _, sep := range []string{"-", "/", "."} {
		if r.punct(i+1, sep) && r.num(i+2) && len(toks[i+2].raw) <= 2 {
			y, m := atoi(n0), atoi(toks[i+2].raw)
			if r.punct(i+3, sep) && r.num(i+4) && len(toks[i+4].raw) <= 2 {
				if d := atoi(toks[i+4].raw); validDate(y, m, d) {
					return r.add(fact{kind: KindDate, dates: []ymd{{y, m, d}}}, i, i+5), true
				}
			} else if sep == "-" && len(toks[i+2].raw) == 2 && validDate(y, m, 0) {
				return r.add(fact{kind: KindDate, dates: []ymd{{y, m, 0}}}, i, i+3), true
			}
		}
	}
	return 0, false
}

// dayMonthYear reads 15.05.2024, 15.05.24 or 05/15/2024 at i (a slash
// date that reads both ways is both dates).
func (r *reader) dayMonthYear(i int) (int, bool) {
	toks := r.toks
	for _, sep := range []string{".", "/"} {
		if r.punct(i+1, sep) && r.num(i+2) && len(toks[i+2].raw) <= 2 && r.punct(i+3, sep) && r.num(i+4) &&
			(len(toks[i+4].raw) == 4 || len(toks[i+4].raw) == 2 && sep == ".") && !(r.punct(i+5, sep) && r.num(i+6)) {
			a, b, y := atoi(toks[i].raw), atoi(toks[i+2].raw), atoi(toks[i+4].raw)
			if y < 100 {
				y += 2000
			}
			var ds []ymd
			if validDate(y, b, a) {
				ds = append(ds, ymd{y, b, a})
			}
			if sep == "/" && a != b && validDate(y, a, b) {
				ds = append(ds, ymd{y, a, b})
			}
			if len(ds) > 0 {
				return r.add(fact{kind: KindDate, dates: ds}, i, i+5), true
			}
		}
	}
	return 0, false
}

// clock reads a time at i: 02:00, 14:30:15, 2:00 PM; "2 pm", "2pm".
func (r *reader) clock(i int) (int, bool) {
	toks := r.toks
	n0 := toks[i].raw
	if r.punct(i+1, ":") && r.num(i+2) && len(toks[i+2].raw) == 2 {
		h, m := atoi(n0), atoi(toks[i+2].raw)
		j := i + 3
		t := hms{h: h, m: m}
		if r.punct(j, ":") && r.num(j+1) && len(toks[j+1].raw) == 2 {
			t.s, t.hasS = atoi(toks[j+1].raw), true
			j += 2
		}
		if k, add, ok := r.meridiem(j); ok && h >= 1 && h <= 12 {
			t.h = h%12 + add
			j = k
		}
		if t.h <= 24 && t.m < 60 && t.s < 60 {
			return r.add(fact{kind: KindTime, tm: t}, i, j), true
		}
	}
	if k, add, ok := r.meridiem(i + 1); ok && atoi(n0) >= 1 && atoi(n0) <= 12 {
		return r.add(fact{kind: KindTime, tm: hms{h: atoi(n0)%12 + add}}, i, k), true
	}
	return 0, false
}

// grouped reads a number at i with its digit groups or decimal comma, and
// returns where it ends and its value without leading zeros.
func (r *reader) grouped(i int) (int, string) {
	toks := r.toks
	n0 := toks[i].raw
	val := strings.TrimLeft(n0, "0")
	if val == "" {
		val = "0"
	}
	j := i + 1
	switch {
	case len(n0) <= 3 && r.punct(i+1, ",") && r.num(i+2) && len(toks[i+2].raw) == 3:
		// 1,000 and 1,000,000.
		for r.punct(j, ",") && r.num(j+1) && len(toks[j+1].raw) == 3 {
			val += toks[j+1].raw
			j += 2
		}
	case len(n0) <= 3 && r.thinSpace(i):
		// 1 000 (a space, a no-break or a thin space between groups of 3).
		for j < len(toks) && r.thinSpace(j-1) {
			val += toks[j].raw
			j++
		}
	case r.punct(i+1, ",") && r.num(i+2) && len(toks[i+2].raw) <= 2 && !(r.punct(i+3, ",") && r.num(i+4)):
		// A decimal comma: 3,5.
		val += "." + toks[i+2].raw
		j = i + 3
	}
	return j, val
}

// thinSpace reports whether number token k is followed by a group of exactly
// three digits after a single space: "1 000".
func (r *reader) thinSpace(k int) bool {
	toks := r.toks
	if k+1 >= len(toks) || toks[k].kind != tNum || toks[k+1].kind != tNum || len(toks[k+1].raw) != 3 {
		return false
	}
	switch r.text[toks[k].end:toks[k+1].start] {
	case " ", "\u00a0", "\u202f", "\u2009":
	default:
		return false
	}
	// "1 000.5" or "1 000:00" is something else.
	if n := k + 2; n < len(toks) && attached(toks, n) && toks[n].kind == tPunct && (toks[n].raw == "." || toks[n].raw == ":" || toks[n].raw == ",") && r.num(n+1) {
		return false
	}
	return true
}

// dotted reads 3.1 or 3.1.2 starting at number token i; version forces the
// version kind (after "v").
func (r *reader) dotted(i int, version bool) (int, bool) {
	toks := r.toks
	parts := []string{toks[i].raw}
	j := i + 1
	for r.punct(j, ".") && r.num(j+1) {
		parts = append(parts, toks[j+1].raw)
		j += 2
	}
	if len(parts) > 2 || (i > 0 && versionWords[toks[i-1].low]) {
		version = true
	}
	if len(parts) == 1 && !version {
		return i, false
	}
	s := strings.Join(parts, ".")
	if version {
		return r.add(fact{kind: KindVersion, num: s}, i, j), true
	}
	return r.measure(i, j, s), true
}

// meridiem reads "am", "pm", "a.m.", "p.m." at token j.
func (r *reader) meridiem(j int) (int, int, bool) {
	if !r.word(j) {
		return j, 0, false
	}
	if add, ok := meridiem[r.toks[j].low]; ok {
		return j + 1, add, true
	}
	if (r.toks[j].low == "a" || r.toks[j].low == "p") && r.punct(j+1, ".") && r.word(j+2) && r.toks[j+2].low == "m" && attached(r.toks, j+2) {
		k := j + 3
		if r.punct(k, ".") {
			k++
		}
		if r.toks[j].low == "p" {
			return k, 12, true
		}
		return k, 0, true
	}
	return j, 0, false
}

// measure reads what follows the number val (tokens i..j-1): a multiplier,
// a year's word, a day's month, an ordinal or case ending, a unit or a
// currency.
func (r *reader) measure(i, j int, val string) int {
	toks := r.toks
	// Ordinal suffix "15th", case ending "5-го", "1990-х".
	if j < len(toks) && attached(toks, j) && toks[j].kind == tWord && ordinalSuffix[toks[j].low] {
		j++
	} else if r.punct(j, "-") && j+1 < len(toks) && attached(toks, j+1) && toks[j+1].kind == tWord && toks[j+1].scr == scriptCyr &&
		len([]rune(toks[j+1].low)) <= 3 && !isUnitOrSuffix(toks[j+1].low) {
		j += 2
	}
	// A day and a month: "15 May 2024", "15th of May", "15 мая 2024 г.".
	if !strings.Contains(val, ".") && len(val) <= 2 {
		k := j
		if k < len(toks) && toks[k].kind == tWord && toks[k].low == "of" {
			k++
		}
		if k < len(toks) && toks[k].kind == tWord {
			if m, ok := months[toks[k].low]; ok && (toks[k].scr == scriptCyr || firstUpper(toks[k].raw)) {
				d := atoi(val)
				if validDate(0, m, d) {
					k++
					y := 0
					if k < len(toks) && toks[k].kind == tPunct && toks[k].raw == "," && k+1 < len(toks) && toks[k+1].kind == tNum {
						if len(toks[k+1].raw) == 4 {
							k++
						}
					}
					if k < len(toks) && toks[k].kind == tNum && len(toks[k].raw) == 4 {
						y = atoi(toks[k].raw)
						k = r.yearWord(k + 1)
					}
					return r.add(fact{kind: KindDate, dates: []ymd{{y, m, d}}}, i, k)
				}
			}
		}
	}
	// A year: "2024 года", "2024 г.", "2024г".
	if len(val) == 4 && !strings.Contains(val, ".") {
		if k := r.yearWord(j); k > j {
			return r.add(fact{kind: KindDate, num: val}, i, k)
		}
	}
	// A multiplier: "5 thousand", "5 тыс.", "5k".
	if j < len(toks) && toks[j].kind == tWord {
		mult, ok := multipliers[toks[j].low]
		if !ok && (toks[j].low == "k") && attached(toks, j) {
			mult, ok = 1e3, true
		}
		if ok {
			if f, err := strconv.ParseFloat(val, 64); err == nil {
				val = strconv.FormatFloat(f*mult, 'f', -1, 64)
				j++
				if r.punct(j, ".") && toks[j-1].low == "тыс" {
					j++
				}
			}
		}
	}
	f := fact{kind: KindNumber, num: val}
	start, end := i, j
	// A currency before: "$5", "€ 5", "USD 5".
	if i > 0 {
		p := toks[i-1]
		if c, ok := currencySymbols[p.raw]; ok && p.kind == tPunct {
			f.unit, f.kind, start = c, KindMoney, i-1
		} else if u, ok := unitWords[p.low]; ok && p.kind == tWord && u.kind == KindMoney && shape(p.raw) == shapeAllCaps {
			f.unit, f.kind, start = u.concept, KindMoney, i-1
		}
	}
	if f.unit == "" {
		if u, k, ok := r.unitAfter(j); ok {
			f.unit, f.kind, end = u.concept, u.kind, k
		}
	}
	if f.kind == KindNumber && len(val) == 4 && val >= "1900" && val <= "2199" {
		f.kind = KindDate // a year
	}
	return r.add(f, start, end)
}

// yearWord skips "года", "г.", "г" after a year at token j.
func (r *reader) yearWord(j int) int {
	if j < len(r.toks) && r.toks[j].kind == tWord && yearWords[r.toks[j].low] {
		j++
		if r.toks[j-1].low == "г" || r.toks[j-1].low == "гг" {
			if r.punct(j, ".") {
				j++
			}
		}
	}
	return j
}

// unitAfter finds the unit of a number that ends before token j: "%", a
// currency sign, a unit word next to it ("10GB", "30-day", "30 days") or
// after at most two other words ("30 calendar days", "30 последних дней").
func (r *reader) unitAfter(j int) (unit, int, bool) {
	toks := r.toks
	if j >= len(toks) {
		return unit{}, j, false
	}
	t := toks[j]
	if t.kind == tPunct {
		if t.raw == "%" {
			return unit{"percent", KindPercent}, j + 1, true
		}
		if c, ok := currencySymbols[t.raw]; ok {
			return unit{c, KindMoney}, j + 1, true
		}
		if t.raw == "-" && attached(toks, j) && j+1 < len(toks) && toks[j+1].kind == tWord && attached(toks, j+1) {
			if u, ok := unitWords[toks[j+1].low]; ok {
				return u, j + 2, true
			}
		}
		return unit{}, j, false
	}
	if t.kind != tWord {
		return unit{}, j, false
	}
	if attached(toks, j) {
		if u, ok := unitWords[t.low]; ok {
			return u, j + 1, true
		}
		if u, ok := attachedUnits[t.low]; ok {
			return u, j + 1, true
		}
		return unit{}, j, false
	}
	for k := j; k < len(toks) && k < j+3; k++ {
		w := toks[k]
		if w.kind != tWord {
			break
		}
		if k > j && !(w.space || toks[k-1].kind == tPunct) {
			break
		}
		if u, ok := unitWords[w.low]; ok {
			return u, k + 1, true
		}
		if _, ok := cardinals[w.low]; ok || isStopword(w.low) || w.initial {
			break
		}
		// "per cent"
		if w.low == "per" && k+1 < len(toks) && toks[k+1].low == "cent" {
			return unit{"percent", KindPercent}, k + 2, true
		}
	}
	return unit{}, j, false
}

// cardinal reads number words: "thirty", "twenty-five", "сто двадцать",
// "five thousand".
func (r *reader) cardinal(i int) int {
	toks := r.toks
	total, cur, last := 0, 0, 0
	j := i
	words := 0
	for j < len(toks) && toks[j].kind == tWord {
		w := toks[j].low
		v, ok := cardinals[w]
		if mult, isMult := multipliers[w]; isMult && words > 0 && mult < 1e9 {
			total += max(cur, 1) * int(mult)
			cur, last = 0, int(mult)
			j++
			words++
			continue
		}
		if !ok {
			break
		}
		if words > 0 {
			hundred := w == "hundred" || w == "hundreds"
			switch {
			case hundred && last < 10:
			case last >= 100 && v < 100:
			case last >= 20 && last < 100 && last%10 == 0 && v < 10 && v > 0:
			default:
				goto done
			}
		}
		if w == "hundred" || w == "hundreds" {
			cur = max(cur, 1) * 100
		} else {
			cur += v
		}
		last = v
		if w == "hundred" || w == "hundreds" {
			last = 100
		}
		j++
		words++
		// "twenty-five", "one hundred and five", "сто и пять" is not Russian.
		if r.punct(j, "-") && j+1 < len(toks) && toks[j+1].kind == tWord && attached(toks, j+1) {
			if _, ok := cardinals[toks[j+1].low]; ok {
				j++
			}
		} else if j+1 < len(toks) && toks[j].kind == tWord && toks[j].low == "and" && last >= 100 {
			if _, ok := cardinals[toks[j+1].low]; ok {
				j++
			}
		}
	}
done:
	total += cur
	one := words == 1 && total == 1
	end := r.measure(i, j, strconv.Itoa(total))
	if one {
		r.out[len(r.out)-1].one = true
	}
	return end
}

// monthFirst reads a date that starts with its month: "May 15, 2024",
// "May 2024", "мае 2024", or a month alone ("in June", "в июне").
func (r *reader) monthFirst(i, m int) int {
	toks := r.toks
	t := toks[i]
	english := t.scr == scriptLat
	if english && !firstUpper(t.raw) {
		return i + 1
	}
	j := i + 1
	if r.punct(j, ".") && len(t.low) == 3 { // "Jan."
		j++
	}
	if j < len(toks) && toks[j].kind == tNum {
		n := toks[j].raw
		switch {
		case len(n) <= 2 && validDate(0, m, atoi(n)):
			d := atoi(n)
			k := j + 1
			if k < len(toks) && attached(toks, k) && toks[k].kind == tWord && ordinalSuffix[toks[k].low] {
				k++
			}
			y := 0
			if k < len(toks) && toks[k].kind == tPunct && toks[k].raw == "," && k+1 < len(toks) && toks[k+1].kind == tNum && len(toks[k+1].raw) == 4 {
				k++
			}
			if k < len(toks) && toks[k].kind == tNum && len(toks[k].raw) == 4 {
				y = atoi(toks[k].raw)
				k = r.yearWord(k + 1)
			}
			return r.add(fact{kind: KindDate, dates: []ymd{{y, m, d}}}, i, k)
		case len(n) == 4:
			return r.add(fact{kind: KindDate, dates: []ymd{{atoi(n), m, 0}}}, i, r.yearWord(j+1))
		}
	}
	if ambiguousMonth[t.low] || len(t.low) <= 3 {
		return i + 1
	}
	return r.add(fact{kind: KindDate, dates: []ymd{{0, m, 0}}}, i, i+1)
}

func validDate(y, m, d int) bool {
	if y != 0 && (y < 1000 || y > 2999) {
		return false
	}
	if m < 1 || m > 12 {
		return false
	}
	return d >= 0 && d <= 31
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s) && i < 9; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func isUnitOrSuffix(w string) bool {
	if _, ok := unitWords[w]; ok {
		return true
	}
	if _, ok := attachedUnits[w]; ok {
		return true
	}
	if _, ok := meridiem[w]; ok {
		return true
	}
	_, mult := multipliers[w]
	return ordinalSuffix[w] || mult || w == "k"
}
