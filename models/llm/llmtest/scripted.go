package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/exocortex/exocortex/analysis"
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
)

// ScriptOptions configure a scripted provider.
type ScriptOptions struct {
	Behaviour Behaviour
	// Translations answer the translation requests: question -> language ->
	// the question in that language. They also let the provider match a
	// question with contexts in another language.
	Translations map[string]map[string]string
}

// NewScripted starts a fake provider that answers each request from its own
// content, as a real model would: an answer request (contexts fenced as
// <context n="N" block="ID" title=".." section="..">TEXT</context>, then
// "Question: ...") per opts.Behaviour; a translation request (a system
// message starting "Translate the question into", the question as the user
// message) with one "<lang>: <translation>" line per language known for the
// question; a follow-up request with three questions; a rewrite request
// with the last question. JSON is asked by response_format json_schema or
// by a system message asking for a JSON object.
func NewScripted(t testing.TB, opts ScriptOptions) *Server {
	t.Helper()
	s := &Server{scripted: &opts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
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

type scriptedBody struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// scriptedReply is the reply to one request; endless says to stream it and
// more without end.
func scriptedReply(o ScriptOptions, raw []byte) (reply string, endless bool) {
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
		return translate(o, strings.TrimSpace(user)), false
	case strings.Contains(user, "<context n="):
		asJSON := (b.ResponseFormat != nil && b.ResponseFormat.Type == "json_schema") || strings.Contains(system, "JSON object")
		return answerFrom(o, system, user, asJSON)
	case strings.Contains(strings.ToLower(system), "follow-up"):
		if strings.Contains(system, "Russian") {
			return "Как это настроить?\nГде это хранится?\nМожно ли это отключить?", false
		}
		return "How do I set it up?\nWhere is it stored?\nCan I turn it off?", false
	case strings.HasPrefix(system, "Rewrite"):
		if i := strings.LastIndex(user, "Last question:"); i >= 0 {
			return strings.TrimSpace(user[i+len("Last question:"):]), false
		}
		return strings.TrimSpace(user), false
	}
	return "OK.", false
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

var fenceRE = regexp.MustCompile(`(?s)<context n="(\d+)" block="([^"]*)" title="(?:[^"\\]|\\.)*" section="(?:[^"\\]|\\.)*">\n(.*?)\n</context>`)

type fence struct {
	n     int
	block string
	text  string
}

// candidate is one sentence of a context.
type candidate struct {
	ctx        int // index into the fences
	sentence   string
	firstBlock bool // in the context's first paragraph (its first block, usually)
	negated    bool
	score      float64 // share of the question's words it holds
	hits       int
}

func answerFrom(o ScriptOptions, system, user string, asJSON bool) (string, bool) {
	var fences []fence
	for _, m := range fenceRE.FindAllStringSubmatch(user, -1) {
		n, _ := strconv.Atoi(m[1])
		fences = append(fences, fence{n: n, block: m[2], text: m[3]})
	}
	question := user
	if i := strings.LastIndex(user, "Question:"); i >= 0 {
		question = strings.TrimSpace(user[i+len("Question:"):])
		if nl := strings.IndexByte(question, '\n'); nl >= 0 {
			question = question[:nl]
		}
	}
	ru := strings.Contains(system, "in Russian") || (!strings.Contains(system, "in English") && cyrillic(question))
	versions := []string{question}
	for _, t := range o.Translations[question] {
		versions = append(versions, t)
	}
	var cands []candidate
	for i, f := range fences {
		first := f.text
		if k := strings.Index(first, "\n\n"); k >= 0 {
			first = first[:k]
		}
		for _, s := range sentencesOf(f.text) {
			if len(stems(s)) < 3 || strings.ContainsAny(s, "«»") {
				continue
			}
			c := candidate{ctx: i, sentence: s, firstBlock: strings.Contains(first, s), negated: negation(s)}
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
			cands = append(cands, c)
		}
	}
	pick := func(ok func(candidate) bool) (candidate, bool) {
		best, found := candidate{}, false
		for _, c := range cands {
			if c.score >= 0.5 && ok(c) && (!found || c.score > best.score || (c.score == best.score && c.hits > best.hits)) {
				best, found = c, true
			}
		}
		return best, found
	}
	behaviour := o.Behaviour
	abstain := func() string {
		text := "The notes do not say anything about this."
		if ru {
			text = "В заметках не сказано об этом."
		}
		if asJSON && behaviour != ProseForJSON {
			return mustJSON(text, nil, 0.1)
		}
		return text
	}
	best, ok := pick(func(candidate) bool { return true })
	switch behaviour {
	case Abstain:
		return abstain(), false
	case Negated:
		best, ok = pick(func(c candidate) bool { return !c.negated })
	case WrongBlock:
		if c, found := pick(func(c candidate) bool { return !c.firstBlock }); found {
			best = c
		}
	}
	if !ok {
		return abstain(), false
	}
	f := fences[best.ctx]
	quote := strings.TrimRight(best.sentence, ".!?;: ")
	lead := "According to the notes, «%s»"
	if ru {
		lead = "В заметках сказано: «%s»"
	}
	claim := fmt.Sprintf(lead, quote)
	marker := fmt.Sprintf("[%d]", f.n)
	block := f.block
	cite := []map[string]string{{"block_id": block, "quote": quote}}
	switch behaviour {
	case WrongBlock:
		marker = "[" + f.block + "]"
	case WrongContext:
		n, block := f.n+1, "20990101000000-zzzzzzz" // no such context
		if len(fences) > 1 {
			other := fences[(best.ctx+1)%len(fences)]
			n, block = other.n, other.block
		}
		marker = fmt.Sprintf("[%d]", n)
		cite = []map[string]string{{"block_id": block, "quote": quote}}
	case Negated:
		claim = "It is not true that «" + quote + "»"
		if ru {
			claim = "Неверно, что «" + quote + "»"
		}
	case OneWordQuote:
		word := longestWord(quote)
		claim = "The gist is «" + word + "»"
		if ru {
			claim = "Суть — «" + word + "»"
		}
		cite = []map[string]string{{"block_id": block, "quote": word}}
	}
	prose := claim + " " + marker + "."
	js := mustJSON(claim+".", cite, 0.9)
	if behaviour == Invented {
		invented := "SiYuan stores every note on a remote server in Peru"
		if ru {
			invented = "SiYuan хранит все заметки на удалённом сервере в Перу"
		}
		prose += " " + invented + " " + marker + "."
		js = mustJSON(claim+". "+invented+".", append(cite, map[string]string{"block_id": block, "quote": "every note is stored on a remote server in Peru"}), 0.9)
	}
	switch {
	case behaviour == Endless:
		return prose, true
	case behaviour == JSONForProse && !asJSON:
		return "```json\n" + js + "\n```", false
	case behaviour == ProseForJSON:
		return prose, false
	case asJSON:
		return js, false
	}
	return prose, false
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
