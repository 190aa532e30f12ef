package eval

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
)

// AskFunc answers one golden question through retrieval and the answer
// stage.
type AskFunc func(ctx context.Context, q Question) (*schemas.AnswerDone, error)

// AnswerReport scores answers on a golden set. Definitions (the README
// repeats them):
//
//   - A citation is correct when its block is a gold block of its question
//     (or its document is, for SQuAD sets whose gold are documents), or
//     when the cited block's text holds one of the gold answers (after
//     normalisation: lower case, punctuation as spaces, whole words).
//     Citation precision is the share of correct citations among the
//     citations of answers (modes llm, extractive, cache) to answerable
//     questions. Citations given to unanswerable questions are counted in
//     CitationsUnanswerable and scored by abstention.
//   - A claim is a span of the answer that a citation says it supports
//     (Citation.Spans; a citation without spans is one claim of its own),
//     or a sentence left in the answer marked unsupported (Unsupported with
//     a span). Citation recall is the share of claims of answers to
//     answerable questions that have at least one correct citation.
//     SupportedAnswers is the share of answerable questions whose answer
//     has at least one correct citation.
//   - Support precision and recall check each citation against the claim it
//     is given for, whatever the question (the wording: citations
//     whose block holds the support for their claim): a citation supports
//     when its quote is in the cited block's text (normalised as above),
//     or, without a quote, when at least 60% of the words of its claims are
//     in the block. Support precision is the share of supporting citations
//     among the citations of all answers (answerable or not); support recall
//     the share of all answers' claims with a supporting citation.
//   - An answer abstains when one of its reasons starts with
//     answer.ReasonNotInNotes, or is answer.ReasonNoContexts (retrieval
//     found nothing and the answer says so). AbstainedRight counts the unanswerable
//     questions (SQuAD v2 impossible, JSONL "answers": []) that abstained;
//     AbstainedWrong the answerable ones that did.
//   - Exact match and F1 (SQuAD normalisation, best over the gold answers)
//     score the extractive answers to answerable questions.
type AnswerReport struct {
	Name         string         `json:"name,omitempty"`
	N            int            `json:"n"`
	Answerable   int            `json:"answerable"`
	Unanswerable int            `json:"unanswerable"`
	Modes        map[string]int `json:"modes"`

	Citations             int     `json:"citations"`
	CorrectCitations      int     `json:"correct_citations"`
	CitationPrecision     float64 `json:"citation_precision"`
	CitationsUnanswerable int     `json:"citations_unanswerable"`
	Claims                int     `json:"claims"`
	SupportedClaims       int     `json:"supported_claims"`
	CitationRecall        float64 `json:"citation_recall"`
	SupportedAnswers      float64 `json:"supported_answers"`

	AllCitations     int     `json:"all_citations"`
	SupportCitations int     `json:"supporting_citations"`
	SupportPrecision float64 `json:"support_precision"`
	AllClaims        int     `json:"all_claims"`
	SupportClaims    int     `json:"claims_with_support"`
	SupportRecall    float64 `json:"support_recall"`

	AbstainedRight int     `json:"abstained_right"`
	AbstentionRate float64 `json:"abstention"`
	AbstainedWrong int     `json:"abstained_wrong"`

	Extractive     int                `json:"extractive"`
	ExactMatch     float64            `json:"exact_match"`
	F1             float64            `json:"f1"`
	MeanConfidence float64            `json:"mean_confidence"`
	Unsupported    int                `json:"unsupported"`
	LatencyMS      map[string]Latency `json:"latency_ms"`
	// Misses lists up to 20 questions the system got wrong, with why.
	Misses []string `json:"misses,omitempty"`
	// Samples are the raw scores of the answers with their correctness, for
	// calibration.
	Samples []Sample `json:"-"`
	lat     map[string][]float64
}

// Latency is a stage's p50 and p95 in milliseconds over the questions.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	N   int     `json:"n"`
}

// Sample is one answer's raw score and whether the answer was right: an
// answer to an answerable question with a correct citation (llm, cache) or
// with F1 >= 0.5 against the gold (extractive); any answer to an
// unanswerable question is wrong.
type Sample struct {
	Mode    string
	Score   float64
	Correct bool
}

// maxMisses bounds AnswerReport.Misses.
const maxMisses = 20

