package llmtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Markers of the research prompts (research.PlanMarker, research.FactsMarker).
const (
	planMarker  = "You plan research"
	factsMarker = "You extract facts"
)

// PlanFactsOptions configure the scripted plan and fact-step replies.
type PlanFactsOptions struct {
	// SubQuestions, when set, are the plan (as many as the prompt asks for
	// at most); otherwise sub-questions are made from the question, in its
	// language.
	SubQuestions []string
	// MaxNew bounds the new facts per document (2).
	MaxNew int
	// Invent adds to every fact step a new fact that cites the document's
	// first block but says something no block says (the verifier must
	// drop it).
	Invent bool
	// Delay is a fixed latency before every reply (a slow provider).
	Delay time.Duration
	// Fault, when set, is asked before each fact step with the
	// sub-question, the document's id and how many fact steps of that
	// sub-question and document came before; a non-nil fault is served
	// instead of the reply.
	Fault func(subQuestion, docID string, before int) *Fault
	// Prose answers the fact steps with words around the JSON, in a
	// ```json fence, as chatty models do.
	Prose bool
}

// PlanFacts answers the research plan and fact-step requests from their
// prompts, as a model would, and counts them.
type PlanFacts struct {
	opts PlanFactsOptions

	mu    sync.Mutex
	plans int
	facts map[[2]string]int // (sub-question, doc id) -> fact steps answered
	tries map[[2]string]int // (sub-question, doc id) -> fact steps asked (faults included)
}

// NewPlanFacts returns a scripted plan and fact-step provider.
func NewPlanFacts(opts PlanFactsOptions) *PlanFacts {
	if opts.MaxNew <= 0 {
		opts.MaxNew = 2
	}
	return &PlanFacts{opts: opts, facts: map[[2]string]int{}, tries: map[[2]string]int{}}
}

// PlanFactsResponder is NewPlanFacts(opts).Responder().
func PlanFactsResponder(opts PlanFactsOptions) Responder { return NewPlanFacts(opts).Responder() }

// Plans is how many plan requests were answered.
func (p *PlanFacts) Plans() int { p.mu.Lock(); defer p.mu.Unlock(); return p.plans }

// FactSteps is how many fact steps were answered (faults not counted).
func (p *PlanFacts) FactSteps() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, v := range p.facts {
		n += v
	}
	return n
}

// FactStepsOf is how many fact steps of a sub-question and document were
// answered, and how many were asked (faults included).
func (p *PlanFacts) FactStepsOf(subQuestion, docID string) (answered, asked int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [2]string{subQuestion, docID}
	return p.facts[k], p.tries[k]
}

// Responder answers the plan and fact-step requests; others are not its.
func (p *PlanFacts) Responder() Responder {
	return func(body ChatBody) (string, *Fault, bool) {
		var system, user string
		for _, m := range body.Messages {
			switch m.Role {
			case "system":
				system += m.Content
			case "user":
				user = m.Content
			}
		}
		var reply string
		var fault *Fault
		switch {
		case strings.HasPrefix(system, planMarker):
			p.mu.Lock()
			p.plans++
			p.mu.Unlock()
			reply = p.plan(system, user)
		case strings.HasPrefix(system, factsMarker):
			reply, fault = p.factStep(user)
		default:
			return "", nil, false
		}
		if fault == nil && p.opts.Delay > 0 {
			fault = &Fault{Kind: Slow, Delay: p.opts.Delay}
		}
		return reply, fault, true
	}
}

var planRange = regexp.MustCompile(`into (\d+) to (\d+) sub-questions`)

func (p *PlanFacts) plan(system, user string) string {
	question := strings.TrimSpace(strings.TrimPrefix(user, "Question:"))
	hi := 5
	if m := planRange.FindStringSubmatch(system); m != nil {
		fmt.Sscan(m[2], &hi)
	}
	ru := cyrillic(question)
	type item struct {
		Question string `json:"question"`
		Why      string `json:"why"`
	}
	var items []item
	if len(p.opts.SubQuestions) > 0 {
		for _, q := range p.opts.SubQuestions {
			why := "It answers part of the question."
			if cyrillic(q) {
				why = "Это часть ответа на вопрос."
			}
			items = append(items, item{q, why})
		}
	} else {
		topic := strings.TrimRight(question, "?!. ")
		if ru {
			items = []item{{"Что в заметках сказано: " + topic + "?", "Это основа ответа."},
				{"Как это применяется на практике: " + topic + "?", "Практика показывает, что работает."},
				{"В чём заметки расходятся: " + topic + "?", "Расхождения нужно назвать."}}
		} else {
			items = []item{{"What do the notes say: " + topic + "?", "It is the ground of the answer."},
				{"How is it used in practice: " + topic + "?", "Practice shows what works."},
				{"Where do the notes disagree: " + topic + "?", "Disagreements must be named."}}
		}
	}
	if len(items) > hi {
		items = items[:hi]
	}
	b, _ := json.Marshal(map[string]any{"sub_questions": items})
	return string(b)
}

var (
	subQuestionLine = regexp.MustCompile(`(?m)^Sub-question: (.*)$`)
	knownFactLine   = regexp.MustCompile(`(?m)^- (f\d+) \[(\w*)\]: (.*)$`)
	documentOpen    = regexp.MustCompile(`<document id="([^"]*)"`)
	blockFence      = regexp.MustCompile(`(?s)<block id="([^"]*)" section="[^"]*">\n(.*?)\n</block>`)
	hedge           = regexp.MustCompile(`(?i)\b(maybe|perhaps|probably|might|seems)\b|возможно|кажется|наверное|вероятно`)
)

