package answer

import (
	"fmt"
	"strings"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// MarkNewer marks the newer of two cited sources that disagree, and
// returns the sentences that say so in lang ("" when none disagree).
//
// Two citations disagree when, conservatively and without a language
// model: they come from two notes whose dates are both known and differ,
// their quotes are about one subject (more than half of the shorter quote's
// content words, and two of them when it has two, numbers aside) and give
// different values of one kind for it (ValuesDiffer: "5000 EUR" and "7000
// EUR", "March 3" and "April 10"). The same value in both, a source
// without a date, or two blocks of one note are never marked. Any two
// citations of the answer are compared, not only those of one sentence:
// the verifier keeps a sentence only when each of its blocks states all of
// it, so two different values are always cited by two sentences.
//
// The newer note's citation gets Recency "newer", the other "older"; a
// source older than any source it disagrees with is "older", so of three
// the newest alone is "newer".
func MarkNewer(a *analysis.Analyzer, cites []schemas.Citation, lang string) string {
	type pair struct{ old, new int }
	var pairs []pair
	for i := range cites {
		for j := i + 1; j < len(cites); j++ {
			ti, tj, ok := datedApart(cites[i], cites[j])
			if !ok || !disagree(a, cites[i].Quote, cites[j].Quote) {
				continue
			}
			if ti.Before(tj) {
				pairs = append(pairs, pair{i, j})
			} else {
				pairs = append(pairs, pair{j, i})
			}
		}
	}
	if len(pairs) == 0 {
		return ""
	}
	for _, p := range pairs {
		cites[p.old].Recency = schemas.RecencyOlder
	}
	var notes []string
	for _, p := range pairs {
		if cites[p.new].Recency == "" {
			cites[p.new].Recency = schemas.RecencyNewer
		}
		notes = append(notes, newerNote(lang, cites[p.old], cites[p.new], p.old, p.new))
	}
	return strings.Join(notes, " ")
}

// datedApart gives the two sources' note times when both are known, the
// notes differ and so do their times.
func datedApart(x, y schemas.Citation) (tx, ty time.Time, ok bool) {
	if x.DocID != "" && x.DocID == y.DocID {
		return tx, ty, false
	}
	tx, okx := citationTime(x.Updated)
	ty, oky := citationTime(y.Updated)
	return tx, ty, okx && oky && !tx.Equal(ty)
}

func citationTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// disagree tells whether two quotes are about one subject and give
// different values of one kind for it (MarkNewer).
func disagree(a *analysis.Analyzer, x, y string) bool {
	if strings.TrimSpace(x) == "" || strings.TrimSpace(y) == "" {
		return false
	}
	xs, ys := words(SubjectStems(x)), words(SubjectStems(y))
	n := 0
	for s := range xs {
		if ys[s] {
			n++
		}
	}
	if least := min(len(xs), len(ys)); n == 0 || 2*n <= least || n < min(2, least) {
		return false
	}
	return ValuesDiffer(a, x, y)
}

// words are the stems without digits: the subject, not its values.
func words(stems map[string]bool) map[string]bool {
	for s := range stems {
		if strings.ContainsAny(s, "0123456789") {
			delete(stems, s)
		}
	}
	return stems
}

// newerNote says which of two disagreeing sources is newer, in lang:
// "Sources [1] (2024-03-12) and [2] (2024-04-02) disagree; [2] is newer."
func newerNote(lang string, older, newer schemas.Citation, oi, ni int) string {
	o, n := citeNumber(older, oi), citeNumber(newer, ni)
	od, nd := SourceDate(older.Updated), SourceDate(newer.Updated)
	first, fd, second, sd := o, od, n, nd
	if ni < oi {
		first, fd, second, sd = n, nd, o, od
	}
	if isRussian(lang) {
		return fmt.Sprintf("Источники [%d] (%s) и [%d] (%s) расходятся; [%d] новее.", first, fd, second, sd, n)
	}
	return fmt.Sprintf("Sources [%d] (%s) and [%d] (%s) disagree; [%d] is newer.", first, fd, second, sd, n)
}

func citeNumber(c schemas.Citation, i int) int {
	if c.Number > 0 {
		return c.Number
	}
	return i + 1
}

// SourceLabel is how the doors end a source's line: its date and, when it
// disagrees with another source, whether it is the newer ("2026-03-02,
// newer"; "2026-03-02, новее" in Russian), "" when it has neither.
func SourceLabel(c schemas.Citation, lang string) string {
	parts := []string{}
	if d := SourceDate(c.Updated); d != "" {
		parts = append(parts, d)
	}
	if w := RecencyWord(c.Recency, lang); w != "" {
		parts = append(parts, w)
	}
	return strings.Join(parts, ", ")
}

// RecencyWord is "newer" or "older" in lang ("новее", "старее"), "" for
// no recency.
func RecencyWord(recency, lang string) string {
	ru := isRussian(lang)
	switch {
	case recency == schemas.RecencyNewer && ru:
		return "новее"
	case recency == schemas.RecencyNewer:
		return "newer"
	case recency == schemas.RecencyOlder && ru:
		return "старее"
	case recency == schemas.RecencyOlder:
		return "older"
	}
	return ""
}