// RunAnswers asks every question of set and scores the answers; blocks
// holds the text of every block of the notes by id (CollectBlocks).
func RunAnswers(ctx context.Context, ask AskFunc, set *Set, blocks map[string]string) (AnswerReport, error) {
	rep := AnswerReport{Name: set.Name, Modes: map[string]int{}, LatencyMS: map[string]Latency{}}
	lat := map[string][]float64{}
	var em, f1, conf float64
	for _, q := range set.Questions {
		start := time.Now()
		done, err := ask(ctx, q)
		if err != nil {
			return rep, fmt.Errorf("question %s: %w", q.ID, err)
		}
		lat["total"] = append(lat["total"], float64(time.Since(start).Microseconds())/1000)
		for k, v := range done.TimingsMS {
			lat[k] = append(lat[k], v)
		}
		s := ScoreAnswer(q, done, blocks)
		rep.add(q, done, s)
		if s.Extractive {
			em += s.EM
			f1 += s.F1
		}
		conf += done.Confidence
	}
	rep.finish(em, f1, conf, lat)
	rep.lat = lat
	return rep, nil
}

// AnswerScore is how one answer fared.
type AnswerScore struct {
	Answered    bool // mode llm, extractive or cache
	Abstained   bool // a reason starts with answer.ReasonNotInNotes (or is no_contexts)
	Citations   int  // citations of the answer (when Answered)
	Correct     int  // of them, correct ones
	Claims      int
	Supported   int // claims with a correct citation
	Extractive  bool
	EM, F1      float64
	Unsupported int
	// Support* check the citations against their claims' text, answerable
	// question or not.
	SupportCitations, AllClaims, SupportClaims int
}

// ScoreAnswer scores one answer against its golden question.
func ScoreAnswer(q Question, done *schemas.AnswerDone, blocks map[string]string) AnswerScore {
	var s AnswerScore
	for _, r := range done.Reasons {
		s.Abstained = s.Abstained || strings.HasPrefix(r, answer.ReasonNotInNotes) || r == answer.ReasonNoContexts
	}
	switch done.Mode {
	case schemas.AnswerLLM, schemas.AnswerExtractive, schemas.AnswerCache:
		s.Answered = !s.Abstained
	}
	for _, u := range done.Unsupported {
		if u.Span != nil {
			s.Unsupported++
		}
	}
	if !s.Answered {
		return s
	}
	s.Citations = len(done.Citations)
	s.supportOf(done, blocks)
	if q.Unanswerable {
		return s
	}
	claims := map[schemas.TextSpan]bool{} // span -> has a correct citation
	own := 0
	for _, c := range done.Citations {
		ok := CitationCorrect(q, c, blocks)
		if ok {
			s.Correct++
		}
		if len(c.Spans) == 0 {
			own++
			if ok {
				s.Supported++
			}
			continue
		}
		for _, sp := range c.Spans {
			claims[sp] = claims[sp] || ok
		}
	}
	s.Claims = own + len(claims) + s.Unsupported
	for _, ok := range claims {
		if ok {
			s.Supported++
		}
	}
	if done.Mode == schemas.AnswerExtractive {
		s.Extractive = true
		for _, g := range q.Answers {
			s.EM = max(s.EM, ExactMatch(done.Answer, g))
			s.F1 = max(s.F1, F1(done.Answer, g))
		}
	}
	return s
}

// supportOf checks each citation against its own claims.
func (s *AnswerScore) supportOf(done *schemas.AnswerDone, blocks map[string]string) {
	runes := []rune(done.Answer)
	claims := map[schemas.TextSpan]bool{}
	own := 0
	for _, c := range done.Citations {
		var texts []string
		for _, sp := range c.Spans {
			if sp.Start >= 0 && sp.Start <= sp.End && sp.End <= len(runes) {
				texts = append(texts, string(runes[sp.Start:sp.End]))
			}
		}
		ok := Supports(blocks[c.BlockID], c.Quote, texts)
		if ok {
			s.SupportCitations++
		}
		if len(c.Spans) == 0 {
			own++
			if ok {
				s.SupportClaims++
			}
			continue
		}
		for _, sp := range c.Spans {
			claims[sp] = claims[sp] || ok
		}
	}
	s.AllClaims = own + len(claims) + s.Unsupported
	for _, ok := range claims {
		if ok {
			s.SupportClaims++
		}
	}
}

