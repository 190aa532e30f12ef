package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// Label is a scripted provider's account of one claim it made: the JSON of
// llmtest.Claim (models/llm/llmtest), which eval reads without importing
// the test provider. The labels, not the verifier's rules, say which claims
// are true.
type Label struct {
	Question string `json:"question"`
	// Sentence is the claim as the provider wrote it, without markers.
	Sentence string `json:"sentence"`
	Label    string `json:"label"`
	// SourceBlock is the block the sentence was built from ("" for an
	// invented one); SourceSentence the block's sentence it was built from.
	SourceBlock    string `json:"source_block"`
	SourceSentence string `json:"source_sentence,omitempty"`
	// Supported: the claim is true of its source block (faithful,
	// translated, off_by_one_citation).
	Supported bool `json:"supported"`
	// Request numbers the provider's answer requests, from 1.
	Request int `json:"request"`
}

// LabelFunc returns the labels of the claims a provider made for a question.
type LabelFunc func(ctx context.Context, question string) ([]Label, error)

// HTTPLabels reads the labels from a scripted provider's claims URL
// (llmtest.ClaimsPath on the provider's server: a provider started by
// another process), asking ?question=Q.
func HTTPLabels(claimsURL string) LabelFunc {
	hc := &http.Client{Timeout: 30 * time.Second}
	return func(ctx context.Context, question string) ([]Label, error) {
		u, err := url.Parse(claimsURL)
		if err != nil {
			return nil, fmt.Errorf("labels URL %q: %w", claimsURL, err)
		}
		qv := u.Query()
		qv.Set("question", question)
		u.RawQuery = qv.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("labels URL %q: %w", claimsURL, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read the claims' labels from %s: %w (is the scripted provider running?)", claimsURL, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("read the claims' labels from %s: status %s (the URL must be a scripted provider's %s)", claimsURL, resp.Status, "/exocortex/claims")
		}
		var out struct {
			Claims []Label `json:"claims"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, fmt.Errorf("read the claims' labels from %s: %w", claimsURL, err)
		}
		return out.Claims, nil
	}
}

// Matching a sentence of the final answer to a labelled claim: both are
// normalised (citation markers [..] removed, lower case, punctuation and
// symbols, «» included, as spaces); equal texts match; else the claim with
// the best word overlap matches when the overlap (words in common, as
// multisets, over the longer one's word count) is at least MatchOverlap,
// or when, with at least MatchMinWords words on each side, the two differ
// by one word only (one word swapped, added or dropped). Ties go to the
// later request, then to the claim made first. A sentence that had a
// clause of several words cut away by the verifier matches no claim.
const (
	MatchOverlap  = 0.75
	MatchMinWords = 3
)

var markerRE = regexp.MustCompile(`\[[^\[\]]{1,40}\]`)

// NormalizeClaim is a sentence as matching compares it.
func NormalizeClaim(s string) string { return wordsOf(markerRE.ReplaceAllString(s, " ")) }

// MatchClaim is the index of the label whose claim the shown sentence is,
// or -1.
func MatchClaim(sentence string, labels []Label) int {
	s := NormalizeClaim(sentence)
	if s == "" {
		return -1
	}
	sw := strings.Fields(s)
	best, bestScore, bestReq := -1, 0.0, 0
	for i, l := range labels {
		c := NormalizeClaim(l.Sentence)
		score := 0.0
		if c == s {
			score = 2 // above any overlap
		} else {
			cw := strings.Fields(c)
			common := commonWords(sw, cw)
			longer, shorter := max(len(sw), len(cw)), min(len(sw), len(cw))
			if longer == 0 {
				continue
			}
			score = float64(common) / float64(longer)
			if score < MatchOverlap && !(shorter >= MatchMinWords && longer-common <= 1) {
				continue
			}
		}
		if best < 0 || score > bestScore || score == bestScore && l.Request > bestReq {
			best, bestScore, bestReq = i, score, l.Request
		}
	}
	return best
}

func commonWords(a, b []string) int {
	count := map[string]int{}
	for _, w := range a {
		count[w]++
	}
	n := 0
	for _, w := range b {
		if count[w] > 0 {
			count[w]--
			n++
		}
	}
	return n
}

// ShownSentence is a sentence of the final answer and the citations shown
// for it.
type ShownSentence struct {
	Text string
	// Start and End are rune offsets into AnswerDone.Answer.
	Start, End int
	// Citations index AnswerDone.Citations: those with a span that overlaps
	// the sentence, those whose marker [n] is in it, and those with neither
	// spans nor a number (they stand for the whole answer).
	Citations []int
}

// ShownSentences splits an answer into sentences: after . ! ? or a line
// break, outside «quotes», with the markers that follow a sentence's end
// kept in it; each with its citations.
func ShownSentences(done *schemas.AnswerDone) []ShownSentence {
	runes := []rune(done.Answer)
	var out []ShownSentence
	start, depth := 0, 0
	cut := func(end int) {
		text := strings.TrimSpace(string(runes[start:end]))
		if text != "" {
			// Offsets of the trimmed text.
			s := start
			for s < end && unicode.IsSpace(runes[s]) {
				s++
			}
			out = append(out, ShownSentence{Text: text, Start: s, End: s + len([]rune(text))})
		}
		start = end
	}
	for i := 0; i < len(runes); i++ {
		switch r := runes[i]; {
		case r == '«':
			depth++
		case r == '»':
			depth = max(0, depth-1)
		case r == '\n':
			cut(i + 1)
		case depth == 0 && (r == '.' || r == '!' || r == '?'):
			j := i + 1
			if j < len(runes) && !unicode.IsSpace(runes[j]) && runes[j] != '[' {
				continue // 2.5, e.g, a path
			}
			// Markers after the end belong to the sentence: "... . [1]".
			for {
				k := j
				for k < len(runes) && runes[k] == ' ' {
					k++
				}
				if k < len(runes) && runes[k] == '[' {
					if m := markerRE.FindStringIndex(string(runes[k:])); m != nil && m[0] == 0 {
						j = k + len([]rune(string(runes[k:])[:m[1]]))
						continue
					}
				}
				break
			}
			cut(j)
			i = j - 1
		}
	}
	cut(len(runes))
	for si := range out {
		s := &out[si]
		numbers := markerNumbers(s.Text)
		for ci, c := range done.Citations {
			shown := false
			for _, sp := range c.Spans {
				shown = shown || sp.Start < s.End && s.Start < sp.End
			}
			shown = shown || c.Number > 0 && numbers[c.Number]
			shown = shown || len(c.Spans) == 0 && c.Number == 0
			if shown {
				s.Citations = append(s.Citations, ci)
			}
		}
	}
	return out
}

// markerNumbers are the numbers of a text's markers: [1], [1, 3], [2][4].
func markerNumbers(text string) map[int]bool {
	out := map[int]bool{}
	for _, m := range markerRE.FindAllString(text, -1) {
		for _, part := range strings.Split(strings.Trim(m, "[]"), ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(part)); err == nil {
				out[n] = true
			}
		}
	}
	return out
}

// LabelScore is how one answer fared against the provider's labels.
type LabelScore struct {
	// Shown maps the labels (by index) that the answer shows with a
	// citation to whether one of those citations is correct.
	Shown map[int]bool
	// UnmatchedCited counts the answer's sentences shown with a citation
	// that match no labelled claim.
	UnmatchedCited int
	// Citations of shown labelled claims (each claim's citations of one
	// block counted once), and the correct ones among them.
	Citations, CorrectCitations int
	// FalseSupported counts the labels the answer shows with a citation
	// that are not supported; FalseByLabel by label.
	FalseSupported int
	FalseByLabel   map[string]int
	// Faithful counts the supported labels of the question's latest answer
	// request; FaithfulKept those the answer shows with a correct citation.
	Faithful, FaithfulKept int
	// FalseShown are the false claims' sentences as shown (for misses).
	FalseShown []string
	// Perturbed: the reply held a claim its label says is not supported
	// (shown or removed). FaithfulLost are the supported claims the answer
	// does not show with a correct citation (for misses).
	Perturbed    bool
	FaithfulLost []string
}

// LabelCitationCorrect tells whether a citation shown for a labelled claim is
// correct at block level: the claim is supported (its label says it is
// true of its source block) and the cited block is its source block, or a
// block whose text holds its source sentence (normalised as words; the
// same text in another block). A citation of a false claim is never
// correct: no block holds the support of what is not so.
func LabelCitationCorrect(c schemas.Citation, l Label, blocks map[string]string) bool {
	if !l.Supported {
		return false
	}
	if l.SourceBlock != "" && c.BlockID == l.SourceBlock {
		return true
	}
	src := wordsOf(l.SourceSentence)
	text, ok := blocks[c.BlockID]
	return ok && src != "" && strings.Contains(" "+wordsOf(text)+" ", " "+src+" ")
}

// citedClaim is a labelled claim cited to a block: a loop that shows one
// claim cited to one block forty times shows one citation.
type citedClaim struct {
	label int
	block string
}

// ScoreLabels scores an answer against the labels of the claims the
// provider made for its question. Only answers (modes llm, extractive,
// cache, not abstaining) show claims; search-only passages are the notes'
// own text.
func ScoreLabels(done *schemas.AnswerDone, labels []Label, blocks map[string]string) LabelScore {
	s := LabelScore{Shown: map[int]bool{}, FalseByLabel: map[string]int{}}
	latest := 0
	for _, l := range labels {
		latest = max(latest, l.Request)
	}
	answered := false
	switch done.Mode {
	case schemas.AnswerLLM, schemas.AnswerExtractive, schemas.AnswerCache:
		answered = !abstains(done)
	}
	if answered {
		cited := map[citedClaim]bool{}
		for _, sent := range ShownSentences(done) {
			if len(sent.Citations) == 0 {
				continue
			}
			i := MatchClaim(sent.Text, labels)
			if i < 0 {
				s.UnmatchedCited++
				continue
			}
			kept := s.Shown[i]
			for _, ci := range sent.Citations {
				c := done.Citations[ci]
				ok := LabelCitationCorrect(c, labels[i], blocks)
				kept = kept || ok
				if k := (citedClaim{i, c.BlockID}); !cited[k] {
					cited[k] = true
					s.Citations++
					if ok {
						s.CorrectCitations++
					}
				}
			}
			if _, seen := s.Shown[i]; !seen && !labels[i].Supported {
				s.FalseSupported++
				s.FalseByLabel[labels[i].Label]++
				s.FalseShown = append(s.FalseShown, labels[i].Label+": "+clip(sent.Text, 100))
			}
			s.Shown[i] = kept
		}
	}
	for i, l := range labels {
		if l.Request == latest && !l.Supported {
			s.Perturbed = true
		}
		if l.Request == latest && l.Supported {
			s.Faithful++
			if s.Shown[i] {
				s.FaithfulKept++
			} else {
				s.FaithfulLost = append(s.FaithfulLost, l.Label+": "+clip(l.Sentence, 100))
			}
		}
	}
	return s
}

// abstains: a reason says the notes do not answer.
func abstains(done *schemas.AnswerDone) bool {
	for _, r := range done.Reasons {
		if strings.HasPrefix(r, answer.ReasonNotInNotes) || r == answer.ReasonNoContexts {
			return true
		}
	}
	return false
}

var quotedRE = regexp.MustCompile(`(?s)«[^«»]*»|«[^«»]*$`)

// AnswerLanguage is the language of an answer's own words: its text with
// the «quotes» (the notes' words) and markers removed (lang.DetectLang; ""
// when too little is left to tell).
func AnswerLanguage(answer string) string {
	return lang.DetectLang(markerRE.ReplaceAllString(quotedRE.ReplaceAllString(answer, " "), " "))
}

// QuestionLanguage is the question's language: the set's lang, else
// detected from the question.
func QuestionLanguage(q Question) string {
	if q.Lang != "" {
		return q.Lang
	}
	return lang.DetectLang(q.Question)
}

// AUC is the probability that a positive sample scores above a negative
// one, ties counting one half (the Mann-Whitney U over the product of the
// counts); ok is false when either side is empty.
func AUC(pos, neg []float64) (auc float64, ok bool) {
	if len(pos) == 0 || len(neg) == 0 {
		return 0, false
	}
	n := append([]float64(nil), neg...)
	sort.Float64s(n)
	var u float64
	for _, p := range pos {
		below := sort.SearchFloat64s(n, p) // negatives < p
		upto := sort.Search(len(n), func(i int) bool { return n[i] > p })
		u += float64(below) + float64(upto-below)/2
	}
	return u / float64(len(pos)*len(neg)), true
}
