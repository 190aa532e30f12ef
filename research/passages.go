package research

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// Passage picking without a language model: a document's blocks are cut
// into sentences, each sentence scored by the share of the question's words
// it holds (rarer words weigh more), and the best sentence of the best
// blocks kept with a little of its context.
const (
	// passageShort: a sentence shorter than this (in characters) is given
	// its neighbour as context.
	passageShort = 120
	// passageLong: a passage longer than this is cut to the window of the
	// sentence that matches best.
	passageLong = 420
	// passageTokens is that window's length in words.
	passageTokens = 60
	// minPassageWords: a block of fewer words is a label or a title, no passage.
	minPassageWords = 4
)

// qgroup is one content word of a question: its terms (lemmas, stems) and
// its weight.
type qgroup struct {
	terms []string
	w     float64
}

// matcher scores text against a question.
type matcher struct {
	a       *analysis.Analyzer
	groups  []qgroup
	total   float64
	numeric bool // the question asks for a number, a date or a time
	query   analysis.Query
}

// numericQuestion matches a question that asks for a number, a date, a time
// or an amount.
var numericQuestion = regexp.MustCompile(`(?i)(?:^|[^\pL])(how (many|much|often|long|old|quickly|fast|big)|when|what (year|date|time|day)|which (year|date|port|version)|сколько|когда|как (часто|долго|быстро)|каков\pL* (срок|размер|бюджет|объ[её]м)|в каком году|какого числа)`)

// terms are a text's distinct terms: lemmas and stems of its words that are
// not stopwords (the words themselves when the analyzer has no lemmas).
func terms(a *analysis.Analyzer, text string) []string {
	s := a.Lemmas(text)
	if s == "" {
		s = a.Words(text)
	}
	return strings.Fields(s)
}

func termSet(a *analysis.Analyzer, text string) map[string]bool {
	out := map[string]bool{}
	for _, t := range terms(a, text) {
		out[t] = true
	}
	return out
}

// newMatcher reads question into its content words; df, when given, counts
// in how many of n texts each term occurs, and rarer words weigh more.
func newMatcher(a *analysis.Analyzer, question string, df func(term string) int, n int) *matcher {
	m := &matcher{a: a, numeric: numericQuestion.MatchString(question), query: a.Query(question)}
	seen := map[string]bool{}
	for _, tok := range analysis.Tokenize(question) {
		if analysis.IsStopword(tok.Text) || seen[tok.Text] {
			continue
		}
		seen[tok.Text] = true
		ts := terms(a, tok.Text)
		if len(ts) == 0 {
			continue
		}
		w := 1.0
		if df != nil && n > 0 {
			d := 0
			for _, t := range ts {
				d = max(d, df(t))
			}
			w = math.Log(1 + float64(n+1)/(float64(d)+0.5))
		}
		m.groups = append(m.groups, qgroup{terms: ts, w: w})
		m.total += w
	}
	return m
}

// score is the weighted share of the question's words that the sentence
// holds (its block's other sentences and its section path give part
// credit), plus a little for a number when the question asks for one.
func (m *matcher) score(sentence, block, section map[string]bool, hasNumber bool) float64 {
	if m.total == 0 {
		return 0
	}
	got := 0.0
	for _, g := range m.groups {
		credit := 0.0
		for _, t := range g.terms {
			switch {
			case sentence[t]:
				credit = 1
			case block[t]:
				credit = max(credit, 0.6)
			case section[t]:
				credit = max(credit, 0.5)
			}
		}
		got += credit * g.w
	}
	s := got / m.total
	if m.numeric && hasNumber {
		s += 0.1
	}
	return s
}

// commandLike matches text that reads as a command line rather than prose:
// options ("--view", "-f") or a prompt.
var commandLike = regexp.MustCompile(`(?:^|\s)--?[a-z][\w-]*(?:\s|=|$)|^\s*[$#>]\s`)

// prose scales a score down for a passage that reads as a command line: an
// answer is a sentence before it is an example.
func prose(text string, score float64) float64 {
	if len(commandLike.FindAllStringIndex(text, 3)) >= 2 {
		return score * 0.7
	}
	return score
}

