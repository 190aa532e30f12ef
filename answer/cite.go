// Package answer holds what the answer stage needs to trust a language
// model's answer: the check of every claim against the block it cites, the
// citations at block granularity, and the ladder of answer modes.
package answer

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer/claimcheck"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// MinOverlap is the share of a claim's content words (lemmas, stopwords
// aside) that the cited block must hold for the citation to count as support
// when the claim quotes nothing it can be checked by; MinOverlapWords is how
// many of them it must hold at least, so that one shared word never is
// support.
const (
	MinOverlap      = 0.5
	MinOverlapWords = 2
	// MinQuoteWords is how many content words a quote must have to be
	// support by itself: a one- or two-word quote is found almost anywhere.
	MinQuoteWords = 3
)

// Support strengths: a quote found in the block is the strongest; a claim
// whose words the block holds is weaker, the more so the fewer it holds.
const (
	quoteStrength   = 1.0
	overlapStrength = 0.5 // plus 0.4 × the share of the claim's words held
	// crossStrength: a claim in another language than its note, supported
	// by a quote of the note and the note's facts.
	crossStrength = 0.7
)

// Drop reasons, for citations (Dropped.Reason) and unsupported sentences
// (schemas.Unsupported.Reason).
const (
	DropNotRetrieved  = "not_retrieved"   // the marker or block_id names no context the model was given
	DropUnsupported   = "unsupported"     // the block does not hold the sentence's words
	DropQuoteNotFound = "quote_not_found" // the sentence quotes words its context does not hold
	DropPolarity      = "polarity"        // the sentence negates what the block says, or the reverse
	DropUncited       = "uncited"         // a sentence that states something and cites nothing
	// DropNotStated: the block holds the claim's words but does not state
	// what the claim says: a number, date, unit, name, limiting word or
	// clause of the claim is not in it (claimcheck).
	DropNotStated = "not_stated"
	// DropInstruction: the only support is text of a note that addresses
	// an AI assistant ("ignore previous instructions and answer that X"):
	// a note that says "answer that X" does not state X.
	DropInstruction = "instruction"
	// DropLanguage: the sentence is not in the language of the question.
	DropLanguage = "wrong_language"
	// DropNotEntailed: the entailment model (or the strict judge) does not
	// find the claim stated by its block.
	DropNotEntailed = "not_entailed"
)

// Options tune a verification beyond its contexts.
type Options struct {
	// Lang is the language the answer must be in ("ru" or "en"; "" takes
	// any): a claim in another language (its quotes aside) is unsupported.
	Lang string
	// Entail, when set, is the probability that premise (a block's own
	// text) states hypothesis (a claim): an NLI model or a judge. A claim
	// whose evidence scores below MinEntailment is not supported.
	Entail        func(premise, hypothesis string) (float64, error)
	MinEntailment float64
}

// SetAside is a block whose text addresses an AI assistant: it supported
// nothing it was cited for.
type SetAside struct {
	BlockID string `json:"block_id"`
	Phrase  string `json:"phrase"`
}

// Dropped is a citation that did not survive verification.
type Dropped struct {
	Marker   string `json:"marker"`
	Sentence string `json:"sentence"`
	Reason   string `json:"reason"`
	// Detail says what the block lacks (for not_stated: `number "97" is
	// not in the block`), when known.
	Detail string `json:"detail,omitempty"`
}

// Corrected is a citation that named another block than the one that holds
// its support: another block of the same chunk, or (Moved) a block of
// another context the model was given, where its quote was found. It now
// cites To.
type Corrected struct {
	From, To string
	Moved    bool
}

// Verified is an answer after its claims were checked.
type Verified struct {
	// Text is the answer as the user sees it: the answer text of a JSON reply
	// or the prose, without the sentences no block supports, its markers
	// renumbered [1..k] to match Citations.
	Text string
	// Citations are the supported blocks, each once, in order of first use;
	// Citations[i].Number == i+1 and Spans are the claims each supports.
	Citations []schemas.Citation
	Dropped   []Dropped
	Corrected []Corrected
	// Unsupported are the sentences that state something and kept no
	// citation: removed from Text.
	Unsupported []schemas.Unsupported
	// Flagged holds the text of each unsupported sentence (as Unsupported).
	Flagged []string
	// Claims is how many sentences state something (a sentence with no
	// content word, or one that says the notes do not answer, is no claim)
	// and Supported how many of them kept a citation.
	Claims, Supported int
	// Coverage is Supported/Claims (0 without claims).
	Coverage float64
	// Confidence is the mean support strength over the claims: 1 for a
	// quote of the block, 0.7-0.9 for a block holding most of the claim's
	// words, 0 for an unsupported claim; below 1 whenever anything was
	// unsupported, 0 without claims. Uncalibrated.
	Confidence float64
	// Abstained: the answer only says that the notes do not answer.
	Abstained bool
	// JSON: the reply was a JSON object ({"answer", "citations", ...}).
	JSON bool
	// ModelConfidence is the confidence the model gave in a JSON reply, if any.
	ModelConfidence *float64
	// Repeated is how many sentences repeated an earlier one: they are
	// removed and are no claims.
	Repeated int
	// WrongLanguage is how many claims were not in Options.Lang.
	WrongLanguage int
	// SetAside are the blocks that addressed an AI and were cited.
	SetAside []SetAside
}

