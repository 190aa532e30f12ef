package eval

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// AskFunc answers one golden question through retrieval and the answer
// stage.
type AskFunc func(ctx context.Context, q Question) (*schemas.AnswerDone, error)

// AnswerReport scores answers on a golden set. Every field has one name,
// the same in the JSON and in eval's text report. Definitions (the README
// repeats them):
//
// From the provider's labels (LabelReport: present only when the provider
// labels its claims, eval --answers --scripted or --labels; never computed
// with the verifier's rules), see LabelReport.
//
// Always:
//
//   - abstention: the share of unanswerable questions (SQuAD v2
//     impossible, JSONL "answers": []) whose answer abstains: a reason
//     starts with answer.ReasonNotInNotes, or is answer.ReasonNoContexts
//     (retrieval found nothing and the answer says so); abstained_right
//     counts them, abstained_wrong the answerable questions that
//     abstained.
//   - wrong_language: answers (modes llm and cache; extractive and
//     search-only answers show the notes' own text) whose own words, «quotes»
//     and markers aside, are in another language than the question's (the
//     set's lang, else detected; lang.DetectLang); language_checked counts
//     the answers checked.
//   - gold_*: against the set's gold. A citation is gold-correct when its
//     block is a gold block of its question (or its document is, for SQuAD
//     sets whose gold are documents), or its text holds one of the gold
//     answers (normalised: lower case, punctuation as spaces, whole words).
//     gold_citation_precision is the share of gold-correct citations among
//     the citations of answers (modes llm, extractive, cache) to answerable
//     questions (gold_citations); citations given to unanswerable questions
//     are counted in gold_citations_unanswerable. A gold claim is a span of
//     the answer that a citation says it supports (Citation.Spans; a
//     citation without spans is one claim of its own), or a sentence left
//     in the answer marked unsupported; gold_citation_recall is the share
//     of such claims with a gold-correct citation, gold_supported_answers
//     the share of answerable questions whose answer has one.
//   - overlap_*: each citation against the claim it is given for, by words:
//     it supports when its quote is in the cited block's text (normalised
//     as above) or, without a quote, when at least 60% of the words of its
//     claims are in the block. This is the verifier's kind of rule: it is
//     fooled by a changed number next to a real quote, and is kept only as
//     a check of the citations' blocks. overlap_support_precision is the
//     share of supporting citations among all answers' citations;
//     overlap_support_recall the share of claims with one.
//   - exact_match and f1 (SQuAD normalisation, best over the gold answers)
//     score the extractive answers to answerable questions.
type AnswerReport struct {
	Name         string         `json:"name,omitempty"`
	N            int            `json:"n"`
	Answerable   int            `json:"answerable"`
	Unanswerable int            `json:"unanswerable"`
	Modes        map[string]int `json:"modes"`

	// Labels says where the claims' labels came from; LabelsMissing, when
	// there are none, why the label fields are absent.
	Labels        string `json:"labels,omitempty"`
	LabelsMissing string `json:"labels_missing,omitempty"`
	// LabelReport is nil without labels (its fields are then absent from
	// the JSON).
	*LabelReport

	AbstainedRight int     `json:"abstained_right"`
	Abstention     float64 `json:"abstention"`
	AbstainedWrong int     `json:"abstained_wrong"`

	WrongLanguage   int `json:"wrong_language"`
	LanguageChecked int `json:"language_checked"`

	GoldCitations             int     `json:"gold_citations"`
	GoldCorrectCitations      int     `json:"gold_correct_citations"`
	GoldCitationPrecision     float64 `json:"gold_citation_precision"`
	GoldCitationsUnanswerable int     `json:"gold_citations_unanswerable"`
	GoldClaims                int     `json:"gold_claims"`
	GoldSupportedClaims       int     `json:"gold_supported_claims"`
	GoldCitationRecall        float64 `json:"gold_citation_recall"`
	GoldSupportedAnswers      float64 `json:"gold_supported_answers"`

	OverlapCitations           int     `json:"overlap_citations"`
	OverlapSupportingCitations int     `json:"overlap_supporting_citations"`
	OverlapSupportPrecision    float64 `json:"overlap_support_precision"`
	OverlapClaims              int     `json:"overlap_claims"`
	OverlapSupportedClaims     int     `json:"overlap_supported_claims"`
	OverlapSupportRecall       float64 `json:"overlap_support_recall"`

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

// LabelReport scores the answers against the labels a scripted provider
// gives every claim it makes (models/llm/llmtest: faithful, changed_number,
// ..., with the claim's source block and sentence, and whether it is
// supported). A sentence of the final answer is a claim shown with a
// citation when a citation's span overlaps it or its marker is in it
// (ShownSentences); it is matched to the provider's claim by MatchClaim.
//
//   - false_supported: claims labelled unsupported that an answer shows
//     with a citation (each claim once per answer, however often
//     repeated); false_supported_share: their share of shown_cited_claims,
//     the labelled claims shown with a citation plus the cited sentences
//     that match no claim (unmatched_cited_sentences).
//   - citation_precision: of the citations shown for labelled claims
//     (labelled_citations: an answer's citations of one claim to one block
//     count once), the correct ones (correct_citations): the claim is
//     supported and the cited block is its source block, or a block whose
//     text holds its source sentence (LabelCitationCorrect). A citation of
//     a false claim is never correct.
//   - faithful_kept: of the supported claims (faithful, translated,
//     off_by_one_citation) of each answerable question's latest answer request
//     (faithful_claims), the share an answer shows with at least one
//     correct citation (faithful_kept_claims).
//   - confidence_auc: over the answers in modes llm and extractive that do
//     not abstain, the AUC of AnswerDone.Confidence separating clean
//     answers (confidence_auc_clean: every claim of the model's reply is
//     labelled supported, and none shown is false) from the others
//     (confidence_auc_false: the answer shows a false claim, or the reply
//     it was verified from held one, removed or not): the probability
//     that a clean answer has the higher confidence, ties counting one
//     half; null, with confidence_auc_note saying why, when either side is
//     empty. A verifier that removes every false claim still has to say,
//     through confidence, that the reply it came from was not to be trusted.
type LabelReport struct {
	LabelledClaims          int            `json:"labelled_claims"`
	LabelledClaimsByLabel   map[string]int `json:"labelled_claims_by_label"`
	ShownCitedClaims        int            `json:"shown_cited_claims"`
	FalseSupported          int            `json:"false_supported"`
	FalseSupportedShare     float64        `json:"false_supported_share"`
	FalseSupportedByLabel   map[string]int `json:"false_supported_by_label"`
	UnmatchedCitedSentences int            `json:"unmatched_cited_sentences"`
	LabelledCitations       int            `json:"labelled_citations"`
	CorrectCitations        int            `json:"correct_citations"`
	CitationPrecision       float64        `json:"citation_precision"`
	FaithfulClaims          int            `json:"faithful_claims"`
	FaithfulKeptClaims      int            `json:"faithful_kept_claims"`
	FaithfulKept            float64        `json:"faithful_kept"`
	ConfidenceAUC           *float64       `json:"confidence_auc"`
	ConfidenceAUCClean      int            `json:"confidence_auc_clean"`
	ConfidenceAUCFalse      int            `json:"confidence_auc_false"`
	ConfidenceAUCNote       string         `json:"confidence_auc_note,omitempty"`
	aucClean, aucFalse      []float64
}

func newLabelReport() *LabelReport {
	return &LabelReport{LabelledClaimsByLabel: map[string]int{}, FalseSupportedByLabel: map[string]int{}}
}

// AnswerOptions are RunAnswers' options.
type AnswerOptions struct {
	// Labels gives the labels of the claims made for a question (nil: the
	// provider labels nothing, and the label fields are absent).
	Labels LabelFunc
	// LabelSource says where the labels come from (the report's labels);
	// NoLabels why there are none (its labels_missing), when Labels is nil.
	LabelSource, NoLabels string
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
// holds the text of every block of the notes by id (CollectBlocks); with
// opts.Labels the answers are scored against the provider's labels too.
func RunAnswers(ctx context.Context, ask AskFunc, set *Set, blocks map[string]string, opts AnswerOptions) (AnswerReport, error) {
	rep := AnswerReport{Name: set.Name, Modes: map[string]int{}, LatencyMS: map[string]Latency{}}
	if opts.Labels != nil {
		rep.Labels, rep.LabelReport = opts.LabelSource, newLabelReport()
	} else {
		rep.LabelsMissing = opts.NoLabels
	}
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
		why := rep.add(q, done, s)
		if opts.Labels != nil {
			labels, err := opts.Labels(ctx, q.Question)
			if err != nil {
				return rep, fmt.Errorf("question %s: %w", q.ID, err)
			}
			ls := ScoreLabels(done, labels, blocks)
			if q.Unanswerable {
				// A true sentence beside a question the notes do not answer
				// is rightly withheld: faithful_kept counts answerable ones.
				ls.Faithful, ls.FaithfulKept, ls.FaithfulLost = 0, 0, nil
			}
			why = append(why, rep.addLabels(done, s, labels, ls)...)
		}
		if len(why) > 0 && len(rep.Misses) < maxMisses {
			rep.Misses = append(rep.Misses, q.ID+": "+strings.Join(why, "; "))
		}
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
	var t claimTally // a claim is supported by a correct citation
	for _, c := range done.Citations {
		ok := CitationCorrect(q, c, blocks)
		if ok {
			s.Correct++
		}
		t.add(c, ok)
	}
	claims, supported := t.counts()
	s.Claims, s.Supported = claims+s.Unsupported, s.Supported+supported
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
	var t claimTally
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
		t.add(c, ok)
	}
	claims, supported := t.counts()
	s.AllClaims, s.SupportClaims = claims+s.Unsupported, s.SupportClaims+supported
}

// claimTally counts an answer's cited claims from its citations: a
// citation without spans is a claim of its own; each cited span is one
// claim, held when any of its citations is.
type claimTally struct {
	spans        map[schemas.TextSpan]bool // span -> a citation of it holds
	own, ownHeld int
}

// add counts citation c, which holds (is correct, supports its claim) or not.
func (t *claimTally) add(c schemas.Citation, held bool) {
	if len(c.Spans) == 0 {
		t.own++
		if held {
			t.ownHeld++
		}
		return
	}
	if t.spans == nil {
		t.spans = map[schemas.TextSpan]bool{}
	}
	for _, sp := range c.Spans {
		t.spans[sp] = t.spans[sp] || held
	}
}

// counts are the claims counted and those held.
func (t *claimTally) counts() (claims, held int) {
	held = t.ownHeld
	for _, ok := range t.spans {
		if ok {
			held++
		}
	}
	return t.own + len(t.spans), held
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

// add counts an answer; it returns what was wrong with it (for Misses).
func (r *AnswerReport) add(q Question, done *schemas.AnswerDone, s AnswerScore) (why []string) {
	miss := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	r.N++
	r.Modes[done.Mode]++
	r.Unsupported += s.Unsupported
	r.OverlapCitations += s.Citations
	r.OverlapSupportingCitations += s.SupportCitations
	r.OverlapClaims += s.AllClaims
	r.OverlapSupportedClaims += s.SupportClaims
	if done.Mode == schemas.AnswerLLM || done.Mode == schemas.AnswerCache {
		if ql := QuestionLanguage(q); ql != "" {
			r.LanguageChecked++
			if al := AnswerLanguage(done.Answer); al != "" && al != ql {
				r.WrongLanguage++
				miss("the question is in %s, the answer (mode %s) in %s: %q", ql, done.Mode, al, clip(done.Answer, 80))
			}
		}
	}
	if s.Answered && (done.Mode == schemas.AnswerLLM || done.Mode == schemas.AnswerExtractive) {
		r.Samples = append(r.Samples, Sample{Mode: done.Mode, Score: done.Confidence, Correct: s.Right(q)})
	}
	if q.Unanswerable {
		r.Unanswerable++
		r.GoldCitationsUnanswerable += s.Citations
		if s.Abstained {
			r.AbstainedRight++
		} else {
			miss("not in the notes, but the answer (mode %s) does not say so: %q", done.Mode, clip(done.Answer, 80))
		}
		return why
	}
	r.Answerable++
	if s.Abstained {
		r.AbstainedWrong++
		miss("the answer is in the notes (%s), but the answer says it is not", strings.Join(q.Gold, ", "))
	}
	r.GoldCitations += s.Citations
	r.GoldCorrectCitations += s.Correct
	r.GoldClaims += s.Claims
	r.GoldSupportedClaims += s.Supported
	if s.Correct > 0 {
		r.GoldSupportedAnswers++
	} else if s.Answered {
		miss("mode %s, none of its %d citations holds the gold (%s)", done.Mode, s.Citations, strings.Join(q.Gold, ", "))
	}
	if s.Extractive {
		r.Extractive++
	}
	return why
}

// add adds another set's label counts (MergeAnswers); the shares are
// computed again by finish.
func (m *LabelReport) add(l *LabelReport) {
	m.LabelledClaims += l.LabelledClaims
	for k, v := range l.LabelledClaimsByLabel {
		m.LabelledClaimsByLabel[k] += v
	}
	m.ShownCitedClaims += l.ShownCitedClaims
	m.FalseSupported += l.FalseSupported
	for k, v := range l.FalseSupportedByLabel {
		m.FalseSupportedByLabel[k] += v
	}
	m.UnmatchedCitedSentences += l.UnmatchedCitedSentences
	m.LabelledCitations += l.LabelledCitations
	m.CorrectCitations += l.CorrectCitations
	m.FaithfulClaims += l.FaithfulClaims
	m.FaithfulKeptClaims += l.FaithfulKeptClaims
	m.aucClean = append(m.aucClean, l.aucClean...)
	m.aucFalse = append(m.aucFalse, l.aucFalse...)
}

// addLabels adds an answer's label score; it returns the false claims the
// answer shows (for Misses).
func (r *AnswerReport) addLabels(done *schemas.AnswerDone, s AnswerScore, labels []Label, ls LabelScore) (why []string) {
	l := r.LabelReport
	l.LabelledClaims += len(labels)
	for _, lb := range labels {
		l.LabelledClaimsByLabel[lb.Label]++
	}
	l.ShownCitedClaims += len(ls.Shown) + ls.UnmatchedCited
	l.UnmatchedCitedSentences += ls.UnmatchedCited
	l.FalseSupported += ls.FalseSupported
	for k, v := range ls.FalseByLabel {
		l.FalseSupportedByLabel[k] += v
	}
	l.LabelledCitations += ls.Citations
	l.CorrectCitations += ls.CorrectCitations
	l.FaithfulClaims += ls.Faithful
	l.FaithfulKeptClaims += ls.FaithfulKept
	for _, f := range ls.FalseShown {
		why = append(why, fmt.Sprintf("mode %s, confidence %.2f, shows a false claim with a citation: %s", done.Mode, done.Confidence, f))
	}
	for _, f := range ls.FaithfulLost {
		why = append(why, fmt.Sprintf("mode %s, loses a faithful claim: %s (reasons: %s)", done.Mode, f, clip(strings.Join(done.Reasons, "; "), 300)))
	}
	if s.Answered && (done.Mode == schemas.AnswerLLM || done.Mode == schemas.AnswerExtractive) {
		if ls.FalseSupported > 0 || ls.Perturbed {
			l.aucFalse = append(l.aucFalse, done.Confidence)
		} else {
			l.aucClean = append(l.aucClean, done.Confidence)
		}
	}
	return why
}

func (r *AnswerReport) finish(em, f1, conf float64, lat map[string][]float64) {
	if r.GoldCitations > 0 {
		r.GoldCitationPrecision = round4(float64(r.GoldCorrectCitations) / float64(r.GoldCitations))
	}
	if r.GoldClaims > 0 {
		r.GoldCitationRecall = round4(float64(r.GoldSupportedClaims) / float64(r.GoldClaims))
	}
	if r.OverlapCitations > 0 {
		r.OverlapSupportPrecision = round4(float64(r.OverlapSupportingCitations) / float64(r.OverlapCitations))
	}
	if r.OverlapClaims > 0 {
		r.OverlapSupportRecall = round4(float64(r.OverlapSupportedClaims) / float64(r.OverlapClaims))
	}
	if r.Answerable > 0 {
		r.GoldSupportedAnswers = round4(r.GoldSupportedAnswers / float64(r.Answerable))
	}
	if r.Unanswerable > 0 {
		r.Abstention = round4(float64(r.AbstainedRight) / float64(r.Unanswerable))
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
	if l := r.LabelReport; l != nil {
		l.FalseSupportedShare, l.CitationPrecision, l.FaithfulKept = 0, 0, 0
		if l.ShownCitedClaims > 0 {
			l.FalseSupportedShare = round4(float64(l.FalseSupported) / float64(l.ShownCitedClaims))
		}
		if l.LabelledCitations > 0 {
			l.CitationPrecision = round4(float64(l.CorrectCitations) / float64(l.LabelledCitations))
		}
		if l.FaithfulClaims > 0 {
			l.FaithfulKept = round4(float64(l.FaithfulKeptClaims) / float64(l.FaithfulClaims))
		}
		l.ConfidenceAUCClean, l.ConfidenceAUCFalse = len(l.aucClean), len(l.aucFalse)
		l.ConfidenceAUC, l.ConfidenceAUCNote = nil, ""
		if auc, ok := AUC(l.aucClean, l.aucFalse); ok {
			auc = round4(auc)
			l.ConfidenceAUC = &auc
		} else {
			l.ConfidenceAUCNote = fmt.Sprintf("needs answers of both kinds: %d clean, %d from replies with a false claim", len(l.aucClean), len(l.aucFalse))
		}
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
	err := notes.Walk(folders, func(d *schemas.DocChanged) error {
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
		if r.Labels != "" && out.Labels == "" {
			out.Labels = r.Labels
		}
		if r.LabelsMissing != "" && out.LabelsMissing == "" {
			out.LabelsMissing = r.LabelsMissing
		}
		if l := r.LabelReport; l != nil {
			if out.LabelReport == nil {
				out.LabelReport = newLabelReport()
			}
			out.LabelReport.add(l)
		}
		out.AbstainedRight += r.AbstainedRight
		out.AbstainedWrong += r.AbstainedWrong
		out.WrongLanguage += r.WrongLanguage
		out.LanguageChecked += r.LanguageChecked
		out.GoldCitations += r.GoldCitations
		out.GoldCorrectCitations += r.GoldCorrectCitations
		out.GoldCitationsUnanswerable += r.GoldCitationsUnanswerable
		out.GoldClaims += r.GoldClaims
		out.GoldSupportedClaims += r.GoldSupportedClaims
		supported += r.GoldSupportedAnswers * float64(r.Answerable)
		out.OverlapCitations += r.OverlapCitations
		out.OverlapSupportingCitations += r.OverlapSupportingCitations
		out.OverlapClaims += r.OverlapClaims
		out.OverlapSupportedClaims += r.OverlapSupportedClaims
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
	if out.LabelReport != nil {
		out.LabelsMissing = ""
	}
	out.GoldSupportedAnswers = supported
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
