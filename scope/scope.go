// Package scope reads the scope a person types into a question: inline
// operators (tag:recipe, -tag:old, in:"Work notes", path:projects/atlas,
// doc:ID, lang:ru, after:2024-03-01, before:May, since:7d, until:…,
// sort:recent, and Russian тег:, в:, блокнот:, путь:, док:, язык:, после:,
// до:, с:, по:, сортировка:новые) and
// date phrases in English and Russian ("last month", "since March",
// "в прошлом месяце", "за последние две недели"), and turns them into a
// schemas.Scope and the text left to search. Pure logic: no retrieval.
//
// The rules:
//   - An operator is name:value with the value right after the colon;
//     names are case-free; a value with spaces is quoted ("…", «…», “…”).
//   - Anything else with a colon is words: "http://x", "10:30", "Note: x",
//     "C:\dir". An unknown name that is one edit from a known one ("tga:",
//     "pth:") is an error naming the known operators; another unknown name
//     ("foo:bar", "re:invent") stays words, with a note saying so.
//   - #tag is a word, not an operator: people search for "#recipe", "#1",
//     "issue #29" and SiYuan's "#tag#" as text; tag:recipe filters, and a
//     note says so when a #word is seen.
//   - after:D and since:D start with day D (as Gmail's after:); before:D
//     ends before D; until:D keeps D. The phrases read as spoken: "after
//     March" starts in April.
//   - A month name is a date only after a preposition ("in March", "с
//     марта", "до мая"): "March of the Penguins" is words. A month without
//     a year is its latest one that has begun.
//   - sort:recent (newest, latest; сортировка: with новые, новизна,
//     свежие) sets Scope.Recent: newer notes first, recency fused into the
//     ranking. A name as near common words as sort: is never suggested for
//     a misspelt name ("port:8080" stays words); "сорт:" (a variety, as in
//     "сорт:антоновка") is no operator.
//   - Every bound narrows: operators and phrases intersect. Phrases that
//     would empty the range are dropped, with a note.
package scope

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/schemas"
)

// Parse reads text's operators and date phrases as of now in loc (nil:
// now's location). clean is the text to search, operators and applied date
// phrases removed; notes tell the person what was read ("searching
// 2026-11-01 to 2026-11-30 (from \"this month\")"); err joins every problem
// (a malformed or misspelt operator, a bad date, an empty range).
func Parse(text string, now time.Time, loc *time.Location) (clean string, s schemas.Scope, notes []string, err error) {
	c := newCal(now, loc)
	buf := []byte(text)
	var r ranges
	var errs []error
	for i := 0; i < len(text); {
		ch, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(ch) {
			i += n
			continue
		}
		end, note, err := c.readToken(text, i, &s, &r, buf)
		if err != nil {
			errs = append(errs, err)
		}
		if note != "" {
			notes = append(notes, note)
		}
		i = end
	}
	phrases, phraseNotes := c.datePhrases(string(buf), &r)
	notes = append(notes, phraseNotes...)
	for _, p := range phrases {
		blank(buf, p.Start, p.End)
	}
	if !r.since.IsZero() {
		s.Since = r.since.Format(time.RFC3339)
	}
	if !r.until.IsZero() {
		s.Until = r.until.Format(time.RFC3339)
	}
	errs = append(errs, s.Validate())
	return strings.Join(strings.Fields(string(buf)), " "), s, notes, errors.Join(errs...)
}

// readToken reads the whitespace-delimited token at text[i:]: an operator
// is applied and blanked out of buf; a quoted phrase and other words stay.
func (c cal) readToken(text string, i int, s *schemas.Scope, r *ranges, buf []byte) (end int, note string, err error) {
	ch, n := utf8.DecodeRuneInString(text[i:])
	if closing, ok := quotePairs[ch]; ok {
		if j := strings.IndexRune(text[i+n:], closing); j >= 0 {
			return i + n + j + utf8.RuneLen(closing), "", nil
		}
	}
	wordEnd := i + strings.IndexFunc(text[i:]+" ", unicode.IsSpace)
	t, ok, err := scanToken(text, i)
	switch {
	case err != nil:
		return wordEnd, "", err
	case !ok:
		return wordEnd, hashNote(text[i:wordEnd]), nil
	}
	op, known := operators[t.name]
	if !known {
		if near := nearOperator(t.name); near != "" {
			return t.end, "", fmt.Errorf("unknown operator %q: did you mean %s:? Known: %s", t.name+":", near, Known)
		}
		return t.end, fmt.Sprintf("%q is searched as words: %q is not an operator (known: %s)", text[i:t.end], t.name+":", Known), nil
	}
	blank(buf, t.start, t.end)
	return t.end, "", c.apply(op, t, s, r)
}

// hashNote tells a person typing #recipe how to filter by the tag.
func hashNote(w string) string {
	tag, ok := strings.CutPrefix(w, "#")
	tag = strings.TrimRight(tag, "#,.;!?")
	if !ok || tag == "" || strings.IndexFunc(tag, unicode.IsLetter) < 0 {
		return ""
	}
	return fmt.Sprintf("%q is searched as a word; tag:%s keeps only notes tagged %s", w, tag, tag)
}

func blank(buf []byte, start, end int) {
	for k := start; k < end; k++ {
		buf[k] = ' '
	}
}

// ranges is the date range as operators and phrases narrow it.
type ranges struct{ since, until time.Time }

func (r *ranges) narrow(since, until time.Time) {
	if !since.IsZero() && since.After(r.since) {
		r.since = since
	}
	if !until.IsZero() && (r.until.IsZero() || until.Before(r.until)) {
		r.until = until
	}
}

func (r *ranges) addOperator(op int, p period) error {
	switch op {
	case opSince:
		if p.start.IsZero() {
			return errors.New("the period has no start")
		}
		r.narrow(p.start, time.Time{})
	case opBefore:
		if p.start.IsZero() {
			return errors.New("the period has no start")
		}
		r.narrow(time.Time{}, p.start)
	case opUntil:
		if p.end.IsZero() {
			return errors.New("the period has no end")
		}
		r.narrow(time.Time{}, p.end)
	}
	return nil
}

// datePhrases finds the date phrases of text and narrows r by them; when
// they would leave no time at all they are dropped and a note says why.
func (c cal) datePhrases(text string, r *ranges) ([]DateRange, []string) {
	found := c.findDates(text, quoteMask(text))
	if len(found) == 0 {
		return nil, nil
	}
	try := *r
	for _, d := range found {
		try.narrow(d.Since, d.Until)
	}
	if !try.since.IsZero() && !try.until.IsZero() && !try.since.Before(try.until) {
		return nil, []string{fmt.Sprintf("the date words %s leave no time between them: no date range taken from them", quoteAll(found))}
	}
	*r = try
	notes := make([]string, len(found))
	for i, d := range found {
		notes[i] = fmt.Sprintf("searching %s (from %q)", d, d.Phrase)
	}
	return found, notes
}

func quoteAll(ds []DateRange) string {
	q := make([]string, len(ds))
	for i, d := range ds {
		q[i] = fmt.Sprintf("%q", d.Phrase)
	}
	return strings.Join(q, " and ")
}