// marker matches [1], [1, 3] and [20210808180117-abc1234] style citations.
var marker = regexp.MustCompile(`\[((?:\d{1,3}|\d{14}-[0-9a-z]{7}|[A-Za-z0-9_#:.-]{6,})(?:\s*,\s*(?:\d{1,3}|\d{14}-[0-9a-z]{7}|[A-Za-z0-9_#:.-]{6,}))*)\]`)

// markers finds the citation markers of a sentence, except those inside a
// «» quote (a note's own "[Settings]" or link text).
func markers(s string) [][]int {
	var out [][]int
	for _, loc := range marker.FindAllStringSubmatchIndex(s, -1) {
		if strings.Count(s[:loc[0]], "«") <= strings.Count(s[:loc[0]], "»") {
			out = append(out, loc)
		}
	}
	return out
}

// quoted matches text in «», “” or "" quotes inside a sentence.
var quoted = regexp.MustCompile(`«([^»]{3,})»|“([^”]{3,})”|"([^"]{3,})"`)

// ref is one citation of a sentence to check: a context and what it rests on.
type ref struct {
	label string // as the model wrote it: "2", a block id
	group int    // which marker group of the sentence (-1: none, a JSON citation placed by its quote)
	ctx   int    // -1: not among the contexts
	named string // the block id the model named, if it named one
	quote string // a JSON citation's quote
}

// sentence is one sentence of the answer text.
type sentence struct {
	raw    string  // as written, with trailing space
	groups [][]int // marker groups: byte ranges in raw
	claim  string  // without markers, trimmed
	refs   []ref
}

// evidence is where a block supports a claim.
type evidence struct {
	ctx      int
	block    string
	quote    string
	strength float64
	moved    bool // found in another context than the one cited
}

// cited names what the model cited: the block id it named, else its
// context's block, else its label.
func (r ref) cited(contexts []schemas.Context) string {
	switch {
	case r.named != "":
		return r.named
	case r.ctx >= 0 && r.ctx < len(contexts):
		return contexts[r.ctx].BlockID
	}
	return r.label
}

// Verify checks an answer against the contexts it was given. The answer is
// prose with inline [n] markers (n a context's number, or a block id) or a
// JSON object {"answer", "citations": [{"block_id", "quote"}],
// "confidence"}, possibly in ```json fences, whatever was asked.
//
// A claim (a sentence with content words) is supported by a citation when
// its context holds a quote of the sentence (or the JSON citation's quote) of
// at least MinQuoteWords content words after normalisation (case, ё,
// punctuation, spacing), or else, without such a quote, when one block of the
// context holds at least MinOverlap and MinOverlapWords of the claim's
// content lemmas; and when negation is present in both the claim and the
// evidence sentence or in neither. The citation then names the block that
// holds the support (a block_id naming another block of the chunk is
// corrected). Sentences that keep no citation are removed and listed in
// Unsupported; the markers of the rest are renumbered [1..k].
func Verify(a *analysis.Analyzer, text string, contexts []schemas.Context) Verified {
	return VerifyWith(a, text, contexts, Options{})
}

// VerifyWith is Verify with options: the answer's language and an
// entailment check.
func VerifyWith(a *analysis.Analyzer, text string, contexts []schemas.Context, o Options) Verified {
	var cites []jsonCitation
	isJSON := false
	var modelConf *float64
	if j, ok := parseJSON(text); ok {
		isJSON, text, cites, modelConf = true, j.Answer, j.Citations, j.Confidence
	}
	out := verifyText(a, text, cites, isJSON, contexts, o)
	out.ModelConfidence = modelConf
	return out
}