// PassageFinder picks, without a language model, the passages of a task's
// documents that answer its question: sentences, not headings or titles.
type PassageFinder struct {
	a        *analysis.Analyzer
	matchers []*matcher
}

// NewPassageFinder reads the questions (the sub-question first, then the
// research's question when it differs) against docs: a word that occurs in
// fewer of the documents' blocks weighs more.
func NewPassageFinder(a *analysis.Analyzer, docs []Document, questions ...string) *PassageFinder {
	df := map[string]int{}
	n := 0
	for _, d := range docs {
		for _, b := range d.Blocks() {
			n++
			for t := range termSet(a, analysis.PlainText(b.Text)) {
				df[t]++
			}
		}
	}
	p := &PassageFinder{a: a}
	var seen []string
	for _, q := range questions {
		q = strings.TrimSpace(q)
		if q == "" || slices.Contains(seen, q) {
			continue
		}
		seen = append(seen, q)
		p.matchers = append(p.matchers, newMatcher(a, q, func(t string) int { return df[t] }, n))
	}
	return p
}

// TranslatedQuestions are the question's translations that retrieval
// searched with, read from its reasons ("translated: en: <text>", also
// after a "retrieval: " prefix), so that a passage in the notes' language
// is matched against the question in that language.
func TranslatedQuestions(reasons []string) []string {
	var out []string
	for _, r := range reasons {
		r = strings.TrimPrefix(r, "retrieval: ")
		rest, ok := strings.CutPrefix(r, "translated: ")
		if !ok {
			continue
		}
		if _, text, ok := strings.Cut(rest, ": "); ok && strings.TrimSpace(text) != "" && !slices.Contains(out, strings.TrimSpace(text)) {
			out = append(out, strings.TrimSpace(text))
		}
	}
	return out
}

// ScoredPassage is a passage of one block and how well it answers.
type ScoredPassage struct {
	Block schemas.Context // the block: its id, chunk, title, section path and own text
	Text  string          // the sentences picked, in plain text
	Score float64         // 0..1.1: the weighted share of the question's words
}

// Passages returns doc's best passages, at most n, best first: for each
// block that is not a heading or a title, the sentence that matches the
// questions best, with its neighbour when it is short; blocks that hold
// none of the question's words, and passages far weaker than the
// document's best, are left out.
func (p *PassageFinder) Passages(doc Document, n int) []ScoredPassage {
	var out []ScoredPassage
	for _, b := range doc.Blocks() {
		if isHeadingBlock(b) {
			continue
		}
		plain := strings.TrimSpace(analysis.PlainText(b.Text))
		if len(strings.Fields(plain)) < minPassageWords || isTitle(plain, b) {
			continue
		}
		sp, ok := p.best(b, plain)
		if ok {
			out = append(out, sp)
		}
	}
	slices.SortStableFunc(out, func(x, y ScoredPassage) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return 0
	})
	// A passage far weaker than the document's best answers less than it.
	for i, sp := range out {
		if sp.Score < relEvidenceScore*out[0].Score {
			out = out[:i]
			break
		}
	}
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// sectionOnlyScore is the score of a sentence that holds none of the
// question's words in a block whose section path holds them all (the
// section's credit, 0.5, for every word).
const sectionOnlyScore = 0.5

