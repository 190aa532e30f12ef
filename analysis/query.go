package analysis

import "strings"

// MaxQueryTerms bounds the words, and separately the lemma terms, of one
// query; the rest of a very long query is dropped (BM25 over hundreds of
// OR-ed terms costs time and adds nothing).
const MaxQueryTerms = 64

// Query is user text analysed for search.
type Query struct {
	// Words are the distinct words that are not stopwords (or the
	// stopwords, when that is all there is), in order and normal form, for
	// the body, title and section columns.
	Words []string
	// Terms are the distinct lemmas or stems of Words, every reading of an
	// ambiguous word included, for the lemma column. Empty in Plain mode.
	Terms []string

	// group maps each word and term to its word's number, so a snippet
	// counts a word matched in two forms once.
	group map[string]int
}

// Empty reports whether the query has nothing to search for.
func (q Query) Empty() bool { return len(q.Words) == 0 && len(q.Terms) == 0 }

// Query analyses user text for search. Any text is valid: operators and
// punctuation are separators like everywhere else.
func (a *Analyzer) Query(text string) Query {
	toks := Tokenize(text)
	q := Query{group: map[string]int{}}
	seen := map[string]bool{}
	var stops []string
	for i, t := range toks {
		if seen[t.Text] || isNumberEnding(toks, i) {
			continue
		}
		seen[t.Text] = true
		if IsStopword(t.Text) {
			stops = append(stops, t.Text)
		} else {
			q.Words = append(q.Words, t.Text)
		}
	}
	if len(q.Words) == 0 {
		q.Words = stops
	}
	if len(q.Words) > MaxQueryTerms {
		q.Words = q.Words[:MaxQueryTerms]
	}
	if a.mode == Plain {
		return q
	}
	clear(seen)
	a.eachTerms(toks, func(i, _ int, ts []string) {
		g, ok := q.group[toks[i].Text]
		if !ok {
			g = len(q.group) + 1
			q.group[toks[i].Text] = g
		}
		for _, t := range ts {
			if !seen[t] && len(q.Terms) < MaxQueryTerms {
				seen[t] = true
				q.Terms = append(q.Terms, t)
				if _, ok := q.group[t]; !ok {
					q.group[t] = g
				}
			}
		}
	})
	return q
}

// SnippetOptions shape a snippet.
type SnippetOptions struct {
	// Tokens is the window's length in words.
	Tokens int
	// MarkStart and MarkEnd surround each matched word; Ellipsis marks text
	// cut at either end.
	MarkStart, MarkEnd, Ellipsis string
}

// Snippet returns the window of text that matches the query best (the most
// distinct query terms, then the most matches), cut from the original text
// with its case, ё and punctuation, matched words between the marks.
func (a *Analyzer) Snippet(text string, q Query, o SnippetOptions) string {
	toks := Tokenize(text)
	if len(toks) == 0 {
		return ""
	}
	// hit[i] is the id (1-based) of a query word or term token i matches.
	hit := make([]int, len(toks))
	ids := map[string]int{}
	for w, g := range q.group {
		ids[w] = g
	}
	for _, w := range append(q.Words[:len(q.Words):len(q.Words)], q.Terms...) {
		if _, ok := ids[w]; !ok {
			ids[w] = len(q.group) + len(ids) + 1
		}
	}
	for i, t := range toks {
		hit[i] = ids[t.Text]
	}
	if len(q.Terms) > 0 {
		a.eachTerms(toks, func(i, n int, ts []string) {
			for _, term := range ts {
				if id := ids[term]; id > 0 {
					for k := i; k < i+n; k++ {
						if hit[k] == 0 {
							hit[k] = id
						}
					}
					return
				}
			}
		})
	}

	size := max(o.Tokens, 1)
	best, bestDistinct, bestHits := 0, -1, -1
	counts := map[int]int{}
	for s := 0; s == 0 || s+size <= len(toks); s++ {
		clear(counts)
		hits := 0
		for _, h := range hit[s:min(s+size, len(toks))] {
			if h > 0 {
				counts[h]++
				hits++
			}
		}
		if len(counts) > bestDistinct || len(counts) == bestDistinct && hits > bestHits {
			best, bestDistinct, bestHits = s, len(counts), hits
		}
	}
	end := min(best+size, len(toks))

	var b strings.Builder
	if best > 0 {
		b.WriteString(o.Ellipsis)
	}
	pos := toks[best].Start
	for i := best; i < end; i++ {
		t := toks[i]
		writeSpaced(&b, text[pos:t.Start])
		// Each word is marked on its own; the parts of a hyphenated word
		// that matched as one ("[Санкт-Петербурга]") together.
		if hit[i] > 0 && (i == best || hit[i-1] == 0 || !t.Hyphen) {
			b.WriteString(o.MarkStart)
		}
		b.WriteString(text[t.Start:t.End])
		if hit[i] > 0 && (i == end-1 || hit[i+1] == 0 || !toks[i+1].Hyphen) {
			b.WriteString(o.MarkEnd)
		}
		pos = t.End
	}
	if end < len(toks) {
		b.WriteString(o.Ellipsis)
	}
	return b.String()
}

// writeSpaced writes the text between two words with each run of white
// space as one space.
func writeSpaced(b *strings.Builder, s string) {
	space := false
	for _, r := range s {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
}
