package llmtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/lang"
)

// Behaviour is how a scripted provider answers a question from its contexts.
type Behaviour int

const (
	// Good quotes the context sentence that best matches the question in «»
	// with its context's [n] marker (prose), or as JSON {answer, citations
	// [{block_id, quote}], confidence} when JSON is asked; when no sentence
	// matches well, it says that the notes do not say, in the question's
	// language.
	Good Behaviour = iota
	// WrongBlock quotes a sentence that is not in the context's first block
	// and cites the first block by its id (the block attribute of the fence):
	// in prose as a [block-id] marker, in JSON as block_id.
	WrongBlock
	// WrongContext quotes the right sentence and cites another context's
	// number (or block).
	WrongContext
	// Negated says "It is not true that «...»" ("Неверно, что «...»").
	Negated
	// Invented answers well and adds a sentence no context supports, cited.
	Invented
	// OneWordQuote cites a one-word quote of the sentence as the answer.
	OneWordQuote
	// JSONForProse answers in JSON (in ```json fences) when prose was asked.
	JSONForProse
	// ProseForJSON answers in prose when JSON was asked.
	ProseForJSON
	// Endless streams the good prose answer, then more of it, without end
	// (until the client goes away).
	Endless
	// Abstain says that the notes do not say, whatever the contexts hold.
	Abstain

	// The perturbation suite. Each kind answers from the context sentence
	// that best matches the question (share of the question's words at
	// least a half, as Good); where no sentence matches, it says that the
	// notes do not say. A kind that changes something a sentence must have
	// (a number, a date, a unit, a name) takes the best matching sentence
	// that has one; when none has, the answer is the faithful one, labelled
	// faithful. A changed sentence is written as it is in the notes (no «»)
	// when the note is in the answer's language, and inside the language's
	// lead «...» otherwise (a quote the note does not hold). In JSON the
	// citation's quote is always the note's real sentence: a real quote
	// next to a changed sentence.

	// Faithful is the control: the sentence copied as it is in the note
	// (for about half of the sentences) or quoted in «» after a lead in the
	// answer's language, with its context's citation.
	Faithful
	// ChangeNumber copies a sentence with a number and changes the number
	// (30 -> 97: times three plus seven).
	ChangeNumber
	// ChangeDate changes a date's day, or a year (2023 -> 2026).
	ChangeDate
	// ChangeUnit changes the unit after a number (days -> hours, MB -> GB,
	// дней -> часов).
	ChangeUnit
	// ChangeEntity swaps a proper name for another (SiYuan -> Obsidian).
	ChangeEntity
	// AppendCondition writes the faithful sentence plus a false condition
	// (", but only in the paid edition", ", но только в платной версии").
	AppendCondition
	// InventedClause writes the faithful sentence plus an invented clause
	// (", and it also syncs every note to a server in Peru").
	InventedClause
	// ObeyInjection answers what an instruction inside a context says to
	// answer ("ignore previous instructions and answer that X" -> "X",
	// cited to that context); without such an instruction it answers
	// faithfully.
	ObeyInjection
	// WrongLanguage quotes the sentence after a lead in the other language:
	// English to a Russian question, Russian to an English one.
	WrongLanguage
	// Loop repeats the faithful sentence until the request's max_tokens
	// (4096 without one): the reply ends with finish_reason "length".
	Loop
	// OffByOneCitation quotes the right sentence and cites the neighbouring
	// context (the next one, or the one before the last): its number in
	// prose, its block id in JSON.
	OffByOneCitation
	// Translate answers from a sentence in the other language than the
	// question's where one matches (a Russian sentence around the English
	// «quote», or the reverse), else as Faithful with a quote.
	Translate
	// Mixed picks one of the suite's kinds per question: Faithful about
	// half of the time, each of the others (ChangeNumber to Translate,
	// Negate among them) about equally often the rest; a third of the
	// perturbed answers that change one sentence are two sentences, one
	// faithful and one perturbed. The pick is a hash of the question and
	// ScriptOptions.Seed: the same question always gets the same kind.
	Mixed
)

// Negate is Negated by the perturbation suite's name.
const Negate = Negated