// best picks the block's sentence that matches best, with its context.
func (p *PassageFinder) best(b schemas.Context, plain string) (ScoredPassage, bool) {
	sents := Sentences(plain)
	if len(sents) == 0 || len(p.matchers) == 0 {
		return ScoredPassage{}, false
	}
	block := termSet(p.a, plain)
	section := termSet(p.a, b.Title+" "+strings.Join(b.SectionPath, " "))
	scores := make([]float64, len(sents))
	own := make([]float64, len(sents)) // without the block's and the section's credit
	bestAt := 0
	for i, s := range sents {
		set := termSet(p.a, s)
		num := strings.ContainsAny(s, "0123456789")
		for _, m := range p.matchers {
			scores[i] = max(scores[i], m.score(set, block, section, num))
			own[i] = max(own[i], m.score(set, nil, nil, num))
		}
		if scores[i] > scores[bestAt] {
			bestAt = i
		}
	}
	scores[bestAt] = prose(sents[bestAt], scores[bestAt])
	// A sentence must hold a word of the question, unless the block sits
	// under a title or heading that holds every one of them (the note
	// "Birds" answers "What do birds do?" in sentences about crows).
	if own[bestAt] <= 0 && scores[bestAt] < sectionOnlyScore {
		return ScoredPassage{}, false
	}
	lo, hi := bestAt, bestAt+1
	if utf8.RuneCountInString(sents[bestAt]) < passageShort && len(sents) > 1 {
		switch {
		case bestAt+1 < len(sents) && (bestAt == 0 || own[bestAt+1] >= own[bestAt-1]):
			hi++
		case bestAt > 0:
			lo--
		}
	}
	text := strings.Join(sents[lo:hi], " ")
	if utf8.RuneCountInString(text) > passageLong {
		text = sents[bestAt]
		if utf8.RuneCountInString(text) > passageLong {
			var q analysis.Query
			for _, m := range p.matchers {
				q = m.query
				break
			}
			text = p.a.Snippet(text, q, analysis.SnippetOptions{Tokens: passageTokens, Ellipsis: "…"})
		}
	}
	return ScoredPassage{Block: b, Text: strings.TrimSpace(text), Score: scores[bestAt]}, true
}

// Fact is the passage as an evidence fact citing its block.
func (sp ScoredPassage) Fact(id string) schemas.Fact {
	b := sp.Block
	return schemas.Fact{ID: id, Text: sp.Text, BlockIDs: []string{b.BlockID}, DocID: b.DocID,
		Citations: []schemas.Citation{{BlockID: b.BlockID, ChunkID: b.ChunkID, DocID: b.DocID, Title: b.Title,
			SectionPath: b.SectionPath, Quote: sp.Text, Link: answer.Link(b.BlockID, b.Path)}}}
}

// isHeadingBlock tells a heading block by the marks its text opens with.
func isHeadingBlock(b schemas.Context) bool {
	t := strings.TrimSpace(b.Text)
	return strings.HasPrefix(t, "#") && headingMark.MatchString(t)
}

var headingMark = regexp.MustCompile(`^#{1,6}(\s|$)`)

// isTitle tells a block that only repeats its document's title or a
// heading of its section path.
func isTitle(plain string, b schemas.Context) bool {
	key := foldKey(plain)
	if key == "" {
		return true
	}
	for _, t := range append([]string{b.Title}, b.SectionPath...) {
		if foldKey(t) == key {
			return true
		}
	}
	return false
}

// foldKey is text in lower case with only its letters and digits, spaced.
func foldKey(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// Sentences cuts plain text into sentences: after '.', '!', '?' or '…'
// followed by a space and not inside a number or an abbreviation such as
// "e.g.", and at line breaks. Empty pieces are dropped.
func Sentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		start := 0
		for i := 0; i < len(line); {
			r, size := utf8.DecodeRuneInString(line[i:])
			i += size
			if !strings.ContainsRune(".!?…", r) {
				continue
			}
			for i < len(line) {
				r2, size2 := utf8.DecodeRuneInString(line[i:])
				if !strings.ContainsRune(".!?…\"»”)", r2) {
					break
				}
				i += size2
			}
			if i < len(line) && line[i] != ' ' {
				continue
			}
			if r == '.' && abbreviation(line[start:i]) {
				continue
			}
			if s := strings.TrimSpace(line[start:i]); s != "" {
				out = append(out, s)
			}
			start = i
		}
		if s := strings.TrimSpace(line[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// abbreviation tells a piece ending in an abbreviation's full stop ("e.g.",
// "i.e.", "т.е.", "напр.", "Mr."; "etc." and "т.д." end sentences).
func abbreviation(piece string) bool {
	f := strings.Fields(piece)
	if len(f) == 0 {
		return false
	}
	w := strings.ToLower(f[len(f)-1])
	switch w {
	case "e.g.", "i.e.", "vs.", "mr.", "mrs.", "dr.", "no.", "fig.", "т.е.", "т.к.", "напр.", "см.", "г.", "гг.":
		return true
	}
	return false
}