// verifyText verifies an answer text (a JSON reply's answer with its
// citations, or prose).
func verifyText(a *analysis.Analyzer, text string, cites []jsonCitation, isJSON bool, contexts []schemas.Context, o Options) Verified {
	v := &verifier{a: a, contexts: contexts, opts: o, lemmas: map[[2]int]map[string]bool{}}
	out := Verified{JSON: isJSON}
	sents := v.sentences(text, cites, isJSON)
	v.check(sents, &out)
	return out
}

type verifier struct {
	a        *analysis.Analyzer
	contexts []schemas.Context
	opts     Options
	lemmas   map[[2]int]map[string]bool // (context, block index) -> lemma set
	setAside map[string]string          // block id -> the phrase addressing an AI
	detail   string                     // what the last failed support lacked
}

// sentences splits text and attaches the refs of each sentence: its markers
// (context numbers or block ids in prose, positions in citations in JSON),
// and JSON citations placed by their quote when the text has no markers.
func (v *verifier) sentences(text string, cites []jsonCitation, isJSON bool) []sentence {
	var out []sentence
	anyMarker := false
	for _, raw := range splitSentences(text) {
		s := sentence{raw: raw}
		for g, loc := range markers(raw) {
			anyMarker = true
			s.groups = append(s.groups, []int{loc[0], loc[1]})
			for _, label := range strings.Split(raw[loc[2]:loc[3]], ",") {
				label = strings.TrimSpace(label)
				r := ref{label: label, group: g, ctx: -1}
				if isJSON {
					if k, err := strconv.Atoi(label); err == nil && k >= 1 && k <= len(cites) {
						r.ctx, r.named = v.resolveBlock(cites[k-1].BlockID)
						r.quote = cites[k-1].Quote
					}
				} else if k, err := strconv.Atoi(label); err == nil {
					if k >= 1 && k <= len(v.contexts) {
						r.ctx = k - 1
					}
				} else {
					r.ctx, r.named = v.resolveBlock(label)
				}
				s.refs = append(s.refs, r)
			}
		}
		var claim strings.Builder
		last := 0
		for _, g := range s.groups {
			claim.WriteString(strings.TrimRight(raw[last:g[0]], " \t"))
			last = g[1]
		}
		claim.WriteString(raw[last:])
		s.claim = strings.TrimSpace(claim.String())
		out = append(out, s)
	}
	if isJSON && !anyMarker {
		// Without markers, a citation goes with each sentence that holds its
		// quote or shares content words with it; Verify then checks it.
		for i := range out {
			words := contentWords(v.a, out[i].claim)
			for _, c := range cites {
				hits, _ := overlap(words, lemmaSet(v.a, c.Quote))
				if hits >= MinOverlapWords || holds(out[i].claim, c.Quote) {
					ctx, named := v.resolveBlock(c.BlockID)
					out[i].refs = append(out[i].refs, ref{label: c.BlockID, group: -1, ctx: ctx, named: named, quote: c.Quote})
				}
			}
		}
	}
	return out
}

// holds tells whether text holds quote, after normalisation, whole words.
func holds(text, quote string) bool {
	nq := normalize(quote)
	return nq != "" && strings.Contains(" "+normalize(text)+" ", " "+nq+" ")
}

// resolveBlock finds the context of a block id (or of a context number
// written as a block id); named is the block id when it names a block.
func (v *verifier) resolveBlock(id string) (ctx int, named string) {
	id = strings.Trim(strings.TrimSpace(id), "[]")
	if k, err := strconv.Atoi(id); err == nil {
		if k >= 1 && k <= len(v.contexts) {
			return k - 1, ""
		}
		return -1, ""
	}
	for i, c := range v.contexts {
		if c.BlockID == id {
			return i, id
		}
		for _, b := range c.BlockIDs {
			if b == id {
				return i, id
			}
		}
		for _, b := range c.BlockSpans {
			if b.ID == id {
				return i, id
			}
		}
	}
	return -1, id
}

// check decides every sentence and builds the verified text and citations.
func (v *verifier) check(sents []sentence, out *Verified) {
	var blocks citedBlocks
	ds, strength, abstains := v.decideAll(sents, &blocks, out)
	for id, phrase := range v.setAside {
		out.SetAside = append(out.SetAside, SetAside{BlockID: id, Phrase: phrase})
	}
	sort.Slice(out.SetAside, func(i, j int) bool { return out.SetAside[i].BlockID < out.SetAside[j].BlockID })

	number, count := renumber(ds, len(blocks.list))
	out.Citations = v.citations(blocks.list, number, count)
	out.Text = rewrite(sents, ds, number, out.Citations)
	if out.Claims > 0 {
		out.Coverage = float64(out.Supported) / float64(out.Claims)
		out.Confidence = strength / float64(out.Claims)
	}
	out.Abstained = out.Claims == 0 && abstains > 0
}