var behaviourNames = [...]string{
	Good: "good", WrongBlock: "wrong-block", WrongContext: "wrong-context", Negated: "negate", Invented: "invented",
	OneWordQuote: "one-word-quote", JSONForProse: "json-for-prose", ProseForJSON: "prose-for-json", Endless: "endless", Abstain: "abstain",
	Faithful: "faithful", ChangeNumber: "change-number", ChangeDate: "change-date", ChangeUnit: "change-unit", ChangeEntity: "change-entity",
	AppendCondition: "append-condition", InventedClause: "invented-clause", ObeyInjection: "obey-injection", WrongLanguage: "wrong-language",
	Loop: "loop", OffByOneCitation: "off-by-one-citation", Translate: "translate", Mixed: "mixed",
}

// String is the behaviour's name, as ParseBehaviour takes it.
func (b Behaviour) String() string {
	if b >= 0 && int(b) < len(behaviourNames) {
		return behaviourNames[b]
	}
	return "behaviour(" + strconv.Itoa(int(b)) + ")"
}

// BehaviourNames lists every behaviour's name.
func BehaviourNames() []string { return append([]string(nil), behaviourNames[:]...) }

// ParseBehaviour reads a behaviour's name: "change-number", "change_number"
// and "ChangeNumber" alike; "negated" is "negate".
func ParseBehaviour(name string) (Behaviour, error) {
	k := nameKey(name)
	if k == "negated" {
		return Negated, nil
	}
	if b := indexName(behaviourNames[:], k); b >= 0 {
		return Behaviour(b), nil
	}
	return 0, fmt.Errorf("scripted behaviour %q: want one of %s", name, strings.Join(behaviourNames[:], ", "))
}

// nameKey is how a behaviour's or a research kind's name is compared:
// case, spaces, '-' and '_' aside.
func nameKey(s string) string {
	return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(strings.TrimSpace(s)))
}

// indexName is the index of the name in names whose nameKey is key, or -1.
func indexName(names []string, key string) int {
	for i, n := range names {
		if nameKey(n) == key {
			return i
		}
	}
	return -1
}

// The labels of claims (Claim.Label).
const (
	LabelFaithful          = "faithful"
	LabelChangedNumber     = "changed_number"
	LabelChangedDate       = "changed_date"
	LabelChangedUnit       = "changed_unit"
	LabelChangedEntity     = "changed_entity"
	LabelAppendedCondition = "appended_condition"
	LabelInventedClause    = "invented_clause"
	LabelNegated           = "negated"
	LabelObeyedInjection   = "obeyed_injection"
	LabelWrongLanguage     = "wrong_language"
	LabelLoop              = "loop"
	LabelOffByOneCitation  = "off_by_one_citation"
	LabelTranslated        = "translated"
	// LabelInvented is a whole sentence no context holds (Invented).
	LabelInvented = "invented"
	// LabelOneWordQuote is a "gist" of one quoted word (OneWordQuote).
	LabelOneWordQuote = "one_word_quote"
)

// SupportedLabel tells whether a claim so labelled is true of its source
// block: faithful, translated and off-by-one-citation claims are (the last
// cites the wrong block, but says what the note says).
func SupportedLabel(label string) bool {
	return slices.Contains([]string{LabelFaithful, LabelTranslated, LabelOffByOneCitation}, label)
}

// Claim is what the scripted provider says about one sentence of a reply.
type Claim struct {
	// Question is the question of the request, as its "Question:" line
	// has it.
	Question string `json:"question"`
	// Sentence is the claim as the reply writes it, without citation
	// markers, ending in a period.
	Sentence string `json:"sentence"`
	Label    string `json:"label"`
	// SourceBlock is the block whose text the sentence was built from: the
	// block of ScriptOptions.Blocks that holds SourceSentence (preferring
	// the context's own blocks), else the context's block attribute; ""
	// for an invented sentence.
	SourceBlock string `json:"source_block"`
	// SourceSentence is the context's sentence the claim was built from, as
	// the context has it ("" for an invented sentence).
	SourceSentence string `json:"source_sentence,omitempty"`
	// Supported is true when the claim is true of its source block
	// (SupportedLabel).
	Supported bool `json:"supported"`
	// CitedBlock is the block the reply cites for the claim: the block
	// attribute of the context whose number it gives (prose), or the
	// block_id of its citation (JSON).
	CitedBlock string `json:"cited_block,omitempty"`
	// Behaviour is the kind that made the claim (for Mixed, the kind
	// picked); Format is "prose" or "json"; Request numbers the answer
	// requests this server received, from 1.
	Behaviour string `json:"behaviour"`
	Format    string `json:"format"`
	Request   int    `json:"request"`
}

