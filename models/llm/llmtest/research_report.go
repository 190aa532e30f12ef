package llmtest

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Markers of the research supervisor's and final report's system messages
// (research.DraftMarker, research.ReportMarker).
const (
	draftMarker  = "You supervise"
	reportMarker = "You write the final report"
)

// DraftReportOptions script the supervisor's and the final report's
// replies and faults.
type DraftReportOptions struct {
	// DraftFault and ReportFault are served instead of the reply to every
	// draft or final report request (e.g. Fail(500)).
	DraftFault, ReportFault *Fault
	// Miscite adds to the first section a sentence that repeats the last
	// fact's text but cites the first fact (which does not support it).
	Miscite bool
	// Invent adds to the summary a sentence that cites no fact and that no
	// note says.
	Invent bool
	// Prose answers the final report request with prose, not the JSON asked.
	Prose bool
	// Disagreements puts facts that disagree (the same subject, other
	// numbers, dates or times, or one negating the other; or a fact the
	// prompt marks as contradicted by another) side by side in the
	// outline's and the report's disagreements, each citing both facts.
	Disagreements bool
}

// promptFact is a fact as the research prompts list it.
type promptFact struct {
	ID, Certainty, Text string
	Task                int
	// ContradictedBy are the ids the fact line names as saying otherwise
	// (an attribute contradicted_by="F3,F5"), when it names them.
	ContradictedBy []string
}

var (
	factLine     = regexp.MustCompile(`<fact id="([^"]+)"([^>]*)>(.*)</fact>`)
	factAttr     = regexp.MustCompile(`([\w-]+)="([^"]*)"`)
	subQuestion  = regexp.MustCompile(`^## Sub-question (\d+): (.*)$`)
	questionLine = regexp.MustCompile(`(?m)^Question: (.*)$`)
	langLine     = regexp.MustCompile(`(?m)^Language: (.*)$`)
)

// parseResearchPrompt reads the question, language, sub-questions and facts
// of a draft or report prompt.
func parseResearchPrompt(user string) (question, lang string, subs []string, facts []promptFact) {
	if m := questionLine.FindStringSubmatch(user); m != nil {
		question = strings.TrimSpace(m[1])
	}
	if m := langLine.FindStringSubmatch(user); m != nil {
		lang = strings.TrimSpace(m[1])
	}
	for _, line := range strings.Split(user, "\n") {
		if m := subQuestion.FindStringSubmatch(line); m != nil {
			subs = append(subs, strings.TrimSpace(m[2]))
			continue
		}
		if m := factLine.FindStringSubmatch(line); m != nil {
			f := promptFact{ID: m[1], Text: m[3], Task: len(subs) - 1}
			for _, a := range factAttr.FindAllStringSubmatch(m[2], -1) {
				switch a[1] {
				case "certainty":
					f.Certainty = a[2]
				case "contradicted_by", "contradicted-by", "contradicts", "disagrees_with":
					for _, id := range strings.FieldsFunc(a[2], func(r rune) bool { return r == ',' || r == ' ' }) {
						f.ContradictedBy = append(f.ContradictedBy, id)
					}
				}
			}
			facts = append(facts, f)
		}
	}
	return question, lang, subs, facts
}

type scriptedSentence struct {
	Text  string   `json:"text"`
	Facts []string `json:"facts"`
}

// DraftReportResponder answers the research supervisor's outline request
// (themes by sub-question, with their facts' ids) and the final report
// request (the title from the question; a summary of the first fact of each
// sub-question; a section per sub-question whose sentences are its facts'
// texts, each citing its fact; a conclusion from the most certain fact),
// in the prompt's language, from the facts the prompt lists.
func DraftReportResponder(opts DraftReportOptions) Responder {
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
		switch {
		case strings.Contains(system, draftMarker):
			return draftReply(user, opts.Disagreements), opts.DraftFault, true
		case strings.Contains(system, reportMarker):
			return reportReply(user, opts, body.MaxTokens), opts.ReportFault, true
		}
		return "", nil, false
	}
}

// draftReply is the supervisor's outline: a theme per sub-question with
// its facts, and, with disagreements, the facts that disagree side by side.
func draftReply(user string, disagreements bool) string {
	_, lang, subs, facts := parseResearchPrompt(user)
	type theme struct {
		Title string   `json:"title"`
		Facts []string `json:"facts"`
	}
	out := struct {
		Themes        []theme            `json:"themes"`
		Disagreements []scriptedSentence `json:"disagreements"`
	}{Disagreements: []scriptedSentence{}}
	for i, s := range subs {
		t := theme{Title: s}
		for _, f := range facts {
			if f.Task == i {
				t.Facts = append(t.Facts, f.ID)
			}
		}
		out.Themes = append(out.Themes, t)
	}
	if disagreements {
		out.Disagreements = disagreementSentences(facts, lang)
	}
	raw, _ := json.Marshal(out)
	return string(raw)
}