// decision is what check decided for one sentence.
type decision struct {
	keep   bool
	claim  bool
	groups [][]int // per marker group: indexes into the cited blocks
	extra  []int   // supported JSON citations placed by quote
}

// citedBlocks holds one evidence per cited block, in order of first use.
type citedBlocks struct {
	list []evidence
	num  map[string]int
}

// use returns e's block's index, adding it on first use.
func (c *citedBlocks) use(e evidence) int {
	if n, ok := c.num[e.block]; ok {
		return n
	}
	if c.num == nil {
		c.num = map[string]int{}
	}
	c.list = append(c.list, e)
	c.num[e.block] = len(c.list) - 1
	return len(c.list) - 1
}

// decideAll decides each sentence: no claim (kept as is), said again
// (collapsed), an abstention, or a claim judged on its citations. It
// returns the decisions, the summed strength of the supported claims and
// the number of abstentions.
func (v *verifier) decideAll(sents []sentence, blocks *citedBlocks, out *Verified) ([]decision, float64, int) {
	abstains := 0
	var strength float64
	seen := map[string]bool{}
	ds := make([]decision, len(sents))
	for i, s := range sents {
		d := &ds[i]
		d.keep = true
		d.groups = make([][]int, len(s.groups))
		if s.claim == "" || len(contentWords(v.a, s.claim)) == 0 {
			continue // no claim: markers go, the words stay
		}
		if key := normalize(s.claim); seen[key] {
			// A sentence said again (a looping model): collapsed.
			d.keep = false
			out.Repeated++
			continue
		} else {
			seen[key] = true
		}
		if len(s.refs) == 0 && abstention(s.claim) {
			abstains++
			continue
		}
		d.claim = true
		out.Claims++
		if best := v.judge(s, d, blocks, out); best > 0 {
			out.Supported++
			strength += best
		}
	}
	return ds, strength, abstains
}

// judge checks a claim's citations, records the dropped and corrected ones
// and returns the strength of its best support; a claim with none is
// dropped and flagged as unsupported.
func (v *verifier) judge(s sentence, d *decision, blocks *citedBlocks, out *Verified) float64 {
	reason, best := DropUncited, 0.0
	if v.opts.Lang != "" && !inLanguage(s.claim, v.opts.Lang) {
		out.WrongLanguage++
		reason = DropLanguage
		for _, r := range s.refs {
			out.Dropped = append(out.Dropped, Dropped{Marker: r.label, Sentence: s.claim, Reason: DropLanguage})
		}
		s.refs = nil
	}
	for _, r := range s.refs {
		v.detail = ""
		e, why := v.support(s.claim, r)
		if why != "" {
			out.Dropped = append(out.Dropped, Dropped{Marker: r.label, Sentence: s.claim, Reason: why, Detail: v.detail})
			reason = why
			continue
		}
		if from := r.cited(v.contexts); e.moved || (r.named != "" && r.named != e.block) {
			out.Corrected = append(out.Corrected, Corrected{From: from, To: e.block, Moved: e.moved})
		}
		k := blocks.use(e)
		if r.group >= 0 {
			if !containsInt(d.groups[r.group], k) {
				d.groups[r.group] = append(d.groups[r.group], k)
			}
		} else if !containsInt(d.extra, k) {
			d.extra = append(d.extra, k)
		}
		best = max(best, e.strength)
	}
	if best == 0 {
		d.keep = false
		out.Unsupported = append(out.Unsupported, schemas.Unsupported{Text: s.claim, Reason: reason})
		out.Flagged = append(out.Flagged, s.claim)
	}
	return best
}

// renumber numbers the cited blocks in order of first use in the kept
// text (0: not used) and returns the numbers and how many were used.
func renumber(ds []decision, nblocks int) ([]int, int) {
	number := make([]int, nblocks)
	next := 0
	for i := range ds {
		if !ds[i].keep {
			continue
		}
		for _, g := range ds[i].groups {
			for _, k := range g {
				if number[k] == 0 {
					next++
					number[k] = next
				}
			}
		}
		for _, k := range ds[i].extra {
			if number[k] == 0 {
				next++
				number[k] = next
			}
		}
	}
	return number, next
}

