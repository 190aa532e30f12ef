package claimcheck

import "strings"

// Value is one number, date, time, quantity, percentage, version or amount
// of money that a text states, read as Check reads a claim's: "15 May
// 2024", "2024-05-15" and "15 мая 2024" are one date, "1,000" and "1000"
// one number, "30 days" and "30 дней" one quantity.
type Value struct {
	// Kind is KindNumber, KindDate, KindTime, KindQuantity, KindPercent,
	// KindVersion or KindMoney.
	Kind string
	// Item is the value as the text writes it.
	Item string
	// Unit is the unit concept of a quantity, percentage or amount of
	// money ("day", "percent", "usd"), the same in both languages; "" for
	// the other kinds.
	Unit string
	// Start and End are Item's byte offsets in the text given to Values.
	Start, End int

	f fact
}

// Values returns the values text states, in the order it writes them.
// Links and block ids state none; neither does the number 1 written as a
// word ("one of"), nor a word joined to digits ("S3", "x64": a name).
func Values(text string) []Value {
	clean := blankOut(text)
	facts, _ := readFacts(clean, lex(clean))
	var out []Value
	at := 0
	for _, f := range facts {
		k := strings.Index(clean[at:], f.item)
		if k < 0 {
			continue
		}
		start := at + k
		at = start + len(f.item)
		if f.kind == KindName || f.one {
			continue
		}
		out = append(out, Value{Kind: f.kind, Item: f.item, Unit: f.unit, Start: start, End: at, f: f})
	}
	return out
}

// blankOut is cleanEvidence keeping every byte's place: links and block ids
// become spaces of their length.
func blankOut(s string) string {
	blank := func(m string) string { return strings.Repeat(" ", len(m)) }
	if strings.Contains(s, "://") || strings.Contains(s, "www.") {
		s = urlRE.ReplaceAllStringFunc(s, blank)
	}
	if hasIDLike(s) {
		s = blockIDRE.ReplaceAllStringFunc(s, blank)
	}
	return s
}

// Comparable reports whether v and w measure the same kind of thing: the
// same kind and unit (a year and a full date are both dates).
func (v Value) Comparable(w Value) bool {
	return v.Kind == w.Kind && v.Unit == w.Unit
}

// Same reports whether v and w state one value: comparable and equal after
// normalising their form. A date that lacks a part ("15 May", "2024") is the
// same as one that has it and agrees on the parts both write.
func (v Value) Same(w Value) bool {
	if !v.Comparable(w) {
		return false
	}
	switch v.Kind {
	case KindDate:
		for _, a := range v.f.readings() {
			for _, b := range w.f.readings() {
				if sameDate(a, b) {
					return true
				}
			}
		}
		return false
	case KindTime:
		return v.f.tm.h == w.f.tm.h && v.f.tm.m == w.f.tm.m && (!v.f.tm.hasS || !w.f.tm.hasS || v.f.tm.s == w.f.tm.s)
	}
	return v.f.num == w.f.num
}

// readings are a date's possible readings; a year alone is a date with
// only its year.
func (f fact) readings() []ymd {
	if len(f.dates) > 0 {
		return f.dates
	}
	if y := atoi(f.num); y > 0 {
		return []ymd{{y: y}}
	}
	return nil
}

// sameDate reports whether the parts a and b both write agree, and they
// share at least one.
func sameDate(a, b ymd) bool {
	shared := 0
	for _, p := range [3][2]int{{a.y, b.y}, {a.m, b.m}, {a.d, b.d}} {
		if p[0] == 0 || p[1] == 0 {
			continue
		}
		if p[0] != p[1] {
			return false
		}
		shared++
	}
	return shared > 0
}
