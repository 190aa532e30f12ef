// Package answer holds what the answer stage needs to trust a language
// model's answer: the check of every inline citation against the contexts it
// was given.
package answer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// MinOverlap is the share of a sentence's content words (lemmas) that the
// cited context must hold for the citation to count as support when the
// sentence quotes nothing.
const MinOverlap = 0.5

// Drop reasons.
const (
	DropNotRetrieved = "not_retrieved" // the marker names no context the model was given
	DropUnsupported  = "unsupported"   // the context does not hold the quote or the sentence's words
)

// Dropped is a citation that did not survive verification.
type Dropped struct {
	Marker   string `json:"marker"`
	Sentence string `json:"sentence"`
	Reason   string `json:"reason"`
}

// Verified is an answer after its citations were checked.
type Verified struct {
	// Text is the answer with dropped markers removed.
	Text string
	// Citations are the supported ones, each block once, in order of first use.
	Citations []schemas.Citation
	Dropped   []Dropped
	// Flagged are sentences that cited something and kept no citation: claims
	// the notes do not support.
	Flagged []string
	// Coverage is the share of the answer's sentences that keep a citation.
	Coverage float64
}

// marker matches [1], [1, 3] and [20210808180117-abc1234] style citations.
var marker = regexp.MustCompile(`\[((?:\d{1,3}|\d{14}-[0-9a-z]{7}|[A-Za-z0-9_#:.-]{6,})(?:\s*,\s*(?:\d{1,3}|\d{14}-[0-9a-z]{7}|[A-Za-z0-9_#:.-]{6,}))*)\]`)

// quoted matches text in «», “” or "" quotes inside a sentence.
var quoted = regexp.MustCompile(`«([^»]{3,})»|“([^”]{3,})”|"([^"]{3,})"`)

// Verify checks every citation of answer against the contexts: the marker
// must name one of them (by its 1-based number or a block id it covers), and
// that context must support the sentence: a quote in the sentence found in
// the context after normalisation, or else at least MinOverlap of the
// sentence's content lemmas present in it. Unsupported citations are
// removed from the text and reported; a sentence left without any is flagged.
func Verify(a *analysis.Analyzer, text string, contexts []schemas.Context) Verified {
	byBlock := map[string]int{}
	for i, c := range contexts {
		for _, b := range c.BlockIDs {
			byBlock[b] = i
		}
		if c.BlockID != "" {
			byBlock[c.BlockID] = i
		}
	}
	lemmaSets := make([]map[string]bool, len(contexts))
	var out Verified
	seen := map[string]bool{}
	var b strings.Builder
	sentences := splitSentences(text)
	cited := 0
	for _, s := range sentences {
		locs := marker.FindAllStringSubmatchIndex(s, -1)
		if len(locs) == 0 {
			b.WriteString(s)
			continue
		}
		claim := strings.TrimSpace(marker.ReplaceAllString(s, ""))
		kept := 0
		last := 0
		for _, loc := range locs {
			before := s[last:loc[0]]
			last = loc[1]
			var keep []string
			for _, ref := range strings.Split(s[loc[2]:loc[3]], ",") {
				ref = strings.TrimSpace(ref)
				i, ok := resolve(ref, len(contexts), byBlock)
				if !ok {
					out.Dropped = append(out.Dropped, Dropped{Marker: ref, Sentence: claim, Reason: DropNotRetrieved})
					continue
				}
				if lemmaSets[i] == nil {
					lemmaSets[i] = lemmaSet(a, contexts[i].Text)
				}
				quote, ok := support(a, claim, contexts[i].Text, lemmaSets[i])
				if !ok {
					out.Dropped = append(out.Dropped, Dropped{Marker: ref, Sentence: claim, Reason: DropUnsupported})
					continue
				}
				keep = append(keep, ref)
				c := contexts[i]
				if !seen[c.BlockID] {
					seen[c.BlockID] = true
					out.Citations = append(out.Citations, schemas.Citation{BlockID: c.BlockID, ChunkID: c.ChunkID, DocID: c.DocID,
						Title: c.Title, SectionPath: c.SectionPath, Quote: quote, Link: Link(c.BlockID, c.Path)})
				}
			}
			if len(keep) > 0 {
				kept++
				b.WriteString(before + "[" + strings.Join(keep, ", ") + "]")
			} else {
				// A removed marker leaves no space before the punctuation.
				b.WriteString(strings.TrimRight(before, " "))
			}
		}
		if kept == 0 {
			out.Flagged = append(out.Flagged, claim)
		} else {
			cited++
		}
		b.WriteString(s[last:])
	}
	out.Text = strings.TrimSpace(b.String())
	if n := countClaims(sentences); n > 0 {
		out.Coverage = float64(cited) / float64(n)
	}
	return out
}