type stepFact struct {
	ID        string   `json:"id,omitempty"`
	Text      string   `json:"text,omitempty"`
	Certainty string   `json:"certainty,omitempty"`
	Reasoning string   `json:"reasoning"`
	BlockIDs  []string `json:"block_ids"`
}

// factStep reads the known facts and the document's blocks from the prompt:
// a sentence that says what a known fact says again raises its certainty
// (updated); one that says the opposite (negation in one, not the other)
// contradicts it and is a new fact; other sentences are new facts (up to
// MaxNew), low certainty when hedged ("maybe", "возможно"), medium else.
func (p *PlanFacts) factStep(user string) (string, *Fault) {
	sub, doc := subAndDoc(user)
	if f := p.count(sub, doc); f != nil {
		return "", f
	}
	var facts []planKnown
	for _, m := range knownFactLine.FindAllStringSubmatch(user, -1) {
		facts = append(facts, planKnown{m[1], m[2], m[3]})
	}
	ru := cyrillic(sub)
	step := newFactStepReply()
	touched := map[string]bool{}
	var firstBlock string
	for _, m := range blockFence.FindAllStringSubmatch(user, -1) {
		id, text := m[1], m[2]
		if firstBlock == "" {
			firstBlock = id
		}
		for _, s := range sentencesOf(text) {
			st := stems(s)
			if len(st) < 3 {
				continue
			}
			if f, ok := matchKnown(st, facts, touched); ok {
				touched[f.id] = true
				if negation(s) != negation(f.text) {
					step.Contradicted = append(step.Contradicted, f.id)
					step.New = append(step.New, stepFact{Text: s, Certainty: "medium", BlockIDs: []string{id},
						Reasoning: inLang(ru, "This document says the opposite of "+f.id+".", "Этот документ говорит обратное "+f.id+".")})
				} else {
					step.Updated = append(step.Updated, stepFact{ID: f.id, Certainty: "high", BlockIDs: []string{id},
						Reasoning: inLang(ru, "A second note says the same.", "Вторая заметка говорит то же.")})
				}
				continue
			}
			if len(step.New) >= p.opts.MaxNew {
				continue
			}
			c := "medium"
			if hedge.MatchString(s) {
				c = "low"
			}
			step.New = append(step.New, stepFact{Text: s, Certainty: c, BlockIDs: []string{id},
				Reasoning: inLang(ru, "The note states it.", "Так сказано в заметке.")})
		}
	}
	if p.opts.Invent && firstBlock != "" {
		step.New = append(step.New, stepFact{Text: inLang(ru, "The moon landing was filmed in a studio in Nevada.", "Высадку на Луну снимали в студии в Неваде."),
			Certainty: "high", BlockIDs: []string{firstBlock}, Reasoning: "invented"})
	}
	b, _ := json.Marshal(step)
	if p.opts.Prose {
		return "Here is what this document adds:\n```json\n" + string(b) + "\n```\nDone.", nil
	}
	return string(b), nil
}

// count counts a fact-step request of (sub, doc) and returns the fault the
// options give its try, if any; a request with no fault counts as facts.
func (p *PlanFacts) count(sub, doc string) *Fault {
	k := [2]string{sub, doc}
	p.mu.Lock()
	before := p.tries[k]
	p.tries[k]++
	p.mu.Unlock()
	if p.opts.Fault != nil {
		if f := p.opts.Fault(sub, doc, before); f != nil {
			return f
		}
	}
	p.mu.Lock()
	p.facts[k]++
	p.mu.Unlock()
	return nil
}

// planKnown is a known fact of the prompt.
type planKnown struct{ id, certainty, text string }

// matchKnown finds the first untouched known fact that shares 60% of the
// stems of the shorter of it and the sentence (stems st).
func matchKnown(st map[string]bool, facts []planKnown, touched map[string]bool) (planKnown, bool) {
	for _, f := range facts {
		if touched[f.id] {
			continue
		}
		fs := stems(f.text)
		shared := 0
		for w := range st {
			if fs[w] {
				shared++
			}
		}
		if shared*10 < 6*min(len(st), len(fs)) {
			continue
		}
		return f, true
	}
	return planKnown{}, false
}

// factStepReply is the fact step's reply.
type factStepReply struct {
	New          []stepFact `json:"new"`
	Updated      []stepFact `json:"updated"`
	Contradicted []string   `json:"contradicted"`
}

// newFactStepReply is an empty reply: its lists [] rather than null.
func newFactStepReply() factStepReply {
	return factStepReply{New: []stepFact{}, Updated: []stepFact{}, Contradicted: []string{}}
}

// subAndDoc reads the fact-step prompt's sub-question and document id.
func subAndDoc(user string) (sub, doc string) {
	if m := subQuestionLine.FindStringSubmatch(user); m != nil {
		sub = strings.TrimSpace(m[1])
	}
	if m := documentOpen.FindStringSubmatch(user); m != nil {
		doc = m[1]
	}
	return sub, doc
}

// inLang is en, or rus when ru.
func inLang(ru bool, en, rus string) string {
	if ru {
		return rus
	}
	return en
}