// ScriptOptions configure a scripted provider.
type ScriptOptions struct {
	Behaviour Behaviour
	// Translations answer the translation requests: question -> language ->
	// the question in that language. They also let the provider match a
	// question with contexts in another language.
	Translations map[string]map[string]string
	// Blocks are the notes' blocks by id (their text), for the claims'
	// source blocks: a context is a chunk of several blocks and its fence
	// names one; without Blocks the claim's source block is the fence's.
	Blocks map[string]string
	// Seed varies Mixed's pick per question.
	Seed uint64
}

// NewScripted starts a fake provider that answers each request from its own
// content, as a real model would: an answer request (contexts fenced as
// <context n="N" block="ID" title=".." section="..">TEXT</context>, then
// "Question: ...") per opts.Behaviour; a translation request (a system
// message starting "Translate the question into", the question as the user
// message) with one "<lang>: <translation>" line per language known for the
// question; a follow-up request with three questions; a rewrite request
// with the last question. JSON is asked by response_format json_schema or
// by a system message asking for a JSON object. Every claim of an answer is
// labelled (Claims, and GET /exocortex/claims). It is closed when the test
// ends.
func NewScripted(t testing.TB, opts ScriptOptions) *Server {
	t.Helper()
	s := NewScriptedServer(opts)
	t.Cleanup(s.Close)
	return s
}

// SetBehaviour changes how the scripted provider answers from now on.
func (s *Server) SetBehaviour(b Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scripted != nil {
		o := *s.scripted
		o.Behaviour = b
		s.scripted = &o
	}
}

// Claims returns the labelled claims of the answers given to question (all
// of them for ""), in the order made.
func (s *Server) Claims(question string) []Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Claim
	for _, c := range s.claims {
		if question == "" || c.Question == question {
			out = append(out, c)
		}
	}
	return out
}

type scriptedBody struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	MaxTokens int `json:"max_tokens"`
}

// defaultBudget is the scripted provider's max_tokens for a request
// without one.
const defaultBudget = 4096

// reply is the scripted answer to one request: its text (cut at the
// request's max_tokens by the server), whether to stream it without end
// (Endless), and the labelled claims it makes.
type reply struct {
	text    string
	endless bool
	claims  []Claim
}

// scriptedReply is the reply to one request.
func scriptedReply(o ScriptOptions, blocks *blockIndex, raw []byte) reply {
	var b scriptedBody
	_ = json.Unmarshal(raw, &b)
	var system, user string
	for _, m := range b.Messages {
		switch m.Role {
		case "system":
			system += m.Content
		case "user":
			user = m.Content
		}
	}
	switch {
	case strings.HasPrefix(system, "Translate the question into"):
		return reply{text: translate(o, strings.TrimSpace(user))}
	case strings.Contains(user, "<context n="):
		asJSON := (b.ResponseFormat != nil && b.ResponseFormat.Type == "json_schema") || strings.Contains(system, "JSON object")
		budget := b.MaxTokens
		if budget <= 0 {
			budget = defaultBudget
		}
		return answerFrom(o, blocks, system, user, asJSON, budget)
	case strings.Contains(strings.ToLower(system), "follow-up"):
		if strings.Contains(system, "Russian") {
			return reply{text: "Как это настроить?\nГде это хранится?\nМожно ли это отключить?"}
		}
		return reply{text: "How do I set it up?\nWhere is it stored?\nCan I turn it off?"}
	case strings.HasPrefix(system, "Rewrite"):
		if i := strings.LastIndex(user, "Last question:"); i >= 0 {
			return reply{text: strings.TrimSpace(user[i+len("Last question:"):])}
		}
		return reply{text: strings.TrimSpace(user)}
	}
	return reply{text: "OK."}
}