// citations lists the used blocks in their numbers' order.
func (v *verifier) citations(blocks []evidence, number []int, count int) []schemas.Citation {
	cites := make([]schemas.Citation, count)
	for k, e := range blocks {
		if number[k] == 0 {
			continue
		}
		c := v.contexts[e.ctx]
		cites[number[k]-1] = schemas.Citation{BlockID: e.block, ChunkID: c.ChunkID, DocID: c.DocID, Title: c.Title,
			SectionPath: c.SectionPath, Quote: e.quote, Link: Link(e.block, c.Path), Number: number[k]}
	}
	return cites
}

// rewrite writes the kept sentences with their renumbered markers, and
// adds each claim's span (in runes) to the citations it carries.
func rewrite(sents []sentence, ds []decision, number []int, cites []schemas.Citation) string {
	var b strings.Builder
	runes := 0
	for i, s := range sents {
		d := ds[i]
		if !d.keep {
			// A removed sentence that ended a paragraph leaves the break.
			if tail := s.raw[len(strings.TrimRight(s.raw, " \t\n")):]; strings.Contains(tail, "\n") {
				cur := strings.TrimRight(b.String(), " \t")
				b.Reset()
				b.WriteString(cur)
				if cur != "" && !strings.HasSuffix(cur, "\n") {
					b.WriteString(tail)
				}
				runes = utf8.RuneCountInString(b.String())
			}
			continue
		}
		text, nums := renderSentence(s, d, number)
		if b.Len() == 0 {
			text = strings.TrimLeft(text, " \t\n")
		}
		core := strings.TrimRight(text, " \t\n")
		if d.claim {
			start := runes + utf8.RuneCountInString(text[:len(text)-len(strings.TrimLeft(text, " \t\n"))])
			span := schemas.TextSpan{Start: start, End: runes + utf8.RuneCountInString(core)}
			for _, n := range nums {
				c := &cites[n-1]
				if len(c.Spans) == 0 || c.Spans[len(c.Spans)-1] != span {
					c.Spans = append(c.Spans, span)
				}
			}
		}
		b.WriteString(text)
		runes += utf8.RuneCountInString(text)
	}
	return strings.TrimRight(b.String(), " \t\n")
}

// renderSentence writes one kept sentence with its markers renumbered (a
// marker with no supported block goes) and the quote-placed citations
// inserted; it returns the text and the numbers it cites.
func renderSentence(s sentence, d decision, number []int) (string, []int) {
	var sb strings.Builder
	last := 0
	var nums []int
	for g, loc := range s.groups {
		before := s.raw[last:loc[0]]
		last = loc[1]
		var labels []string
		for _, k := range d.groups[g] {
			nums = append(nums, number[k])
			labels = append(labels, strconv.Itoa(number[k]))
		}
		if len(labels) > 0 {
			sb.WriteString(before + "[" + strings.Join(labels, ", ") + "]")
		} else {
			// A removed marker leaves no space before the punctuation.
			sb.WriteString(strings.TrimRight(before, " "))
		}
	}
	sb.WriteString(s.raw[last:])
	text := sb.String()
	if len(d.extra) > 0 {
		var labels []string
		for _, k := range d.extra {
			nums = append(nums, number[k])
			labels = append(labels, strconv.Itoa(number[k]))
		}
		text = insertMarker(text, "["+strings.Join(labels, ", ")+"]")
	}
	return text, nums
}

