package claimcheck

import "strings"

// Words that open a new clause wherever they stand, and words that do so
// after a comma.
var (
	clauseWords = wordSet(`but however except unless which whereas although though because while
		но однако кроме если хотя зато причем поскольку ибо
		который которая которое которые которого которой котором которому которую которым которыми которых`)
	commaClauseWords = wordSet(`and so or where when since then
		а и или где когда так поэтому тогда`)
)

// coordinators are left out of a clause's text: "but remote edits..." is
// reported as "remote edits..."; "which", "если", "который" stay.
var coordinators = wordSet("but however но однако")

// clause is a span of claim tokens [i, j).
type clause struct{ i, j int }

// splitClauses cuts the claim's tokens into clauses at ; — – ( ) and a
// spaced hyphen, at sentence ends, before "but", "which", "но", "если",
// "который"... and before ", and", ", а", ", и"...
func splitClauses(toks []token) []clause {
	var out []clause
	start := 0
	cut := func(k int) {
		if k > start {
			out = append(out, clause{start, k})
		}
		start = k
	}
	for k, t := range toks {
		switch t.kind {
		case tPunct:
			switch t.raw {
			case ";", "—", "–", "(", ")", "!", "?", "…":
				cut(k)
			case ".":
				if k+1 >= len(toks) || toks[k+1].space {
					cut(k)
				}
			case "-":
				if t.space && k+1 < len(toks) && toks[k+1].space {
					cut(k)
				}
			case ",":
				if k+1 < len(toks) && toks[k+1].kind == tWord && commaClauseWords[toks[k+1].low] {
					cut(k)
				}
			}
		case tWord:
			if clauseWords[t.low] && k > 0 {
				cut(k)
			}
		}
	}
	cut(len(toks))
	return out
}

// missingClauses returns the claim's clauses that the evidence does not
// hold: a clause with n >= 3 content words needs max(2, ⌈n/2⌉) of their
// lemmas in the evidence, one with 1 or 2 needs all. A claim of a single
// clause is not judged here: its overall overlap is the verifier's.
func (e *Evidence) missingClauses(text string, toks []token, used []bool) []string {
	clauses := splitClauses(toks)
	var out []string
	judged := 0
	type verdict struct {
		c  clause
		ok bool
	}
	var vs []verdict
	for _, c := range clauses {
		n, hits := 0, 0
		seen := map[string]bool{}
		for k := c.i; k < c.j; k++ {
			t := toks[k]
			if t.kind != tWord || used[k] || seen[t.low] || isStopword(t.low) || negationWords[t.low] ||
				fillerWords[t.low] || connectives[t.low] || clauseWords[t.low] {
				continue
			}
			seen[t.low] = true
			rs := readings(e.a, t.low)
			if len(rs) == 0 {
				continue
			}
			n++
			if e.words[t.low] {
				hits++
				continue
			}
			for _, r := range rs {
				if e.lemmas[r] {
					hits++
					break
				}
			}
		}
		if n == 0 {
			continue
		}
		judged++
		need := n
		if n > 2 {
			need = max(2, (n+1)/2)
		}
		vs = append(vs, verdict{c, hits >= need})
	}
	if judged < 2 {
		return nil
	}
	for _, v := range vs {
		if !v.ok {
			out = append(out, clauseText(text, toks, v.c))
		}
	}
	return out
}

// clauseText is the clause as written, without the punctuation around it
// and the connective that opens it ("and", "but", "но").
func clauseText(text string, toks []token, c clause) string {
	i, j := c.i, c.j-1
	for i < j && (toks[i].kind == tPunct || toks[i].kind == tWord && (commaClauseWords[toks[i].low] || coordinators[toks[i].low])) {
		i++
	}
	for j > i && toks[j].kind == tPunct {
		j--
	}
	return strings.TrimSpace(text[toks[i].start:toks[j].end])
}