// Supports tells whether a block's text holds a citation's support: its
// quote, normalised, or, without a quote, at least 60% of the words of its
// claims (markers and one-letter words aside).
func Supports(block, quote string, claims []string) bool {
	b := wordsOf(block)
	if b == "" {
		return false
	}
	if q := wordsOf(quote); q != "" {
		return strings.Contains(" "+b+" ", " "+q+" ")
	}
	have := map[string]bool{}
	for _, w := range strings.Fields(b) {
		have[w] = true
	}
	n, in := 0, 0
	for _, c := range claims {
		for _, w := range strings.Fields(wordsOf(c)) {
			if len([]rune(w)) < 2 || strings.Trim(w, "0123456789") == "" && len(w) < 3 {
				continue
			}
			n++
			if have[w] {
				in++
			}
		}
	}
	return n > 0 && float64(in) >= 0.6*float64(n)
}

// Right tells whether an answer counts as right for calibration.
func (s AnswerScore) Right(q Question) bool {
	if q.Unanswerable || !s.Answered {
		return false
	}
	if s.Extractive {
		return s.F1 >= 0.5 || s.Correct > 0 && s.F1 > 0
	}
	return s.Correct > 0
}

func (r *AnswerReport) add(q Question, done *schemas.AnswerDone, s AnswerScore) {
	r.N++
	r.Modes[done.Mode]++
	r.Unsupported += s.Unsupported
	r.AllCitations += s.Citations
	r.SupportCitations += s.SupportCitations
	r.AllClaims += s.AllClaims
	r.SupportClaims += s.SupportClaims
	miss := func(format string, args ...any) {
		if len(r.Misses) < maxMisses {
			r.Misses = append(r.Misses, q.ID+": "+fmt.Sprintf(format, args...))
		}
	}
	if s.Answered && (done.Mode == schemas.AnswerLLM || done.Mode == schemas.AnswerExtractive) {
		r.Samples = append(r.Samples, Sample{Mode: done.Mode, Score: done.Confidence, Correct: s.Right(q)})
	}
	if q.Unanswerable {
		r.Unanswerable++
		r.CitationsUnanswerable += s.Citations
		if s.Abstained {
			r.AbstainedRight++
		} else {
			miss("not in the notes, but the answer (mode %s) does not say so: %q", done.Mode, clip(done.Answer, 80))
		}
		return
	}
	r.Answerable++
	if s.Abstained {
		r.AbstainedWrong++
		miss("the answer is in the notes (%s), but the answer says it is not", strings.Join(q.Gold, ", "))
	}
	r.Citations += s.Citations
	r.CorrectCitations += s.Correct
	r.Claims += s.Claims
	r.SupportedClaims += s.Supported
	if s.Correct > 0 {
		r.SupportedAnswers++
	} else if s.Answered {
		miss("mode %s, none of its %d citations holds the gold (%s)", done.Mode, s.Citations, strings.Join(q.Gold, ", "))
	}
	if s.Extractive {
		r.Extractive++
	}
}

func (r *AnswerReport) finish(em, f1, conf float64, lat map[string][]float64) {
	if r.Citations > 0 {
		r.CitationPrecision = round4(float64(r.CorrectCitations) / float64(r.Citations))
	}
	if r.Claims > 0 {
		r.CitationRecall = round4(float64(r.SupportedClaims) / float64(r.Claims))
	}
	if r.AllCitations > 0 {
		r.SupportPrecision = round4(float64(r.SupportCitations) / float64(r.AllCitations))
	}
	if r.AllClaims > 0 {
		r.SupportRecall = round4(float64(r.SupportClaims) / float64(r.AllClaims))
	}
	if r.Answerable > 0 {
		r.SupportedAnswers = round4(r.SupportedAnswers / float64(r.Answerable))
	}
	if r.Unanswerable > 0 {
		r.AbstentionRate = round4(float64(r.AbstainedRight) / float64(r.Unanswerable))
	}
	if r.Extractive > 0 {
		r.ExactMatch, r.F1 = round4(em/float64(r.Extractive)), round4(f1/float64(r.Extractive))
	}
	if r.N > 0 {
		r.MeanConfidence = round4(conf / float64(r.N))
	}
	for k, xs := range lat {
		r.LatencyMS[k] = Latency{P50: round4(Percentile(xs, 50)), P95: round4(Percentile(xs, 95)), N: len(xs)}
	}
}

// CitationCorrect tells whether a citation's block holds the support for
// the question's gold: the block (or its document) is gold, or its text
// holds a gold answer.
func CitationCorrect(q Question, c schemas.Citation, blocks map[string]string) bool {
	for _, g := range q.Gold {
		if g == c.BlockID || g == c.DocID {
			return true
		}
	}
	text, ok := blocks[c.BlockID]
	if !ok {
		return false
	}
	return HoldsAnswer(text, q.Answers)
}