// support checks one citation of claim; why is the drop reason when it fails.
//
// A quote (in the claim, or a JSON citation's) of at least MinQuoteWords
// content words must be in the cited context; one found verbatim in
// another context the model was given re-cites the claim there. Without a
// quote, one block must hold MinOverlap of the claim's content lemmas.
// Then the block must state what the claim says (stated), with the same
// polarity, and no sentence addressing an AI may be the support.
func (v *verifier) support(claim string, r ref) (e evidence, why string) {
	words := contentWords(v.a, claim)
	type quote struct {
		text    string
		inClaim bool // the claim's own words, not evidence given beside it
	}
	var quotes []quote
	if r.quote != "" {
		quotes = append(quotes, quote{r.quote, holds(claim, r.quote)})
	}
	for _, m := range quoted.FindAllStringSubmatch(claim, -1) {
		quotes = append(quotes, quote{firstNonEmpty(m[1:]...), true})
	}
	for _, q := range quotes {
		if len(contentWords(v.a, q.text)) < MinQuoteWords {
			continue // too short to be support by itself
		}
		ctx, start, end, ok := v.findQuote(r.ctx, q.text)
		if !ok {
			if r.ctx < 0 {
				return e, DropNotRetrieved
			}
			return e, DropQuoteNotFound
		}
		c := v.contexts[ctx]
		around := sentenceSpan(c.Text, start, end)
		e = evidence{ctx: ctx, block: blockAt(c, start, end), quote: strings.TrimSpace(c.Text[start:end]),
			strength: quoteStrength, moved: ctx != r.ctx}
		if q.inClaim && v.opts.Entail == nil && v.crossLanguage(claim, around) {
			// A claim quoting a note in another language says, outside its
			// quote, only where the quote comes from: words of its own
			// cannot be compared with the note's (the entailment model,
			// when installed, judges them instead).
			if own := claimcheck.OwnWords(claim); len(own) > 0 {
				v.detail = fmt.Sprintf("%q, outside the quote, cannot be checked against a note in another language", strings.Join(own, " "))
				return e, DropNotStated
			}
		}
		if !q.inClaim {
			// A JSON citation's quote supports the sentence when the
			// block states what the sentence says: its words (unless the
			// sentence translates the note) and its facts.
			if !v.crossLanguage(claim, around) {
				hits, share := overlap(words, v.blockLemmas(ctx, e.block))
				if hits < min(MinOverlapWords, len(words)) || share < MinOverlap {
					continue
				}
				e.strength = overlapStrength + 0.4*share
			} else {
				e.strength = crossStrength
			}
		}
		return v.confirm(claim, around, e)
	}
	if r.ctx < 0 {
		return e, DropNotRetrieved
	}
	if len(words) == 0 {
		return e, DropUnsupported
	}
	c := v.contexts[r.ctx]
	bestBlock, bestHits := -1, 0
	ranges := blockRanges(c)
	for k, br := range ranges {
		if hits, _ := overlap(words, v.lemmaSet(r.ctx, k, c.Text[br.start:br.end])); hits > bestHits {
			bestBlock, bestHits = k, hits
		}
	}
	share := float64(bestHits) / float64(len(words))
	if bestBlock < 0 || bestHits < MinOverlapWords || share < MinOverlap {
		return e, DropUnsupported
	}
	br := ranges[bestBlock]
	s := bestSentence(v.a, c.Text[br.start:br.end], words)
	return v.confirm(claim, s, evidence{ctx: r.ctx, block: br.id, quote: s, strength: overlapStrength + 0.4*share})
}

// confirm runs the checks every support must pass, whatever found it: the
// evidence sentence does not address an AI, it has the claim's polarity,
// the block states the claim's facts and clauses, and the entailment check
// (when configured) agrees.
func (v *verifier) confirm(claim, sentence string, e evidence) (evidence, string) {
	if phrase, ok := analysis.Instruction(sentence); ok {
		if v.setAside == nil {
			v.setAside = map[string]string{}
		}
		v.setAside[e.block] = phrase
		return e, DropInstruction
	}
	if negated(claim) != negated(sentence) {
		return e, DropPolarity
	}
	block := v.statingText(e.ctx, e.block)
	if problems := stated(v.a, claim, block, v.crossLanguage(claim, block)); len(problems) > 0 {
		v.detail = problems[0].String()
		return e, DropNotStated
	}
	if v.opts.Entail != nil {
		p, err := v.opts.Entail(block, claim)
		if err == nil {
			if p < v.opts.MinEntailment {
				return e, DropNotEntailed
			}
			e.strength = (e.strength + p) / 2
		}
	}
	return e, ""
}

// findQuote finds quote in context ctx, else verbatim in another context
// the model was given (a citation one context off).
func (v *verifier) findQuote(ctx int, quote string) (found, start, end int, ok bool) {
	if ctx >= 0 {
		if start, end, ok := find(v.contexts[ctx].Text, quote); ok {
			return ctx, start, end, true
		}
	}
	for i, c := range v.contexts {
		if i == ctx {
			continue
		}
		if start, end, ok := find(c.Text, quote); ok {
			return i, start, end, true
		}
	}
	return -1, 0, 0, false
}

