package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ResearchKind is how the research stand-in errs: it plans, reads each
// document and returns facts as a capable but imperfect model does, and
// every kind of error it makes is labelled (Research.Labels), so that a
// measurement never relies on the pipeline's own checks.
type ResearchKind int

const (
	// ResearchFaithful is the control: facts are the documents' sentences
	// most related to the sub-question, copied, each cited to its block.
	ResearchFaithful ResearchKind = iota
	// ResearchNeighbourBlock cites the next block of the document (the one
	// before, for the last) for the facts it picks.
	ResearchNeighbourBlock
	// ResearchChangeNumber changes a ratio's last part (1:2:2 -> 1:2:5), a
	// time's minutes (02:00 -> 02:03), a year (2024 -> 2428) or a number
	// (times three plus seven), in that order of preference, citing the
	// block that holds the true one.
	ResearchChangeNumber
	// ResearchAddClause adds a condition the note does not state
	// (", but only in the paid edition", ", но только в платной версии").
	ResearchAddClause
	// ResearchContradict notices when a later document says otherwise
	// than a known fact (the same subject, other numbers, dates, times or
	// ratios): it lists the known fact as contradicted and
	// returns the other side as a new fact. The other kinds return the
	// other side as a plain new fact.
	ResearchContradict
	// ResearchDuplicate repeats a fact: verbatim, quoted in «» and as
	// "According to the note, ..." ("Согласно заметке, ..."), each a new
	// fact on the same block.
	ResearchDuplicate
	// ResearchMalformedOnce answers the first plan request and the first
	// fact-step request with JSON cut short, then well (as faithful).
	ResearchMalformedOnce
	// ResearchNeverJSON never answers in the shape asked: every plan, fact,
	// draft and report request gets prose, JSON cut short or an object
	// with the wrong keys, in turn.
	ResearchNeverJSON
	// ResearchStumbling mixes them: each picked fact is faithful about
	// half of the time, else neighbour-block, change-number, add-clause or
	// duplicate (a hash of the sentence and Seed picks); contradictions
	// are noticed; the first plan and fact-step replies are malformed.
	ResearchStumbling
)

var researchKindNames = [...]string{
	ResearchFaithful: "faithful", ResearchNeighbourBlock: "neighbour-block", ResearchChangeNumber: "change-number",
	ResearchAddClause: "add-clause", ResearchContradict: "contradict", ResearchDuplicate: "duplicate",
	ResearchMalformedOnce: "malformed-once", ResearchNeverJSON: "never-json", ResearchStumbling: "stumbling",
}

// String is the kind's name, as ParseResearchKind takes it.
func (k ResearchKind) String() string {
	if k >= 0 && int(k) < len(researchKindNames) {
		return researchKindNames[k]
	}
	return "research-kind(" + strconv.Itoa(int(k)) + ")"
}

// ResearchKindNames lists every kind's name.
func ResearchKindNames() []string { return append([]string(nil), researchKindNames[:]...) }

// ParseResearchKind reads a kind's name: "change-number", "change_number",
// "ChangeNumber" alike; "neighbor-block" is "neighbour-block".
func ParseResearchKind(name string) (ResearchKind, error) {
	k := strings.ReplaceAll(nameKey(name), "neighbor", "neighbour")
	if i := indexName(researchKindNames[:], k); i >= 0 {
		return ResearchKind(i), nil
	}
	return 0, fmt.Errorf("research stand-in kind %q: want one of %s", name, strings.Join(researchKindNames[:], ", "))
}

// The labels of the research stand-in's facts and replies
// (ResearchLabel.Label).
const (
	RLabelFaithful       = "faithful"
	RLabelNeighbourBlock = "neighbour_block"
	RLabelChangedRatio   = "changed_ratio"
	RLabelChangedTime    = "changed_time"
	RLabelChangedYear    = "changed_year"
	RLabelChangedNumber  = "changed_number"
	RLabelAddedClause    = "added_clause"
	// RLabelOtherSide is a new fact that says otherwise than a known fact
	// (its text is the note's own: it is true of its block).
	RLabelOtherSide         = "other_side"
	RLabelDuplicateVerbatim = "duplicate_verbatim"
	RLabelDuplicateQuoted   = "duplicate_quoted"
	RLabelDuplicateAccord   = "duplicate_according"
	// RLabelMalformed is a reply cut short; RLabelWrongShape one in prose
	// or with the wrong keys (no fact of them is true or false).
	RLabelMalformed  = "malformed"
	RLabelWrongShape = "wrong_shape"
	// RLabelReportSentence is a sentence the stand-in wrote in a report
	// (from the facts it cites); RLabelReportDisagreement one that puts two
	// facts that disagree side by side.
	RLabelReportSentence     = "report_sentence"
	RLabelReportDisagreement = "report_disagreement"
)