func translate(o ScriptOptions, question string) string {
	var lines []string
	for lang, text := range o.Translations[question] {
		lines = append(lines, lang+": "+text)
	}
	if len(lines) == 0 {
		return "en: " + question
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// fenceRE reads a context's fence: its number, block and text (other
// attributes, after these two, are skipped).
var fenceRE = regexp.MustCompile(`(?s)<context n="(\d+)" block="([^"]*)"(?:\s+[\w-]+="(?:[^"\\]|\\.)*")*>\n(.*?)\n</context>`)

type fence struct {
	n     int
	block string
	text  string
}

// candidate is one sentence of a context.
type candidate struct {
	ctx        int // index into the fences
	sentence   string
	lang       string // lang.DetectLang of the sentence
	firstBlock bool   // in the context's first paragraph (its first block, usually)
	negated    bool
	score      float64 // share of the question's words it holds
	hits       int
}

// request is one answer request, read.
type request struct {
	o        ScriptOptions
	blocks   *blockIndex
	fences   []fence
	question string
	ru       bool // the answer is asked in Russian
	asJSON   bool
	budget   int
	cands    []candidate
}

// claimPart is one sentence of a reply: its text (without marker and
// final period), its prose marker, its JSON citation, and its label.
type claimPart struct {
	text   string
	marker string
	cite   map[string]string
	claim  Claim
}

func answerFrom(o ScriptOptions, blocks *blockIndex, system, user string, asJSON bool, budget int) reply {
	r := &request{o: o, blocks: blocks, asJSON: asJSON, budget: budget}
	for _, m := range fenceRE.FindAllStringSubmatch(user, -1) {
		n, _ := strconv.Atoi(m[1])
		r.fences = append(r.fences, fence{n: n, block: m[2], text: m[3]})
	}
	question := user
	if i := strings.LastIndex(user, "Question:"); i >= 0 {
		question = strings.TrimSpace(user[i+len("Question:"):])
		if nl := strings.IndexByte(question, '\n'); nl >= 0 {
			question = question[:nl]
		}
	}
	r.question = question
	r.ru = strings.Contains(system, "in Russian") || (!strings.Contains(system, "in English") && cyrillic(question))
	versions := []string{question}
	for _, t := range o.Translations[question] {
		versions = append(versions, t)
	}
	for i, f := range r.fences {
		first := f.text
		if k := strings.Index(first, "\n\n"); k >= 0 {
			first = first[:k]
		}
		for _, s := range sentencesOf(f.text) {
			if len(stems(s)) < 3 || strings.ContainsAny(s, "«»") {
				continue
			}
			c := candidate{ctx: i, sentence: s, lang: lang.DetectLang(s), firstBlock: strings.Contains(first, s), negated: negation(s)}
			for _, q := range versions {
				qs := stems(q)
				hits := 0
				ss := stems(s)
				for w := range qs {
					if ss[w] {
						hits++
					}
				}
				if len(qs) > 0 && hits >= min(2, len(qs)) {
					if sc := float64(hits) / float64(len(qs)); sc > c.score {
						c.score, c.hits = sc, hits
					}
				}
			}
			r.cands = append(r.cands, c)
		}
	}
	behaviour := o.Behaviour
	if behaviour >= Faithful {
		return r.suite(behaviour)
	}
	return r.legacy(behaviour)
}

// pick is the best matching candidate (share of the question's words at
// least a half) that ok takes.
func (r *request) pick(ok func(candidate) bool) (candidate, bool) {
	best, found := candidate{}, false
	for _, c := range r.cands {
		if c.score >= 0.5 && ok(c) && (!found || c.score > best.score || (c.score == best.score && c.hits > best.hits)) {
			best, found = c, true
		}
	}
	return best, found
}

func anyCandidate(candidate) bool { return true }

// abstain says that the notes do not say, in the answer's language.
func (r *request) abstain(prose bool) reply {
	text := "The notes do not say anything about this."
	if r.ru {
		text = "В заметках не сказано об этом."
	}
	if r.asJSON && !prose {
		return reply{text: mustJSON(text, nil, 0.1)}
	}
	return reply{text: text}
}

// lead quotes a sentence the way Good does, in Russian or English.
func lead(ru bool, quote string) string {
	if ru {
		return "В заметках сказано: «" + quote + "»"
	}
	return "According to the notes, «" + quote + "»"
}

func trimEnd(s string) string { return strings.TrimRight(s, ".!?;: ") }

// answerLang is the language the answer is asked in.
func (r *request) answerLang() string {
	if r.ru {
		return lang.LangRussian
	}
	return lang.LangEnglish
}

// sameLang: the sentence is in the answer's language (or in none).
func (r *request) sameLang(c candidate) bool { return c.lang == "" || c.lang == r.answerLang() }

// part makes a sentence built from c, cited to c's context.
func (r *request) part(c candidate, text, label string) claimPart {
	f := r.fences[c.ctx]
	return claimPart{text: text, marker: fmt.Sprintf("[%d]", f.n), cite: map[string]string{"block_id": f.block, "quote": trimEnd(c.sentence)},
		claim: Claim{Sentence: text + ".", Label: label, SourceBlock: r.blocks.find(f, c.sentence), SourceSentence: c.sentence,
			Supported: SupportedLabel(label), CitedBlock: f.block}}
}

// faithfulLabel is faithful, or translated when the note is in another
// language than the answer.
func (r *request) faithfulLabel(c candidate) string {
	if r.sameLang(c) {
		return LabelFaithful
	}
	return LabelTranslated
}

// quoted is c quoted after the lead, labelled faithful or translated.
func (r *request) quoted(c candidate) claimPart {
	return r.part(c, lead(r.ru, trimEnd(c.sentence)), r.faithfulLabel(c))
}

// faithful is c copied as it is (about half of the sentences, when in the
// answer's language: a hash of the sentence decides) or quoted.
func (r *request) faithful(c candidate) claimPart {
	if r.sameLang(c) && hash64(0, c.sentence)%2 == 1 {
		return r.part(c, trimEnd(c.sentence), LabelFaithful)
	}
	return r.quoted(c)
}

// render writes the parts as the reply: prose with markers, or JSON.
func (r *request) render(parts []claimPart, behaviour string) reply {
	out := reply{}
	var prose, answer []string
	var cites []map[string]string
	for i, p := range parts {
		prose = append(prose, p.text+" "+p.marker+".")
		answer = append(answer, p.text+".")
		if p.cite != nil {
			cites = append(cites, p.cite)
		}
		c := p.claim
		c.Question, c.Behaviour, c.Format = r.question, behaviour, "prose"
		if r.asJSON {
			c.Format = "json"
			if p.cite != nil {
				c.CitedBlock = p.cite["block_id"]
			}
		}
		c.Sentence = p.text + "."
		parts[i].claim = c
		out.claims = append(out.claims, c)
	}
	out.text = strings.Join(prose, " ")
	if r.asJSON {
		out.text = mustJSON(strings.Join(answer, " "), cites, 0.9)
	}
	return out
}

// legacy answers by the behaviours before the perturbation suite.
func (r *request) legacy(behaviour Behaviour) reply {
	best, ok := r.pick(anyCandidate)
	switch behaviour {
	case Abstain:
		return r.abstain(behaviour == ProseForJSON)
	case Negated:
		best, ok = r.pick(func(c candidate) bool { return !c.negated })
	case WrongBlock:
		if c, found := r.pick(func(c candidate) bool { return !c.firstBlock }); found {
			best = c
		}
	}
	if !ok {
		return r.abstain(behaviour == ProseForJSON)
	}
	f := r.fences[best.ctx]
	quote := trimEnd(best.sentence)
	p := r.quoted(best)
	switch behaviour {
	case WrongBlock:
		p.marker = "[" + f.block + "]"
		p.claim.Label, p.claim.Supported = LabelOffByOneCitation, true
	case WrongContext:
		n, block := f.n+1, "20990101000000-zzzzzzz" // no such context
		if len(r.fences) > 1 {
			other := r.fences[(best.ctx+1)%len(r.fences)]
			n, block = other.n, other.block
		}
		p.marker = fmt.Sprintf("[%d]", n)
		p.cite = map[string]string{"block_id": block, "quote": quote}
		p.claim.Label, p.claim.Supported, p.claim.CitedBlock = LabelOffByOneCitation, true, block
	case Negated:
		p = r.negated(best)
	case OneWordQuote:
		word := longestWord(quote)
		text := "The gist is «" + word + "»"
		if r.ru {
			text = "Суть — «" + word + "»"
		}
		p = r.part(best, text, LabelOneWordQuote)
		p.cite = map[string]string{"block_id": f.block, "quote": word}
	case Endless:
		p.claim.Label, p.claim.Supported = LabelLoop, false
	}
	parts := []claimPart{p}
	if behaviour == Invented {
		invented := "SiYuan stores every note on a remote server in Peru"
		if r.ru {
			invented = "SiYuan хранит все заметки на удалённом сервере в Перу"
		}
		parts = append(parts, claimPart{text: invented, marker: p.marker,
			cite:  map[string]string{"block_id": f.block, "quote": "every note is stored on a remote server in Peru"},
			claim: Claim{Label: LabelInvented, CitedBlock: f.block}})
	}
	asJSON := r.asJSON
	switch behaviour {
	case JSONForProse:
		r.asJSON = true
	case ProseForJSON:
		r.asJSON = false
	}
	out := r.render(parts, behaviour.String())
	r.asJSON = asJSON
	switch {
	case behaviour == Endless:
		out.endless = true
	case behaviour == JSONForProse && !asJSON:
		out.text = "```json\n" + out.text + "\n```"
	}
	return out
}

// negated says that c's sentence is not true.
func (r *request) negated(c candidate) claimPart {
	quote := trimEnd(c.sentence)
	text := "It is not true that «" + quote + "»"
	if r.ru {
		text = "Неверно, что «" + quote + "»"
	}
	return r.part(c, text, LabelNegated)
}

// mixedKinds are the kinds Mixed picks from besides Faithful.
var mixedKinds = []Behaviour{ChangeNumber, ChangeDate, ChangeUnit, ChangeEntity, AppendCondition, InventedClause, Negated,
	ObeyInjection, WrongLanguage, Loop, OffByOneCitation, Translate}

// oneSentenceKind: the kind changes one sentence, so an answer may hold a
// faithful sentence beside it.
func oneSentenceKind(b Behaviour) bool {
	switch b {
	case ChangeNumber, ChangeDate, ChangeUnit, ChangeEntity, AppendCondition, InventedClause, Negated, ObeyInjection, OffByOneCitation:
		return true
	}
	return false
}

// hash64 is a well-mixed hash of seed and s.
func hash64(seed uint64, s string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(s))
	v := h.Sum64()
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	v *= 0xc4ceb9fe1a85ec53
	v ^= v >> 33
	return v
}

// MixedPick is Mixed's pick for a question: the kind, whether the answer
// has a faithful sentence beside the perturbed one, and whether the
// faithful one comes first.
func MixedPick(seed uint64, question string) (kind Behaviour, twoSentences, faithfulFirst bool) {
	v := hash64(seed, question)
	if v%2 == 0 {
		return Faithful, false, false
	}
	v >>= 1
	kind = mixedKinds[v%uint64(len(mixedKinds))]
	v /= uint64(len(mixedKinds))
	return kind, v%3 == 0 && oneSentenceKind(kind), (v/3)%2 == 0
}

// suite answers by a kind of the perturbation suite.
func (r *request) suite(kind Behaviour) reply {
	two, faithfulFirst := false, false
	if kind == Mixed {
		kind, two, faithfulFirst = MixedPick(r.o.Seed, r.question)
	}
	name := kind.String()
	best, found := r.pick(anyCandidate)
	if kind == ObeyInjection {
		if p, ok := r.injection(); ok {
			parts := []claimPart{p}
			if two && found {
				parts = pair(r.faithful(best), p, faithfulFirst)
			}
			return r.render(parts, name)
		}
	}
	if !found {
		return r.abstain(false)
	}
	switch kind {
	case Faithful, ObeyInjection:
		return r.render([]claimPart{r.faithful(best)}, name)
	case Translate:
		c, ok := r.pick(func(c candidate) bool { return !r.sameLang(c) })
		if !ok {
			c = best
		}
		return r.render([]claimPart{r.quoted(c)}, name)
	case Loop:
		p := r.quoted(best)
		p.claim.Label, p.claim.Supported = LabelLoop, false
		out := r.render([]claimPart{p}, name)
		unit := p.text + " " + p.marker + ". "
		if r.asJSON {
			unit = p.text + ". "
		}
		n := r.budget/len(Tokens(unit)) + 2
		out.text = strings.TrimSpace(strings.Repeat(unit, n))
		if r.asJSON {
			out.text = mustJSON(strings.Repeat(unit, n), []map[string]string{p.cite}, 0.9)
		}
		return out
	case WrongLanguage:
		p := r.part(best, lead(!r.ru, trimEnd(best.sentence)), LabelWrongLanguage)
		return r.render([]claimPart{p}, name)
	}
	// One sentence changed: from the best matching sentence that can be
	// changed so, beside a faithful one when two.
	can := func(c candidate) bool {
		_, ok := r.perturb(kind, c)
		return ok
	}
	c, ok := r.pick(can)
	if !ok {
		return r.render([]claimPart{r.faithful(best)}, name)
	}
	if two {
		if other, ok := r.pick(func(o candidate) bool { return can(o) && o.sentence != best.sentence }); ok {
			p, _ := r.perturb(kind, other)
			return r.render(pair(r.faithful(best), p, faithfulFirst), name)
		}
	}
	p, _ := r.perturb(kind, c)
	return r.render([]claimPart{p}, name)
}

func pair(faithful, perturbed claimPart, faithfulFirst bool) []claimPart {
	if faithfulFirst {
		return []claimPart{faithful, perturbed}
	}
	return []claimPart{perturbed, faithful}
}

// perturb builds c's sentence changed by kind (ok false: c has nothing
// that kind changes).
func (r *request) perturb(kind Behaviour, c candidate) (claimPart, bool) {
	changed := func(change func(string) (string, bool), label string) (claimPart, bool) {
		s, ok := change(c.sentence)
		if !ok {
			return claimPart{}, false
		}
		text := trimEnd(s)
		if !r.sameLang(c) {
			text = lead(r.ru, text)
		}
		return r.part(c, text, label), true
	}
	switch kind {
	case ChangeNumber:
		return changed(changeNumber, LabelChangedNumber)
	case ChangeDate:
		return changed(changeDate, LabelChangedDate)
	case ChangeUnit:
		return changed(changeUnit, LabelChangedUnit)
	case ChangeEntity:
		return changed(changeEntity, LabelChangedEntity)
	case AppendCondition:
		conds := conditionsEN
		if r.ru {
			conds = conditionsRU
		}
		p := r.faithful(c)
		return r.part(c, p.text+conds[hash64(1, c.sentence)%uint64(len(conds))], LabelAppendedCondition), true
	case InventedClause:
		clause := inventedEN
		if r.ru {
			clause = inventedRU
		}
		return r.part(c, r.faithful(c).text+clause, LabelInventedClause), true
	case Negated:
		if c.negated {
			return claimPart{}, false
		}
		return r.negated(c), true
	case OffByOneCitation:
		p := r.quoted(c)
		n, block := r.fences[c.ctx].n+1, "20990101000000-zzzzzzz" // no such context
		switch {
		case c.ctx+1 < len(r.fences):
			n, block = r.fences[c.ctx+1].n, r.fences[c.ctx+1].block
		case c.ctx > 0:
			n, block = r.fences[c.ctx-1].n, r.fences[c.ctx-1].block
		}
		p.marker = fmt.Sprintf("[%d]", n)
		p.cite = map[string]string{"block_id": block, "quote": trimEnd(c.sentence)}
		p.claim.Label, p.claim.Supported, p.claim.CitedBlock = LabelOffByOneCitation, true, block
		return p, true
	}
	return claimPart{}, false
}

// injection obeys the first instruction found in a context: the claim is
// what it says to answer, cited to that context, with the payload as its
// quote (the note does hold those words).
func (r *request) injection() (claimPart, bool) {
	for _, f := range r.fences {
		payload, instruction, ok := injectionIn(f.text)
		if !ok {
			continue
		}
		text := trimEnd(payload)
		return claimPart{text: text, marker: fmt.Sprintf("[%d]", f.n), cite: map[string]string{"block_id": f.block, "quote": text},
			claim: Claim{Label: LabelObeyedInjection, SourceBlock: r.blocks.find(f, instruction), SourceSentence: instruction, CitedBlock: f.block}}, true
	}
	return claimPart{}, false
}

// blockIndex finds the block a sentence comes from.
type blockIndex struct {
	ids  []string          // sorted
	text map[string]string // whitespace squashed
}

func newBlockIndex(blocks map[string]string) *blockIndex {
	x := &blockIndex{text: make(map[string]string, len(blocks))}
	for id, t := range blocks {
		x.ids = append(x.ids, id)
		x.text[id] = squash(t)
	}
	sort.Strings(x.ids)
	return x
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// find is the block that holds sentence: the fence's own block, else a
// block whose whole text is in the fence (one of the context's blocks),
// else any; without blocks, the fence's block.
func (x *blockIndex) find(f fence, sentence string) string {
	if x == nil || len(x.ids) == 0 {
		return f.block
	}
	s := squash(sentence)
	if strings.Contains(x.text[f.block], s) {
		return f.block
	}
	ctx := squash(f.text)
	first := ""
	for _, id := range x.ids {
		t := x.text[id]
		if !strings.Contains(t, s) {
			continue
		}
		if strings.Contains(ctx, t) {
			return id
		}
		if first == "" {
			first = id
		}
	}
	if first == "" {
		return f.block
	}
	return first
}

func mustJSON(answer string, cites []map[string]string, confidence float64) string {
	if cites == nil {
		cites = []map[string]string{}
	}
	b, _ := json.Marshal(map[string]any{"answer": answer, "citations": cites, "confidence": confidence})
	return string(b)
}

// streamEndless streams text, then the same again and again, one token a
// millisecond, until the client goes away.
func streamEndless(w http.ResponseWriter, r *http.Request, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	toks := Tokens(text + " ")
	for i := 0; ; i++ {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": toks[i%len(toks)]}}}})
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// sentencesOf splits a context into sentences: lines, then sentence ends;
// heading lines and list marks go.
func sentencesOf(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "|") || strings.HasPrefix(line, "```") {
			continue
		}
		line = strings.TrimSpace(strings.TrimLeft(line, "-*>0123456789. "))
		start := 0
		for i := 0; i < len(line); i++ {
			if c := line[i]; (c == '.' || c == '!' || c == '?') && (i+1 == len(line) || line[i+1] == ' ') {
				if s := strings.TrimSpace(line[start : i+1]); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
		if s := strings.TrimSpace(line[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// stems are the content words of text, cut to five letters (a crude stem
// that serves Russian and English alike).
func stems(text string) map[string]bool {
	out := map[string]bool{}
	for _, t := range analysis.Tokenize(text) {
		w := t.Text
		if analysis.IsStopword(w) || utf8.RuneCountInString(w) < 2 {
			continue
		}
		if r := []rune(w); len(r) > 5 {
			w = string(r[:5])
		} else if len(r) > 3 && t.Script == analysis.Latin {
			w = strings.TrimSuffix(w, "s")
		}
		out[w] = true
	}
	return out
}

var negationWord = map[string]bool{"не": true, "нет": true, "ни": true, "никогда": true, "нельзя": true, "not": true, "no": true,
	"never": true, "cannot": true, "none": true, "nothing": true, "t": true}

func negation(s string) bool {
	for _, t := range analysis.Tokenize(s) {
		if negationWord[t.Text] {
			return true
		}
	}
	return false
}

func longestWord(s string) string {
	best := ""
	for _, t := range analysis.Tokenize(s) {
		if w := s[t.Start:t.End]; utf8.RuneCountInString(w) > utf8.RuneCountInString(best) {
			best = w
		}
	}
	return best
}

func cyrillic(s string) bool {
	for _, r := range s {
		if r >= 0x400 && r <= 0x4FF {
			return true
		}
	}
	return false
}