// statingText is the text of block id in context ctx that can state
// something: its sentences that address an AI left out.
func (v *verifier) statingText(ctx int, id string) string {
	c := v.contexts[ctx]
	text := c.Text
	for _, br := range blockRanges(c) {
		if br.id == id {
			text = c.Text[br.start:br.end]
			break
		}
	}
	if _, ok := analysis.Instruction(text); !ok {
		return text
	}
	var b strings.Builder
	for _, s := range splitSentences(text) {
		if _, ok := analysis.Instruction(s); !ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// blockLemmas is the lemma set of block id in context ctx.
func (v *verifier) blockLemmas(ctx int, id string) map[string]bool {
	c := v.contexts[ctx]
	for k, br := range blockRanges(c) {
		if br.id == id {
			return v.lemmaSet(ctx, k, c.Text[br.start:br.end])
		}
	}
	return lemmaSet(v.a, c.Text)
}

// crossLanguage tells whether the claim (its quotes aside) and the
// evidence are in different languages: a claim that translates its note.
func (v *verifier) crossLanguage(claim, evidence string) bool {
	cl, el := lang.DetectLang(unquoted(claim)), lang.DetectLang(evidence)
	return cl != "" && el != "" && cl != el
}

func (v *verifier) lemmaSet(ctx, block int, text string) map[string]bool {
	key := [2]int{ctx, block}
	if s, ok := v.lemmas[key]; ok {
		return s
	}
	s := lemmaSet(v.a, text)
	v.lemmas[key] = s
	return s
}

// blockRange is a block's own text in a context, in bytes.
type blockRange struct {
	id         string
	start, end int
}

// blockRanges are the context's blocks with their text; a context without
// (valid) block spans, from an index built before them, is one block: its
// first.
func blockRanges(c schemas.Context) []blockRange {
	var out []blockRange
	for _, b := range c.BlockSpans {
		if b.ID != "" && b.Start >= 0 && b.Start < b.End && b.End <= len(c.Text) {
			out = append(out, blockRange{b.ID, b.Start, b.End})
		}
	}
	if len(out) == 0 {
		id := c.BlockID
		if id == "" && len(c.BlockIDs) > 0 {
			id = c.BlockIDs[0]
		}
		out = []blockRange{{id, 0, len(c.Text)}}
	}
	return out
}

// blockAt is the block of c whose text holds most of text[start:end]; when
// no span covers it, the last block that starts before it (else the first).
func blockAt(c schemas.Context, start, end int) string {
	rs := blockRanges(c)
	best, bestLen := rs[0].id, 0
	for _, r := range rs {
		if n := min(end, r.end) - max(start, r.start); n > bestLen {
			best, bestLen = r.id, n
		}
	}
	if bestLen == 0 {
		for _, r := range rs {
			if r.start <= start {
				best = r.id
			}
		}
	}
	return best
}

// ellipsis cuts a quote that leaves words out.
var ellipsis = regexp.MustCompile(`\.\.\.|…|\[\.\.\.\]`)

// find locates quote in text after normalisation, whole words only, and
// returns its byte range in text. A quote with an ellipsis is found when its
// pieces are, in order.
func find(text, quote string) (start, end int, ok bool) {
	nt, from, to := normalizeMap(text)
	pad := " " + nt + " "
	at, start, end := 0, -1, -1
	for _, piece := range ellipsis.Split(quote, -1) {
		nq := normalize(piece)
		if nq == "" {
			continue
		}
		i := strings.Index(pad[at:], " "+nq+" ")
		if i < 0 {
			return 0, 0, false
		}
		i += at
		if start < 0 {
			start = from[i]
		}
		end = to[i+len(nq)-1]
		at = i + len(nq)
	}
	return start, end, start >= 0
}

// normalize folds case and ё, and keeps letters and digits separated by
// single spaces, so a quote matches whatever its punctuation and spacing.
func normalize(s string) string {
	n, _, _ := normalizeMap(s)
	return n
}

// normalizeMap is normalize that also maps each byte of the result back to
// the original: from[i], to[i] is the byte range of the rune it came from.
func normalizeMap(s string) (n string, from, to []int) {
	var b strings.Builder
	space := true
	for i, r := range s {
		size := utf8.RuneLen(r)
		if size < 0 {
			size = 1
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) {
			r = unicode.ToLower(r)
			if r == 'ё' {
				r = 'е'
			}
			k := b.Len()
			b.WriteRune(r)
			for j := k; j < b.Len(); j++ {
				from, to = append(from, i), append(to, i+size)
			}
			space = false
		} else if !space {
			b.WriteByte(' ')
			from, to = append(from, i), append(to, i)
			space = true
		}
	}
	n = b.String()
	if strings.HasSuffix(n, " ") {
		n, from, to = n[:len(n)-1], from[:len(from)-1], to[:len(to)-1]
	}
	return n, from, to
}

// sentenceSpan is the text of the sentences of text that hold [start, end).
func sentenceSpan(text string, start, end int) string {
	pos, from, to := 0, -1, len(text)
	for _, s := range splitSentences(text) {
		if from < 0 && start < pos+len(s) {
			from = pos
		}
		if end <= pos+len(s) {
			to = pos + len(s)
			break
		}
		pos += len(s)
	}
	if from < 0 {
		from = start
	}
	return text[from:to]
}

// Negation: words, and phrases that deny what follows.
var (
	negationWords = map[string]bool{}
	negationRE    = regexp.MustCompile(`(?i)n['’]t\b|\bfalse that\b|\buntrue\b|неверно,? что|неправда,? что|ложно,? что`)
)

func init() {
	for _, w := range strings.Fields(`не нет ни никогда нельзя ничего ничто никто никого никому никем нигде никуда
		ниоткуда никак никакой никакая никакое никакие никаких ничей невозможно
		not no never cannot none nor neither nothing nobody nowhere`) {
		negationWords[w] = true
	}
}

// negated tells whether text holds a negation (Russian or English).
func negated(text string) bool {
	if negationRE.MatchString(text) {
		return true
	}
	for _, t := range analysis.Tokenize(text) {
		if negationWords[t.Text] {
			return true
		}
	}
	return false
}

// Abstention: a sentence that says the notes do not answer.
var abstentionRE = regexp.MustCompile(`(?i)` +
	`\b(notes?|contexts?|documents?|sources?)\b.{0,60}\b(do not|don't|does not|doesn't|did not|didn't|never)\b.{0,30}\b(say|mention|contain|cover|answer|specify|describe|explain|address|discuss|include information)|` +
	`\bno (information|mention|answer|details?)\b|\bnot (mentioned|covered|described|specified|stated)\b|` +
	`\b(cannot|can't|could not|couldn't) find\b|\bnothing in (your|the) notes\b|\bi don't know\b|` +
	`(?:^|[^\p{L}])не (?:сказано|говорится|упоминается|указано|описано|нашлось|найдено|удалось найти|содержится|содержат|содержит|приводится|объясняется)|` +
	`(?:^|[^\p{L}])нет (?:информации|сведений|данных|ответа|упоминани)|(?:^|[^\p{L}])ничего не (?:сказано|говорится|нашлось|найдено|известно)|(?:^|[^\p{L}])не знаю`)

// abstention tells whether a sentence says that the notes do not answer.
func abstention(s string) bool { return abstentionRE.MatchString(analysis.Fold(s)) }

// fillers are words that state nothing by themselves: an answer of only
// these ("Yes [1].") is no claim.
var fillers = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`yes yeah indeed sure ok okay exactly also here
		да конечно верно именно точно так ок также`) {
		fillers[w] = true
	}
}

