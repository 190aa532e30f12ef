package research

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// parseError is a reply that could not be read: its message says why (for
// the retry's "Your reply was not valid JSON: ..."), and it is kind
// (errors.Is).
type parseError struct {
	err  error
	kind error
}

func (e *parseError) Error() string        { return e.err.Error() }
func (e *parseError) Unwrap() error        { return e.err }
func (e *parseError) Is(target error) bool { return target == e.kind }

// ErrUnusableReply is the kind of every parse error of an outline or
// report reply.
var ErrUnusableReply = errors.New("research: the reply is not the JSON asked for")

// Keys, in normKey form, that the research replies' fields go by.
var (
	newKeys     = []string{"new", "new_facts", "facts", "added", "new_fact", "новые", "факты"}
	updatedKeys = []string{"updated", "updated_facts", "updates", "changed", "confirmed", "обновлённые", "обновленные"}
	contraKeys  = []string{"contradicted", "contradictions", "contradicted_ids", "contradicted_facts", "contradicts", "противоречит"}

	factTextKeys = []string{"text", "fact", "statement", "claim", "content", "sentence", "факт", "текст"}
	factIDKeys   = []string{"id", "fact_id"}
	certKeys     = []string{"certainty", "confidence", "certainty_level", "уверенность"}
	reasonKeys   = []string{"reasoning", "reason", "why", "rationale", "explanation", "обоснование"}
	blockKeys    = []string{"block_ids", "blocks", "block_id", "block", "source_blocks", "sources", "source_ids", "citations", "ids", "блоки"}
)

var factIDForm = regexp.MustCompile(`^[Ff]\d+$`)

// ParseFactStep reads a fact step reply: a JSON object with "new",
// "updated" and "contradicted" (or other spellings: "newFacts", "facts",
// "updates", "contradictions"; keys in any case), or an array of new facts;
// repaired as jsonCandidates does (code fences, text around it, single
// quotes, trailing commas, a cut-off end). A fact's fields may go by other
// names too ("fact", "confidence", "blocks", "source"), its blocks may be
// one string, its certainty a number; a lone id may be a number or an
// object {"id": ...}. The error, when there is no fact step, wraps
// ErrUnparsable and says what is wrong with the reply.
func ParseFactStep(reply string) (FactStep, error) {
	values, err := replyValues(reply)
	for _, v := range values {
		if step, ok := factStepOf(v); ok {
			return step, nil
		}
	}
	if err == nil {
		err = errors.New(`the JSON object has none of "new", "updated", "contradicted"`)
	}
	return FactStep{}, &parseError{err: err, kind: ErrUnparsable}
}

func factStepOf(v any) (FactStep, bool) {
	var step FactStep
	switch t := v.(type) {
	case []any:
		for _, it := range t {
			if f, ok := stepFactOf(it); ok {
				step.New = append(step.New, f)
			}
		}
		return step, len(step.New) > 0
	case map[string]any:
		nv, hasNew := field(t, newKeys...)
		uv, hasUpd := field(t, updatedKeys...)
		cv, hasCon := field(t, contraKeys...)
		if !hasNew && !hasUpd && !hasCon {
			if has(t, "new") || has(t, "updated") || has(t, "contradicted") {
				return step, true // {"new": null, ...}: nothing new
			}
			if len(t) == 1 {
				for _, x := range t {
					return factStepOf(x) // a one-key wrapper
				}
			}
			return step, false
		}
		for _, it := range list(nv) {
			if f, ok := stepFactOf(it); ok {
				step.New = append(step.New, f)
			}
		}
		for _, it := range list(uv) {
			if f, ok := stepFactOf(it); ok && f.ID != "" {
				step.Updated = append(step.Updated, f)
			}
		}
		for _, id := range ids(cv, "f") {
			step.Contradicted = append(step.Contradicted, factIDCase(id))
		}
		return step, true
	}
	return step, false
}

// factIDCase writes a fact id as the prompt does: "F3" is "f3".
func factIDCase(id string) string {
	if factIDForm.MatchString(id) {
		return strings.ToLower(id)
	}
	return id
}