// ChangedLabel tells whether a fact so labelled says something its block
// does not (a changed number or an added clause).
func ChangedLabel(label string) bool {
	return slices.Contains([]string{RLabelChangedRatio, RLabelChangedTime, RLabelChangedYear, RLabelChangedNumber, RLabelAddedClause}, label)
}

// ResearchLabel is what the stand-in did in one fact of a fact step, or in
// a reply it made in the wrong shape, or in a report sentence.
type ResearchLabel struct {
	// Step is "plan", "facts", "draft" or "report"; Call numbers the
	// stand-in's requests of that step, from 1.
	Step string `json:"step"`
	Call int    `json:"call"`
	// Question is the research's question; SubQuestion and DocID the fact
	// step's.
	Question    string `json:"question,omitempty"`
	SubQuestion string `json:"sub_question,omitempty"`
	DocID       string `json:"doc_id,omitempty"`
	// Text is the fact (or report sentence) as the reply gives it.
	Text  string `json:"text,omitempty"`
	Label string `json:"label"`
	// SourceBlock holds SourceSentence, the note's sentence the fact was
	// made from; CitedBlock is the block the reply cites for it.
	SourceBlock    string `json:"source_block,omitempty"`
	SourceSentence string `json:"source_sentence,omitempty"`
	CitedBlock     string `json:"cited_block,omitempty"`
	// Supported: the text says what its source block says.
	Supported bool `json:"supported"`
	// Changed is what the text says in place of Original (a changed
	// number, or the clause added: Original empty).
	Changed  string `json:"changed,omitempty"`
	Original string `json:"original,omitempty"`
	// Of is the text of the fact this one repeats (duplicates) or says
	// otherwise than (other_side); OfID that fact's id in the prompt.
	Of   string `json:"of,omitempty"`
	OfID string `json:"of_id,omitempty"`
	// Reply is the reply's text for a malformed or wrong-shaped reply.
	Reply string `json:"reply,omitempty"`
}

// ResearchOptions configure the research stand-in.
type ResearchOptions struct {
	Kind ResearchKind
	// Seed varies which facts a kind alters (and, for stumbling, how).
	Seed uint64
	// Rate is the share of the facts a kind that alters facts alters
	// (0: one half; 1: every fact it can).
	Rate float64
	// MaxNew bounds the new facts per document (3), other sides aside.
	MaxNew int
	// SubQuestions, when set, are the plan; otherwise sub-questions are
	// made from the question in its language, as PlanFacts does.
	SubQuestions []string
	// Translations answer the translation requests: question -> language
	// -> the question in that language. The plan's sub-questions of a
	// question found here are translated too; any other question gets an
	// empty reply (no translation), never a wrong one.
	Translations map[string]map[string]string
}

// Research is the research stand-in: it answers the plan, fact-step,
// draft and report requests of a research and labels what it did.
type Research struct {
	opts ResearchOptions

	mu     sync.Mutex
	calls  map[string]int
	labels []ResearchLabel
}

// NewResearch returns a research stand-in.
func NewResearch(opts ResearchOptions) *Research {
	if opts.MaxNew <= 0 {
		opts.MaxNew = 3
	}
	if opts.Rate <= 0 {
		opts.Rate = 0.5
	}
	return &Research{opts: opts, calls: map[string]int{}}
}

// ResearchLabelsPath is where a server started by NewResearchServer gives
// the stand-in's labels as JSON ({"labels": [ResearchLabel...]}).
const ResearchLabelsPath = "/exocortex/research-labels"