// disagreementSentences puts each pair of facts that disagree side by
// side: "A — but another note says: B", citing both.
func disagreementSentences(facts []promptFact, lang string) []scriptedSentence {
	out := []scriptedSentence{}
	byID := map[string]int{}
	for i, f := range facts {
		byID[f.ID] = i
	}
	paired := map[[2]int]bool{}
	pair := func(i, j int) {
		if i == j {
			return
		}
		if i > j {
			i, j = j, i
		}
		if paired[[2]int{i, j}] || strings.EqualFold(strings.TrimSpace(facts[i].Text), strings.TrimSpace(facts[j].Text)) {
			return
		}
		paired[[2]int{i, j}] = true
		a, b := trimEnd(facts[i].Text), trimEnd(facts[j].Text)
		text := a + " — but another note says: " + b + "."
		if lang == "ru" || (lang == "" && cyrillic(a)) {
			text = a + " — но в другой заметке: " + b + "."
		}
		out = append(out, scriptedSentence{Text: text, Facts: []string{facts[i].ID, facts[j].ID}})
	}
	for i, f := range facts {
		for _, id := range f.ContradictedBy {
			if j, ok := byID[id]; ok {
				pair(i, j)
			}
		}
	}
	for i := range facts {
		for j := i + 1; j < len(facts); j++ {
			if sameSubject(facts[i].Text, facts[j].Text) && differs(facts[i].Text, facts[j].Text) {
				pair(i, j)
			}
		}
	}
	return out
}

// reportReply writes the final report from the prompt's facts; with a
// budget (the request's max_tokens) it leaves out the last sentences of
// the longest sections until the reply fits, as a model asked for a
// bounded report writes a shorter one.
func reportReply(user string, opts DraftReportOptions, budget int) string {
	question, lang, subs, facts := parseResearchPrompt(user)
	if opts.Prose {
		if lang == "ru" {
			return "Вот отчёт о ваших заметках: всё хорошо."
		}
		return "Here is a report on your notes: all is well."
	}
	out := standinReport{Summary: []scriptedSentence{}, Disagreements: []scriptedSentence{}, Conclusion: []scriptedSentence{}}
	out.Title = "Report: " + question
	if lang == "ru" {
		out.Title = "Отчёт: " + question
	}
	for i, s := range subs {
		sec := standinSection{Title: s}
		for _, f := range facts {
			if f.Task != i {
				continue
			}
			if len(sec.Sentences) == 0 && len(out.Summary) < 3 {
				out.Summary = append(out.Summary, scriptedSentence{Text: f.Text, Facts: []string{f.ID}})
			}
			sec.Sentences = append(sec.Sentences, scriptedSentence{Text: f.Text, Facts: []string{f.ID}})
		}
		if len(sec.Sentences) > 0 {
			out.Sections = append(out.Sections, sec)
		}
	}
	if opts.Miscite && len(facts) > 1 && len(out.Sections) > 0 {
		out.Sections[0].Sentences = append(out.Sections[0].Sentences,
			scriptedSentence{Text: facts[len(facts)-1].Text, Facts: []string{facts[0].ID}})
	}
	if opts.Disagreements {
		out.Disagreements = disagreementSentences(facts, lang)
	}
	if opts.Invent {
		text := "Your notes also show that the first version was written on the Moon in 1969 by a team of penguins."
		if lang == "ru" {
			text = "Заметки также показывают, что первую версию написали пингвины на Луне в 1969 году."
		}
		out.Summary = append(out.Summary, scriptedSentence{Text: text, Facts: []string{}})
	}
	best := -1
	for i, f := range facts {
		if best < 0 || (f.Certainty == "high" && facts[best].Certainty != "high") {
			best = i
		}
	}
	if best >= 0 {
		out.Conclusion = append(out.Conclusion, scriptedSentence{Text: facts[best].Text, Facts: []string{facts[best].ID}})
	}
	return out.fit(budget)
}

// standinReport is the report the stand-in writes, in the reply's shape.
type standinReport struct {
	Title         string             `json:"title"`
	Summary       []scriptedSentence `json:"summary"`
	Sections      []standinSection   `json:"sections"`
	Disagreements []scriptedSentence `json:"disagreements"`
	Conclusion    []scriptedSentence `json:"conclusion"`
}

type standinSection struct {
	Title     string             `json:"title"`
	Sentences []scriptedSentence `json:"sentences"`
}

func (out *standinReport) render() string {
	raw, _ := json.MarshalIndent(out, "", "  ")
	return "```json\n" + string(raw) + "\n```"
}

// fit renders the report, leaving out the last sentences of the longest
// sections until it fits budget tokens (0: no bound).
func (out *standinReport) fit(budget int) string {
	reply := out.render()
	for budget > 0 {
		if head, _ := withinBudget(reply, budget); head == reply {
			break
		}
		longest := -1
		for i, sec := range out.Sections {
			if len(sec.Sentences) > 1 && (longest < 0 || len(sec.Sentences) > len(out.Sections[longest].Sentences)) {
				longest = i
			}
		}
		if longest < 0 {
			break
		}
		out.Sections[longest].Sentences = out.Sections[longest].Sentences[:len(out.Sections[longest].Sentences)-1]
		reply = out.render()
	}
	return reply
}