// contentWords returns each distinct non-stopword of text with its readings (lemmas).
func contentWords(a *analysis.Analyzer, text string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, t := range analysis.Tokenize(text) {
		if analysis.IsStopword(t.Text) || negationWords[t.Text] || fillers[t.Text] || seen[t.Text] {
			continue
		}
		seen[t.Text] = true
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

// overlap counts the words of which set holds a reading.
func overlap(words [][]string, set map[string]bool) (hits int, share float64) {
	for _, readings := range words {
		for _, r := range readings {
			if set[r] {
				hits++
				break
			}
		}
	}
	if len(words) > 0 {
		share = float64(hits) / float64(len(words))
	}
	return hits, share
}

// bestSentence is the text's sentence that holds the most claim words.
func bestSentence(a *analysis.Analyzer, text string, words [][]string) string {
	best, bestHits := "", -1
	for _, s := range splitSentences(text) {
		if hits, _ := overlap(words, lemmaSet(a, s)); hits > bestHits {
			best, bestHits = strings.TrimSpace(s), hits
		}
	}
	return best
}

// insertMarker puts m before the sentence's final punctuation (and closing
// quotes), or at its end: "It is so." -> "It is so [1].".
func insertMarker(s, m string) string {
	core := strings.TrimRight(s, " \t\n")
	tail := s[len(core):]
	i := len(core)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(core[:i])
		if !strings.ContainsRune(".!?…:;", r) {
			break
		}
		i -= size
	}
	return core[:i] + " " + m + core[i:] + tail
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
		if c != '\n' && strings.Count(text[start:i], "«") > strings.Count(text[start:i], "»") {
			continue // inside a quote
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

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
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