// HoldsAnswer tells whether text holds one of answers as whole words, after
// lower-casing and turning punctuation into spaces.
func HoldsAnswer(text string, answers []string) bool {
	t := " " + wordsOf(text) + " "
	for _, a := range answers {
		if w := wordsOf(a); w != "" && strings.Contains(t, " "+w+" ") {
			return true
		}
	}
	return false
}

func wordsOf(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSymbol(r) {
			return ' '
		}
		return unicode.ToLower(r)
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// NormalizeAnswer is SQuAD's answer normalisation: lower case, no
// punctuation, no English articles, single spaces.
func NormalizeAnswer(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
	var out []string
	for _, w := range strings.Fields(s) {
		if w != "a" && w != "an" && w != "the" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// ExactMatch is 1 when the normalised strings are equal.
func ExactMatch(pred, gold string) float64 {
	if NormalizeAnswer(pred) == NormalizeAnswer(gold) {
		return 1
	}
	return 0
}

// F1 is SQuAD's token F1 of the normalised strings.
func F1(pred, gold string) float64 {
	p, g := strings.Fields(NormalizeAnswer(pred)), strings.Fields(NormalizeAnswer(gold))
	if len(p) == 0 || len(g) == 0 {
		if len(p) == len(g) {
			return 1
		}
		return 0
	}
	counts := map[string]int{}
	for _, w := range g {
		counts[w]++
	}
	same := 0
	for _, w := range p {
		if counts[w] > 0 {
			counts[w]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	prec, rec := float64(same)/float64(len(p)), float64(same)/float64(len(g))
	return 2 * prec * rec / (prec + rec)
}

// CollectBlocks returns the text of every block by id: of the sets'
// documents and of the notes under folders (as the files reader reads them).
func CollectBlocks(sets []*Set, folders []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range sets {
		for _, d := range s.Docs {
			for _, b := range d.Blocks {
				out[b.ID] = b.Text
			}
		}
	}
	if len(folders) == 0 {
		return out, nil
	}
	err := files.Walk(folders, func(d *schemas.DocChanged) error {
		for _, b := range d.Blocks {
			out[b.ID] = b.Text
		}
		return nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("read the notes' blocks: %w", err)
	}
	return out, nil
}

// MergeAnswers combines per-set answer reports.
func MergeAnswers(name string, reps []AnswerReport) AnswerReport {
	out := AnswerReport{Name: name, Modes: map[string]int{}, LatencyMS: map[string]Latency{}}
	lat := map[string][]float64{}
	var em, f1, conf, supported float64
	for _, r := range reps {
		out.N += r.N
		out.Answerable += r.Answerable
		out.Unanswerable += r.Unanswerable
		for k, v := range r.Modes {
			out.Modes[k] += v
		}
		out.Citations += r.Citations
		out.CorrectCitations += r.CorrectCitations
		out.CitationsUnanswerable += r.CitationsUnanswerable
		out.Claims += r.Claims
		out.SupportedClaims += r.SupportedClaims
		out.AllCitations += r.AllCitations
		out.SupportCitations += r.SupportCitations
		out.AllClaims += r.AllClaims
		out.SupportClaims += r.SupportClaims
		supported += r.SupportedAnswers * float64(r.Answerable)
		out.AbstainedRight += r.AbstainedRight
		out.AbstainedWrong += r.AbstainedWrong
		out.Extractive += r.Extractive
		em += r.ExactMatch * float64(r.Extractive)
		f1 += r.F1 * float64(r.Extractive)
		conf += r.MeanConfidence * float64(r.N)
		out.Unsupported += r.Unsupported
		out.Samples = append(out.Samples, r.Samples...)
		for _, m := range r.Misses {
			if len(out.Misses) < maxMisses {
				out.Misses = append(out.Misses, m)
			}
		}
		for k, xs := range r.lat {
			lat[k] = append(lat[k], xs...)
		}
	}
	out.SupportedAnswers = supported
	out.finish(em, f1, conf, lat)
	out.lat = lat
	return out
}

// Stages lists the report's latency keys, total first.
func (r AnswerReport) Stages() []string {
	var out []string
	for k := range r.LatencyMS {
		if k != "total" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if _, ok := r.LatencyMS["total"]; ok {
		out = append([]string{"total"}, out...)
	}
	return out
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