// stepFactOf reads one fact of a fact step: an object (its fields under
// their names or others) or a bare sentence.
func stepFactOf(v any) (StepFact, bool) {
	switch t := v.(type) {
	case string:
		s := strings.TrimSpace(t)
		return StepFact{Text: s}, s != ""
	case map[string]any:
		canon := make(map[string]any, len(t))
		for k, x := range t {
			canon[k] = x
		}
		set := func(name string, keys []string, conv func(any) any) {
			if x, ok := field(t, keys...); ok {
				canon[name] = conv(x)
			} else {
				delete(canon, name)
			}
		}
		set("text", factTextKeys, func(x any) any { return text(x, "text") })
		set("id", factIDKeys, func(x any) any {
			if n, ok := x.(float64); ok {
				return fmt.Sprintf("f%d", int(n))
			}
			return factIDCase(text(x, "id"))
		})
		set("certainty", certKeys, func(x any) any { return certaintyOf(x) })
		set("reasoning", reasonKeys, func(x any) any { return text(x, "text") })
		set("block_ids", blockKeys, func(x any) any { return ids(x, "") })
		raw, _ := json.Marshal(canon)
		var f StepFact
		if json.Unmarshal(raw, &f) != nil {
			// A field of another shape than StepFact's: keep the known ones.
			f = StepFact{}
			f.Text, _ = canon["text"].(string)
			f.ID, _ = canon["id"].(string)
			f.Certainty, _ = canon["certainty"].(string)
			f.Reasoning, _ = canon["reasoning"].(string)
			f.BlockIDs, _ = canon["block_ids"].([]string)
		}
		return f, f.Text != "" || f.ID != ""
	}
	return StepFact{}, false
}

// certaintyOf is a certainty as a word: numbers (0.9, 90) become high,
// medium or low.
func certaintyOf(v any) string {
	n, ok := v.(float64)
	if !ok {
		return text(v, "level", "value")
	}
	if n > 1 {
		n /= 100
	}
	switch {
	case n >= 0.8:
		return "high"
	case n >= 0.5:
		return "medium"
	}
	return "low"
}

// Outline is the supervisor's outline of the report: its themes, where the
// facts disagree, and the gaps: sub-questions the facts do not answer yet,
// which may be researched again.
type Outline struct {
	Themes        []OutlineItem `json:"themes"`
	Disagreements []OutlineItem `json:"disagreements"`
	Gaps          []SubQuestion `json:"gaps,omitempty"`
}

// OutlineItem is a theme (Title) or a disagreement (Text) with the ids of
// the facts it rests on.
type OutlineItem struct {
	Title string   `json:"title,omitempty"`
	Text  string   `json:"text,omitempty"`
	Facts []string `json:"facts"`
}

var (
	themeKeys    = []string{"themes", "sections", "outline", "topics", "темы", "разделы"}
	disagreeKeys = []string{"disagreements", "conflicts", "contradictions", "disagreement", "расхождения", "противоречия"}
	gapKeys      = []string{"gaps", "gap", "follow_ups", "follow_up", "followups", "follow_up_questions", "open_questions",
		"unanswered", "missing", "пробелы"}
	factsKeys = []string{"facts", "fact_ids", "facts_ids", "citations", "cites", "sources", "refs", "факты"}
)

// ParseOutline reads the supervisor's outline reply, repaired as
// jsonCandidates does: {"themes": [...], "disagreements": [...], "gaps":
// [...]} under these names or others; a gap is a sub-question (a string or
// {"question", "why"}). The error wraps ErrUnusableReply.
func ParseOutline(reply string) (Outline, error) {
	values, err := replyValues(reply)
	for _, v := range values {
		m, ok := unwrap(v).(map[string]any)
		if !ok {
			continue
		}
		tv, hasT := field(m, themeKeys...)
		dv, hasD := field(m, disagreeKeys...)
		gv, hasG := field(m, gapKeys...)
		if !hasT && !hasD && !hasG {
			continue
		}
		var o Outline
		for _, it := range list(tv) {
			if x, ok := outlineItem(it); ok {
				o.Themes = append(o.Themes, x)
			}
		}
		for _, it := range list(dv) {
			if x, ok := outlineItem(it); ok {
				o.Disagreements = append(o.Disagreements, x)
			}
		}
		o.Gaps = planItems(map[string]any{"sub_questions": list(gv)})
		return o, nil
	}
	if err == nil {
		err = errors.New(`the JSON object has none of "themes", "disagreements", "gaps"`)
	}
	return Outline{}, &parseError{err: err, kind: ErrUnusableReply}
}

func outlineItem(v any) (OutlineItem, bool) {
	switch t := v.(type) {
	case string:
		return OutlineItem{Title: strings.TrimSpace(t)}, strings.TrimSpace(t) != ""
	case map[string]any:
		x := OutlineItem{Title: text(t, "title", "theme", "heading", "name"), Text: text(t, "text", "description", "summary")}
		if f, ok := field(t, factsKeys...); ok {
			x.Facts = ids(f, "F")
		}
		return x, x.Title != "" || x.Text != ""
	}
	return OutlineItem{}, false
}