// NewResearchServer starts a provider that the research stand-in answers
// (closed when the test ends); its labels are also served at
// ResearchLabelsPath.
func NewResearchServer(t testing.TB, opts ResearchOptions) (*Server, *Research) {
	t.Helper()
	s, r := StartResearchServer(opts)
	t.Cleanup(s.Close)
	return s, r
}

// StartResearchServer is NewResearchServer outside a test (eval
// --research --scripted): the caller closes the server.
func StartResearchServer(opts ResearchOptions) (*Server, *Research) {
	r := NewResearch(opts)
	s := &Server{answer: "OK.", responder: r.Responder(), research: r}
	s.srv = newHTTPServer(s)
	return s, r
}

// ResearchLabelsURL is the URL of the research stand-in's labels
// (ResearchLabelsPath).
func (s *Server) ResearchLabelsURL() string { return s.srv.URL + ResearchLabelsPath }

func (r *Research) serveLabels(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	labels := r.Labels()
	if labels == nil {
		labels = []ResearchLabel{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"labels": labels})
}

// Labels returns every label so far, in the order made.
func (r *Research) Labels() []ResearchLabel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ResearchLabel(nil), r.labels...)
}

// Calls is how many requests of each step ("plan", "facts", "draft",
// "report") the stand-in answered.
func (r *Research) Calls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.calls {
		out[k] = v
	}
	return out
}

// TotalCalls is how many requests the stand-in answered.
func (r *Research) TotalCalls() int {
	n := 0
	for _, v := range r.Calls() {
		n += v
	}
	return n
}

func (r *Research) label(l ResearchLabel) {
	r.mu.Lock()
	r.labels = append(r.labels, l)
	r.mu.Unlock()
}

// Responder answers the research requests; others are not its.
func (r *Research) Responder() Responder {
	return func(body ChatBody) (string, *Fault, bool) {
		var system, user string
		for _, m := range body.Messages {
			switch m.Role {
			case "system":
				system += m.Content
			case "user":
				// The first user message holds the request; later ones
				// (a repair or a retry with the parse error) do not.
				if user == "" {
					user = m.Content
				}
			}
		}
		if strings.HasPrefix(system, "Translate the question into") {
			return r.translate(strings.TrimSpace(user)), nil, true
		}
		var step string
		switch {
		case strings.Contains(system, planMarker):
			step = "plan"
		case strings.Contains(system, factsMarker):
			step = "facts"
		case strings.Contains(system, draftMarker):
			step = "draft"
		case strings.Contains(system, reportMarker):
			step = "report"
		default:
			return "", nil, false
		}
		r.mu.Lock()
		r.calls[step]++
		call := r.calls[step]
		r.mu.Unlock()
		question := ""
		if m := questionLine.FindStringSubmatch(user); m != nil {
			question = strings.TrimSpace(m[1])
		}
		if bad, ok := r.badReply(step, call, user); ok {
			r.label(ResearchLabel{Step: step, Call: call, Question: question, Label: bad.label, Reply: bad.text})
			return bad.text, nil, true
		}
		switch step {
		case "plan":
			pf := &PlanFacts{opts: PlanFactsOptions{SubQuestions: r.opts.SubQuestions}}
			return pf.plan(system, user), nil, true
		case "facts":
			return r.factStep(call, question, user), nil, true
		case "draft":
			return draftReply(user, true), nil, true
		default:
			return r.report(call, user, body.MaxTokens), nil, true
		}
	}
}

// planTemplates are the sub-questions PlanFacts makes of a question, in
// English and Russian, around the question's topic.
var planTemplates = [][2][2]string{
	{{"What do the notes say: ", "?"}, {"Что в заметках сказано: ", "?"}},
	{{"How is it used in practice: ", "?"}, {"Как это применяется на практике: ", "?"}},
	{{"Where do the notes disagree: ", "?"}, {"В чём заметки расходятся: ", "?"}},
}