func resolve(ref string, n int, byBlock map[string]int) (int, bool) {
	if k, err := strconv.Atoi(ref); err == nil {
		return k - 1, k >= 1 && k <= n
	}
	i, ok := byBlock[ref]
	return i, ok
}

// support reports whether context supports the claim, and the quote that
// shows it: the claim's own quote when the context holds it, else the
// context's sentence sharing the most of the claim's lemmas.
func support(a *analysis.Analyzer, claim, context string, ctxLemmas map[string]bool) (string, bool) {
	for _, m := range quoted.FindAllStringSubmatch(claim, -1) {
		q := firstNonEmpty(m[1:]...)
		if q != "" && strings.Contains(normalize(context), normalize(q)) {
			return q, true
		}
	}
	words := contentWords(a, claim)
	if len(words) == 0 {
		return "", false
	}
	hit := 0
	for _, readings := range words {
		for _, r := range readings {
			if ctxLemmas[r] {
				hit++
				break
			}
		}
	}
	if float64(hit)/float64(len(words)) < MinOverlap {
		return "", false
	}
	return bestSentence(a, context, words), true
}

// contentWords returns each non-stopword of text with its readings (lemmas).
func contentWords(a *analysis.Analyzer, text string) [][]string {
	var out [][]string
	for _, t := range analysis.Tokenize(text) {
		if analysis.IsStopword(analysis.Fold(t.Text)) {
			continue
		}
		if r := strings.Fields(a.Lemmas(t.Text)); len(r) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func lemmaSet(a *analysis.Analyzer, text string) map[string]bool {
	set := map[string]bool{}
	for _, l := range strings.Fields(a.Lemmas(text)) {
		set[l] = true
	}
	return set
}

// bestSentence is the context's sentence that holds the most claim words.
func bestSentence(a *analysis.Analyzer, context string, words [][]string) string {
	best, bestHits := "", -1
	for _, s := range splitSentences(context) {
		set := lemmaSet(a, s)
		hits := 0
		for _, readings := range words {
			for _, r := range readings {
				if set[r] {
					hits++
					break
				}
			}
		}
		if hits > bestHits {
			best, bestHits = strings.TrimSpace(s), hits
		}
	}
	return best
}

// normalize folds case and ё, and keeps letters and digits separated by
// single spaces, so a quote matches whatever its punctuation and spacing.
func normalize(s string) string {
	s = analysis.Fold(s)
	var b strings.Builder
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// splitSentences cuts text after '.', '!', '?' or a newline followed by
// space, keeping every byte (the pieces concatenate back to text), and keeps
// a citation marker that follows the full stop with its sentence.
func splitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != '!' && c != '?' && c != '\n' {
			continue
		}
		j := i + 1
		// "claim. [2] Next": the marker belongs to the claim.
		if k := skipSpaces(text, j); k < len(text) && text[k] == '[' {
			if loc := marker.FindStringIndex(text[k:]); loc != nil && loc[0] == 0 {
				j = k + loc[1]
			}
		}
		if j < len(text) && text[j] != ' ' && text[j] != '\n' {
			continue // "3.14", "e.g." inside a word
		}
		end := skipSpaces(text, j)
		out = append(out, text[start:end])
		start, i = end, end-1
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') {
		i++
	}
	return i
}

func countClaims(sentences []string) int {
	n := 0
	for _, s := range sentences {
		if strings.TrimSpace(marker.ReplaceAllString(s, "")) != "" {
			n++
		}
	}
	return n
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

var siyuanBlock = regexp.MustCompile(`^\d{14}-[0-9a-z]{7}$`)

// Link opens a cited block: siyuan://blocks/<id> for a SiYuan block, a file
// URL for a note on disk, nothing otherwise.
func Link(blockID, path string) string {
	if siyuanBlock.MatchString(blockID) {
		return "siyuan://blocks/" + blockID
	}
	if strings.HasPrefix(path, "/") {
		return fmt.Sprintf("file://%s", path)
	}
	return ""
}
