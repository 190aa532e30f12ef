package store

import (
	"strings"

	"github.com/exocortex/exocortex/analysis"
)

// orTerms quotes each term as an FTS5 string and joins them with OR. Terms
// hold only letters, digits and marks, but quotes are doubled anyway so that
// no term can ever end the string early.
func orTerms(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// matchExpr builds the FTS5 MATCH expression for an analysed query; ""
// means it has nothing to match. User text never reaches FTS5 as syntax:
// the analyzer has already split it into words, each quoted here. The
// query's words are matched against the word columns (body, title, section)
// and its lemmas against the lemma columns (lemmas, heads).
func matchExpr(q analysis.Query) string {
	switch {
	case q.Empty():
		return ""
	case len(q.Terms) == 0:
		return "{body title section} : (" + orTerms(q.Words) + ")"
	case len(q.Words) == 0:
		return "{lemmas heads} : (" + orTerms(q.Terms) + ")"
	}
	return "({body title section} : (" + orTerms(q.Words) + ")) OR ({lemmas heads} : (" + orTerms(q.Terms) + "))"
}
