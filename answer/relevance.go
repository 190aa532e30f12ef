package answer

import (
	"math"
	"strings"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// questionWords are words of a question that ask rather than say what is
// asked about ("how do I", "можно ли", "what is the way to").
var questionWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`can could may might should would must shall do does did doing done get way ways
		use used using make one ones possible able there here kind type much many
		уметь мочь делать сделать позволять
		можно ли нужно надо какой какая какое какие каким какими каков как сколько где куда откуда когда почему зачем
		чем что кто который которая которое которые чей чья чьё чьи ли`) {
		questionWords[w] = true
	}
}

// Relevance is the weighted share of the question's content words that the
// cited notes hold: rare words (held by few of the retrieved contexts, or by
// none) weigh the most, so an answer that quotes a note about "Windows" to
// a question about "Windows XP" scores low. questions are the question as
// asked and its other forms (standalone, translations); the best counts.
// cited are the contexts whose blocks the answer cites; all are every
// context the model was given. Forms in another language than the cited
// notes are left out; when none is left (a Russian question over English
// notes without its translation) the answer is not judged: 1.
// missing are the words of the best form that the cited notes lack.
func Relevance(a *analysis.Analyzer, questions []string, cited, all []schemas.Context) (score float64, missing []string) {
	sets := make([]map[string]bool, len(all))
	for i, c := range all {
		sets[i] = lemmaSet(a, contextText(c))
	}
	citedSet := map[string]bool{}
	for _, c := range cited {
		for l := range lemmaSet(a, contextText(c)) {
			citedSet[l] = true
		}
	}
	langs := map[string]bool{}
	for _, c := range cited {
		langs[c.Lang] = true
	}
	best := -1.0
	judged := false
	for _, q := range questions {
		if l := lang.DetectLang(q); l != "" && !langs[""] && !langs[l] {
			continue // another language than the notes: no word can match
		}
		judged = true
		var total, held float64
		var lack []string
		for _, w := range askedWords(a, q) {
			readings := w.readings
			df := 0
			for _, s := range sets {
				if holdsAny(s, readings) {
					df++
				}
			}
			weight := math.Log(1 + (float64(len(sets))+1)/(float64(df)+0.5))
			total += weight
			if holdsAny(citedSet, readings) {
				held += weight
			} else {
				lack = append(lack, w.text)
			}
		}
		if total > 0 && held/total > best {
			best, missing = held/total, lack
		}
	}
	if !judged {
		return 1, nil // no form of the question in the notes' language: not judged
	}
	return max(best, 0), missing
}

// citedContexts are the contexts that hold the cited blocks.
func citedContexts(cits []schemas.Citation, ctxs []schemas.Context) []schemas.Context {
	var out []schemas.Context
	seen := map[string]bool{}
	for _, c := range cits {
		for _, x := range ctxs {
			if x.ChunkID == c.ChunkID && !seen[x.ChunkID] {
				seen[x.ChunkID] = true
				out = append(out, x)
			}
		}
	}
	return out
}

type askedWord struct {
	text     string
	readings []string
}

// askedWords are the content words of a question, with their readings,
// without the words that only ask.
func askedWords(a *analysis.Analyzer, q string) []askedWord {
	var out []askedWord
	seen := map[string]bool{}
	for _, t := range analysis.Tokenize(q) {
		if analysis.IsStopword(t.Text) || negationWords[t.Text] || fillers[t.Text] || seen[t.Text] {
			continue
		}
		seen[t.Text] = true
		r := strings.Fields(a.Lemmas(t.Text))
		asking := len(r) == 0 || questionWords[t.Text]
		for _, l := range r {
			asking = asking || questionWords[l]
		}
		if !asking {
			out = append(out, askedWord{text: t.Text, readings: r})
		}
	}
	return out
}

func holdsAny(set map[string]bool, readings []string) bool {
	for _, r := range readings {
		if set[r] {
			return true
		}
	}
	return false
}

// contextText is what a context says about itself: title, section path and
// text.
func contextText(c schemas.Context) string {
	return c.Title + "\n" + strings.Join(c.SectionPath, "\n") + "\n" + c.Text
}

// questionForms are the question, its standalone form and its translations
// (from the retrieve stage's "translated: <lang>: <text>" reasons).
func questionForms(rq *schemas.QueryReranked) []string {
	forms := []string{rq.Question}
	if rq.Searched != "" && rq.Searched != rq.Question {
		forms = append(forms, rq.Searched)
	}
	for _, r := range rq.Reasons {
		rest, ok := strings.CutPrefix(r, "translated: ")
		if !ok {
			continue
		}
		if _, text, ok := strings.Cut(rest, ": "); ok && strings.TrimSpace(text) != "" {
			forms = append(forms, text)
		}
	}
	return forms
}

// matchingBlock is the block of c whose text holds the most of the
// question's words (any of its forms), so a passage shown for a question is
// cited by the block that matches it, not by the chunk's first block; ""
// when no block holds any.
func (a *Answerer) matchingBlock(c schemas.Context, forms []string) string {
	var words []askedWord
	for _, f := range forms {
		words = append(words, askedWords(a.Analyzer, f)...)
	}
	best, bestHits := "", 0
	for _, r := range blockRanges(c) {
		set := lemmaSet(a.Analyzer, c.Text[r.start:r.end])
		hits := 0
		for _, w := range words {
			if holdsAny(set, w.readings) {
				hits++
			}
		}
		if hits > bestHits {
			best, bestHits = r.id, hits
		}
	}
	return best
}