// JSON is the outline as one JSON object (what the report prompt shows).
func (o Outline) JSON() string {
	b, _ := json.Marshal(o)
	return string(b)
}

var (
	titleKeys      = []string{"title", "heading", "name", "заголовок", "название"}
	summaryKeys    = []string{"summary", "executive_summary", "abstract", "tl_dr", "tldr", "резюме", "краткое_изложение"}
	sectionKeys    = []string{"sections", "themes", "body", "разделы"}
	conclusionKeys = []string{"conclusion", "conclusions", "вывод", "выводы", "заключение"}
	sentenceKeys   = []string{"sentences", "content", "text", "paragraphs", "points", "items", "body", "предложения"}
	sentTextKeys   = []string{"text", "sentence", "claim", "statement", "content", "текст"}
)

// parseReport reads the model's report reply, repaired as jsonCandidates
// does, its fields under their names or others (a summary or a conclusion
// may be one string; a section's sentences "content"; a sentence's facts
// "citations" or one string "F1, F2"). The error wraps ErrUnusableReply.
func parseReport(reply string) (reportReply, error) {
	values, err := replyValues(reply)
	for _, v := range values {
		m, ok := unwrap(v).(map[string]any)
		if !ok {
			continue
		}
		raw, _ := json.Marshal(canonReport(m))
		var rep reportReply
		if e := json.Unmarshal(raw, &rep); e != nil {
			if err == nil {
				err = e
			}
			continue
		}
		if rep.Title != "" || len(rep.Summary) > 0 || len(rep.Sections) > 0 {
			return rep, nil
		}
	}
	if err == nil {
		err = errors.New(`the JSON object has no "title", "summary" or "sections"`)
	}
	return reportReply{}, &parseError{err: err, kind: ErrUnusableReply}
}

// canonReport renames the fields of a report object to the names
// reportReply reads.
func canonReport(m map[string]any) map[string]any {
	canon := map[string]any{}
	for k, x := range m {
		canon[k] = x
	}
	if x, ok := field(m, titleKeys...); ok {
		canon["title"] = text(x, "text")
	}
	for name, keys := range map[string][]string{"summary": summaryKeys, "disagreements": disagreeKeys, "conclusion": conclusionKeys} {
		if x, ok := field(m, keys...); ok {
			canon[name] = reportSentences(x)
		} else {
			delete(canon, name)
		}
	}
	if x, ok := field(m, sectionKeys...); ok {
		canon["sections"] = reportSections(x)
	} else {
		delete(canon, "sections")
	}
	return canon
}

// reportSentences reads a list of sentences: strings, or objects whose
// text and facts may be under other names.
func reportSentences(x any) []any {
	var out []any
	for _, it := range list(x) {
		switch t := it.(type) {
		case string:
			out = append(out, t)
		case map[string]any:
			s := map[string]any{}
			for k, y := range t {
				s[k] = y
			}
			s["text"] = text(t, sentTextKeys...)
			if f, ok := field(t, factsKeys...); ok {
				s["facts"] = ids(f, "F")
			} else {
				delete(s, "facts")
			}
			out = append(out, s)
		}
	}
	return out
}

// reportSections reads the sections: a list of section objects or strings,
// one section object, or an object of sections by title.
func reportSections(x any) []any {
	var secs []any
	byTitle, ok := x.(map[string]any)
	if ok {
		_, titled := field(byTitle, titleKeys...)
		_, sentenced := field(byTitle, sentenceKeys...)
		ok = !titled && !sentenced // else one section object
	}
	if ok {
		// {"Tools": [...], "Memory": [...]}
		titles := make([]string, 0, len(byTitle))
		for title := range byTitle {
			titles = append(titles, title)
		}
		sort.Strings(titles)
		for _, title := range titles {
			secs = append(secs, map[string]any{"title": title, "sentences": reportSentences(byTitle[title])})
		}
		x = nil
	}
	for _, it := range list(x) {
		switch t := it.(type) {
		case string:
			secs = append(secs, map[string]any{"title": "", "sentences": reportSentences(t)})
		case map[string]any:
			sec := map[string]any{"title": text(t, titleKeys...)}
			if y, ok := field(t, sentenceKeys...); ok {
				sec["sentences"] = reportSentences(y)
			}
			secs = append(secs, sec)
		}
	}
	return secs
}