// translate answers a translation request from Translations: the
// question's own, or a planned sub-question's, made of its question's.
func (r *Research) translate(question string) string {
	lines := func(m map[string]string) string {
		var out []string
		for l, t := range m {
			out = append(out, l+": "+t)
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	if m, ok := r.opts.Translations[question]; ok {
		return lines(m)
	}
	topic := func(q string) string { return strings.TrimRight(q, "?!. ") }
	for _, tp := range planTemplates {
		for from := range 2 {
			pre, post := tp[from][0], tp[from][1]
			if !strings.HasPrefix(question, pre) || !strings.HasSuffix(question, post) {
				continue
			}
			t := strings.TrimSuffix(strings.TrimPrefix(question, pre), post)
			for q, m := range r.opts.Translations {
				if topic(q) != t {
					continue
				}
				out := map[string]string{}
				for l, tr := range m {
					to := 0
					if l == "ru" {
						to = 1
					}
					out[l] = tp[to][0] + topic(tr) + tp[to][1]
				}
				return lines(out)
			}
		}
	}
	return ""
}

type badReply struct{ text, label string }

// badReply is the reply in the wrong shape that the kind gives to this
// request, if any.
func (r *Research) badReply(step string, call int, user string) (badReply, bool) {
	switch r.opts.Kind {
	case ResearchMalformedOnce, ResearchStumbling:
		if call == 1 && (step == "plan" || step == "facts") {
			return badReply{cutShort(step, user), RLabelMalformed}, true
		}
	case ResearchNeverJSON:
		switch call % 3 {
		case 1:
			return badReply{proseReply(step, cyrillic(user)), RLabelWrongShape}, true
		case 2:
			return badReply{cutShort(step, user), RLabelMalformed}, true
		default:
			return badReply{wrongKeys(step), RLabelWrongShape}, true
		}
	}
	return badReply{}, false
}

// cutShort is a reply of the step's shape that stops in the middle, as a
// model cut off by a dropped connection or a token limit writes.
func cutShort(step, user string) string {
	// Cut inside the first key, as a reply that hit its token limit at
	// once: no member is whole, so no repair can read anything from it.
	switch step {
	case "plan":
		return `{"sub_qu`
	case "facts":
		return "```json\n{\"ne"
	case "draft":
		return `{"the`
	}
	return `{"tit`
}

// proseReply answers in words, not the JSON asked.
func proseReply(step string, ru bool) string {
	if ru {
		return map[string]string{"plan": "Я бы начал с того, что посмотрел, что сказано в заметках, а потом сравнил бы их.",
			"facts":  "В этом документе есть кое-что полезное, но я опишу это своими словами: заметка говорит о проекте.",
			"draft":  "План отчёта: сначала факты, потом расхождения, потом вывод.",
			"report": "Вот отчёт о ваших заметках: в целом всё согласуется."}[step]
	}
	return map[string]string{"plan": "I would start by looking at what the notes say, and then compare them.",
		"facts":  "This document has something useful, but let me describe it in my own words: the note talks about the project.",
		"draft":  "Outline: first the facts, then the disagreements, then a conclusion.",
		"report": "Here is a report on your notes: overall they agree."}[step]
}

// wrongKeys is a JSON object that has none of the keys asked.
func wrongKeys(step string) string {
	switch step {
	case "plan":
		return `{"plan": "look at the notes", "steps": 3}`
	case "facts":
		return `{"facts_found": 2, "summary": "The document is about the project."}`
	case "draft":
		return `{"outline": "facts, then disagreements"}`
	}
	return `{"report": "Everything in the notes agrees.", "status": "ok"}`
}

// docBlock is one block of the fact step's document.
type docBlock struct{ id, text string }

// pickedSentence is a sentence the fact step may turn into a fact.
type pickedSentence struct {
	block    int // index into the document's blocks
	sentence string
	score    int
}

// factStep reads the document's blocks and the known facts from the
// prompt and returns the facts of the sentences most related to the
// sub-question, altered as the kind says, each labelled.
func (r *Research) factStep(call int, question, user string) string {
	sub, doc := subAndDoc(user)
	fs := researchFactStep{r: r, ru: cyrillic(sub), touched: map[string]bool{}, step: newFactStepReply(),
		base: ResearchLabel{Step: "facts", Call: call, Question: question, SubQuestion: sub, DocID: doc}}
	for _, m := range knownFactLine.FindAllStringSubmatch(user, -1) {
		fs.facts = append(fs.facts, knownFact{m[1], m[3]})
	}
	for _, m := range blockFence.FindAllStringSubmatch(user, -1) {
		fs.blocks = append(fs.blocks, docBlock{m[1], m[2]})
	}
	for _, p := range pickSentences(fs.blocks, stems(sub+" "+question)) {
		fs.take(p)
	}
	raw, _ := json.Marshal(fs.step)
	return string(raw)
}

// pickSentences lists the blocks' sentences by how many stems of the topic
// they hold, the most related first (document order among equals).
func pickSentences(blocks []docBlock, topic map[string]bool) []pickedSentence {
	var picks []pickedSentence
	for i, b := range blocks {
		for _, s := range sentencesOf(b.text) {
			st := stems(s)
			if len(st) < 3 {
				continue
			}
			score := 0
			for w := range st {
				if topic[w] {
					score++
				}
			}
			picks = append(picks, pickedSentence{block: i, sentence: s, score: score})
		}
	}
	sort.SliceStable(picks, func(i, j int) bool { return picks[i].score > picks[j].score })
	return picks
}

// knownFact is a known fact of the prompt.
type knownFact struct{ id, text string }

// researchFactStep is one fact step of the research stand-in: the
// prompt's blocks and known facts (id, text), and the reply so far.
type researchFactStep struct {
	r       *Research
	base    ResearchLabel
	ru      bool
	blocks  []docBlock
	facts   []knownFact
	touched map[string]bool // known facts already updated or contradicted
	added   int
	step    factStepReply
}

// take turns a picked sentence into the reply: a sentence on a known
// fact's subject is the same again (an update) or says otherwise (a
// contradiction, or a plain new fact); others are new facts, up to MaxNew,
// altered as the kind says.
func (fs *researchFactStep) take(p pickedSentence) {
	b := fs.blocks[p.block]
	for i, f := range fs.facts {
		if fs.touched[f.id] || !sameSubject(p.sentence, f.text) {
			continue
		}
		if differs(p.sentence, f.text) {
			fs.otherSide(p, b, fs.facts[i])
			return
		}
		fs.touched[f.id] = true
		fs.step.Updated = append(fs.step.Updated, stepFact{ID: f.id, Certainty: "high", BlockIDs: []string{b.id},
			Reasoning: inLang(fs.ru, "A second note says the same.", "Вторая заметка говорит то же.")})
		return
	}
	if fs.added >= fs.r.opts.MaxNew || p.score == 0 && fs.added > 0 {
		return
	}
	fs.added++
	for _, f := range fs.r.alter(p, fs.blocks, fs.ru) {
		l := fs.base
		l.Text, l.Label, l.SourceBlock, l.SourceSentence, l.CitedBlock = f.text, f.label, b.id, p.sentence, f.cited
		l.Supported, l.Changed, l.Original, l.Of = !ChangedLabel(f.label), f.changed, f.original, f.of
		fs.r.label(l)
		c := "medium"
		if hedge.MatchString(p.sentence) {
			c = "low"
		}
		fs.step.New = append(fs.step.New, stepFact{Text: f.text, Certainty: c, BlockIDs: []string{f.cited},
			Reasoning: inLang(fs.ru, "The note states it.", "Так сказано в заметке.")})
	}
}

// otherSide adds a sentence that says otherwise than the known fact
// other: a contradiction for the kinds that mark them, else a new fact.
func (fs *researchFactStep) otherSide(p pickedSentence, b docBlock, other knownFact) {
	fs.touched[other.id] = true
	l := fs.base
	l.Text, l.Label, l.SourceBlock, l.SourceSentence, l.CitedBlock, l.Supported = p.sentence, RLabelOtherSide, b.id, p.sentence, b.id, true
	l.Of, l.OfID = other.text, other.id
	fs.r.label(l)
	if fs.r.opts.Kind == ResearchContradict || fs.r.opts.Kind == ResearchStumbling {
		fs.step.Contradicted = append(fs.step.Contradicted, other.id)
		fs.step.New = append(fs.step.New, stepFact{Text: p.sentence, Certainty: "medium", BlockIDs: []string{b.id},
			Reasoning: inLang(fs.ru, "This note says otherwise than "+other.id+".", "Эта заметка говорит иначе, чем "+other.id+".")})
		return
	}
	fs.step.New = append(fs.step.New, stepFact{Text: p.sentence, Certainty: "medium", BlockIDs: []string{b.id},
		Reasoning: inLang(fs.ru, "The note states it.", "Так сказано в заметке.")})
}

// madeFact is a fact the kind made of a sentence.
type madeFact struct {
	text, label, cited    string
	changed, original, of string
}

// alter makes the facts of one sentence: the sentence itself, or the
// sentence altered by the kind (for a share Rate of the sentences, a hash
// of the sentence and Seed deciding).
func (r *Research) alter(p pickedSentence, blocks []docBlock, ru bool) []madeFact {
	b := blocks[p.block]
	faithful := madeFact{text: p.sentence, label: RLabelFaithful, cited: b.id}
	kind := r.opts.Kind
	h := hash64(r.opts.Seed, p.sentence)
	if kind == ResearchStumbling {
		if h%2 == 0 {
			return []madeFact{faithful}
		}
		kinds := []ResearchKind{ResearchNeighbourBlock, ResearchChangeNumber, ResearchAddClause, ResearchDuplicate}
		kind = kinds[(h>>1)%uint64(len(kinds))]
	} else if float64(h%1000) >= r.opts.Rate*1000 {
		return []madeFact{faithful}
	}
	switch kind {
	case ResearchNeighbourBlock:
		if len(blocks) < 2 {
			return []madeFact{faithful}
		}
		n := p.block + 1
		if n >= len(blocks) {
			n = p.block - 1
		}
		return []madeFact{{text: p.sentence, label: RLabelNeighbourBlock, cited: blocks[n].id}}
	case ResearchChangeNumber:
		text, label, changed, original, ok := changeResearchNumber(p.sentence)
		if !ok {
			return []madeFact{faithful}
		}
		return []madeFact{{text: text, label: label, cited: b.id, changed: changed, original: original}}
	case ResearchAddClause:
		conds := conditionsEN
		if cyrillic(p.sentence) {
			conds = conditionsRU
		}
		clause := conds[hash64(1, p.sentence)%uint64(len(conds))]
		return []madeFact{{text: trimEnd(p.sentence) + clause + ".", label: RLabelAddedClause, cited: b.id, changed: strings.TrimPrefix(clause, ", ")}}
	case ResearchDuplicate:
		core := trimEnd(p.sentence)
		quoted, according := "«"+core+"»", "According to the note, "+lowerFirst(core)+"."
		if cyrillic(p.sentence) {
			according = "Согласно заметке, " + lowerFirst(core) + "."
		}
		return []madeFact{faithful,
			{text: p.sentence, label: RLabelDuplicateVerbatim, cited: b.id, of: p.sentence},
			{text: quoted, label: RLabelDuplicateQuoted, cited: b.id, of: p.sentence},
			{text: according, label: RLabelDuplicateAccord, cited: b.id, of: p.sentence}}
	}
	return []madeFact{faithful}
}

func lowerFirst(s string) string {
	for i, r := range s {
		if i == 0 && r >= 'A' && r <= 'Z' && !(len(s) > 1 && s[1] >= 'A' && s[1] <= 'Z') {
			return string(r+('a'-'A')) + s[1:]
		}
		if i == 0 && r >= 'А' && r <= 'Я' {
			return string(r+('а'-'А')) + s[len(string(r)):]
		}
		break
	}
	return s
}

var (
	ratioRE = regexp.MustCompile(`\b\d+(?::\d+){2,}\b`)
	timeRE  = regexp.MustCompile(`\b([01]?\d|2[0-3]):([0-5]\d)\b`)
	yearRE  = regexp.MustCompile(`\b(?:19|20)\d{2}\b`)
)

// changeResearchNumber changes the first ratio (its last part plus
// three: 1:2:2 -> 1:2:5), else the first time (its minutes plus three:
// 02:00 -> 02:03), else the first year (plus 404: 2024 -> 2428), else the
// first plain number (times three plus seven).
func changeResearchNumber(s string) (text, label, changed, original string, ok bool) {
	if m := ratioRE.FindStringIndex(s); m != nil {
		orig := s[m[0]:m[1]]
		parts := strings.Split(orig, ":")
		last, _ := strconv.Atoi(parts[len(parts)-1])
		parts[len(parts)-1] = strconv.Itoa(last + 3)
		ch := strings.Join(parts, ":")
		return s[:m[0]] + ch + s[m[1]:], RLabelChangedRatio, ch, orig, true
	}
	for _, m := range timeRE.FindAllStringSubmatchIndex(s, -1) {
		if ratioRE.MatchString(s[m[0]:]) && strings.HasPrefix(s[m[0]:], ratioRE.FindString(s[m[0]:])) {
			continue
		}
		orig := s[m[0]:m[1]]
		mins, _ := strconv.Atoi(s[m[4]:m[5]])
		ch := s[m[2]:m[3]] + ":" + fmt.Sprintf("%02d", (mins+3)%60)
		return s[:m[0]] + ch + s[m[1]:], RLabelChangedTime, ch, orig, true
	}
	if m := yearRE.FindStringIndex(s); m != nil {
		orig := s[m[0]:m[1]]
		y, _ := strconv.Atoi(orig)
		ch := strconv.Itoa(y + 404)
		return s[:m[0]] + ch + s[m[1]:], RLabelChangedYear, ch, orig, true
	}
	if ns := numbersIn(s); len(ns) > 0 {
		sp := ns[0]
		orig := s[sp.start:sp.end]
		ch := changedNumber(orig)
		return s[:sp.start] + ch + s[sp.end:], RLabelChangedNumber, ch, orig, true
	}
	return s, "", "", "", false
}

// numberTokenRE finds the numbers, times, ratios and years of a text.
var numberTokenRE = regexp.MustCompile(`\d+(?:[.,:]\d+)*`)

func numberTokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range numberTokenRE.FindAllString(s, -1) {
		out[t] = true
	}
	return out
}

// sameSubject: two sentences share at least half of the smaller one's
// content words, numbers aside; or both give a ratio of three or more
// parts (the same recipe's, in whatever language).
func sameSubject(a, b string) bool {
	if ratioRE.MatchString(a) && ratioRE.MatchString(b) {
		return true
	}
	sa, sb := wordStems(a), wordStems(b)
	if len(sa) < 2 || len(sb) < 2 {
		return false
	}
	shared := 0
	for w := range sa {
		if sb[w] {
			shared++
		}
	}
	return shared*2 >= min(len(sa), len(sb))
}

// wordStems are stems without numbers.
func wordStems(s string) map[string]bool {
	out := stems(s)
	for w := range out {
		if strings.IndexFunc(w, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
			delete(out, w)
		}
	}
	return out
}

// differs: both sentences give numbers (times, dates, ratios), and not
// the same ones.
func differs(a, b string) bool {
	na, nb := numberTokens(a), numberTokens(b)
	if len(na) == 0 || len(nb) == 0 {
		return false
	}
	for t := range na {
		if !nb[t] {
			return true
		}
	}
	for t := range nb {
		if !na[t] {
			return true
		}
	}
	return false
}

// report writes the final report from the prompt's facts, with the
// disagreements between them side by side, and labels its sentences.
func (r *Research) report(call int, user string, budget int) string {
	reply := reportReply(user, DraftReportOptions{Disagreements: true}, budget)
	question, _, _, facts := parseResearchPrompt(user)
	var out struct {
		Summary       []scriptedSentence                       `json:"summary"`
		Sections      []struct{ Sentences []scriptedSentence } `json:"sections"`
		Disagreements []scriptedSentence                       `json:"disagreements"`
		Conclusion    []scriptedSentence                       `json:"conclusion"`
	}
	_ = json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(reply, "```json\n"), "\n```")), &out)
	byID := map[string]string{}
	for _, f := range facts {
		byID[f.ID] = f.Text
	}
	note := func(s scriptedSentence, label string) {
		var of []string
		for _, id := range s.Facts {
			of = append(of, byID[id])
		}
		r.label(ResearchLabel{Step: "report", Call: call, Question: question, Text: s.Text, Label: label, Of: strings.Join(of, " | "), Supported: true})
	}
	all := append(append([]scriptedSentence(nil), out.Summary...), out.Conclusion...)
	for _, sec := range out.Sections {
		all = append(all, sec.Sentences...)
	}
	for _, s := range all {
		note(s, RLabelReportSentence)
	}
	for _, s := range out.Disagreements {
		note(s, RLabelReportDisagreement)
	}
	return reply
}
