package research

import (
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// Markers of the research prompts' system messages (a scripted provider
// recognises its request by them).
const (
	DraftMarker  = "You supervise a research over the user's own notes."
	ReportMarker = "You write the final report of a research over the user's own notes."
)

// numberedFact is a fact under its report-wide id (F1, F2 ...), with the
// sub-question it answers.
type numberedFact struct {
	ID   string
	Task int // index of the finding
	Fact schemas.Fact
}

// numberFacts gives every fact of the findings a report-wide id, in the
// findings' order, once per distinct text and blocks.
func numberFacts(findings []schemas.ResearchFinding) []numberedFact {
	var out []numberedFact
	seen := map[string]bool{}
	for i, f := range findings {
		for _, fact := range f.Facts {
			key := strings.ToLower(strings.TrimSpace(fact.Text)) + "|" + strings.Join(fact.BlockIDs, ",")
			if seen[key] || strings.TrimSpace(fact.Text) == "" {
				continue
			}
			seen[key] = true
			out = append(out, numberedFact{ID: fmt.Sprintf("F%d", len(out)+1), Task: i, Fact: fact})
		}
	}
	return out
}

func reportLanguage(lang string) string {
	switch lang {
	case "ru":
		return "Russian"
	case "en", "":
		return "English"
	default:
		return lang
	}
}

// writeFacts lists the facts by sub-question:
//
//	## Sub-question 1: <question>
//	<fact id="F1" certainty="high">TEXT</fact>
func writeFacts(b *strings.Builder, findings []schemas.ResearchFinding, facts []numberedFact) {
	task := -1
	for _, nf := range facts {
		if nf.Task != task {
			task = nf.Task
			fmt.Fprintf(b, "\n## Sub-question %d: %s\n", task+1, oneLine(findings[task].Question))
		}
		fmt.Fprintf(b, "<fact id=%q certainty=%q>%s</fact>\n", nf.ID, nf.Fact.Certainty, oneLine(nf.Fact.Text))
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// disagreementRule tells the draft and report models what to do with the
// pairs of facts that disagree.
const disagreementRule = "Facts listed as disagreeing say otherwise about one thing: keep both; " +
	"state each side with its own fact id and its note's date, say which is newer, and state a change over time as a change " +
	`("was nightly; since <date> every 6 hours"). Never cite one side only for a disagreement, and never merge the sides into one number.`

// DraftPrompt asks the supervisor for an outline of the report from the
// findings' facts, with the pairs of facts that disagree.
func DraftPrompt(question, lang string, findings []schemas.ResearchFinding) []llm.Message {
	facts := numberFacts(findings)
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\nLanguage: %s\n\nFacts found in the notes, by sub-question:\n", oneLine(question), lang)
	writeFacts(&b, findings, facts)
	writeConflicts(&b, disagreementPairs(facts), nil)
	for i, f := range findings {
		if f.Status != schemas.TaskDone && f.Status != "" {
			fmt.Fprintf(&b, "\n(Sub-question %d ended early: %s.)\n", i+1, f.Status)
		}
	}
	sys := DraftMarker + " Sub-questions were researched and each gave facts, every fact verified against the notes. " +
		"Write an outline of the report that answers the question: the themes it should have (each with the ids of the facts it rests on), " +
		"and where the facts disagree with each other. " + disagreementRule + " Use only the facts given. Write in " + reportLanguage(lang) + ". " +
		`Answer with a JSON object: {"themes": [{"title": "...", "facts": ["F1"]}], "disagreements": [{"text": "...", "facts": ["F2", "F5"]}]}.`
	return []llm.Message{{Role: "system", Content: sys}, {Role: "user", Content: b.String()}}
}

// ReportPrompt asks for the final structured report.
func ReportPrompt(question, lang, draft string, findings []schemas.ResearchFinding, facts []numberedFact) []llm.Message {
	return reportPrompt(question, lang, draft, findings, facts, disagreementPairs(facts))
}

// reportPrompt is ReportPrompt with the pairs of facts that disagree (those
// whose both sides are among the facts are listed).
func reportPrompt(question, lang, draft string, findings []schemas.ResearchFinding, facts []numberedFact, cs []conflict) []llm.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\nLanguage: %s\n", oneLine(question), lang)
	if strings.TrimSpace(draft) != "" {
		fmt.Fprintf(&b, "\nDraft outline:\n%s\n", strings.TrimSpace(draft))
	}
	b.WriteString("\nFacts found in the notes, by sub-question:\n")
	writeFacts(&b, findings, facts)
	shown := map[string]bool{}
	for _, nf := range facts {
		shown[nf.ID] = true
	}
	writeConflicts(&b, cs, shown)
	sys := ReportMarker + " Write it in " + reportLanguage(lang) + " from the facts given, and only from them: " +
		"every sentence that states something cites the ids of the facts that support it, and says no more than they say " +
		"(no number, date, time, ratio, name or condition they do not state). " +
		"Give a title, an executive summary (2-4 sentences), sections by theme, where the notes disagree (if they do) and a conclusion. " +
		disagreementRule + " " +
		`Answer with a JSON object only: {"title": "...", "summary": [{"text": "...", "facts": ["F1"]}], ` +
		`"sections": [{"title": "...", "sentences": [{"text": "...", "facts": ["F2", "F3"]}]}], ` +
		`"disagreements": [{"text": "...", "facts": ["F4", "F6"]}], "conclusion": [{"text": "...", "facts": ["F1"]}]}.`
	return []llm.Message{{Role: "system", Content: sys}, {Role: "user", Content: b.String()}}
}

// ReportSchema is the JSON schema of the final report's reply.
func ReportSchema() *llm.JSONSchema {
	sentences := `{"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["text", "facts"],
		"properties": {"text": {"type": "string"}, "facts": {"type": "array", "items": {"type": "string"}}}}}`
	schema := `{"type": "object", "additionalProperties": false, "required": ["title", "summary", "sections", "disagreements", "conclusion"],
	"properties": {"title": {"type": "string"}, "summary": ` + sentences + `,
		"sections": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["title", "sentences"],
			"properties": {"title": {"type": "string"}, "sentences": ` + sentences + `}}},
		"disagreements": ` + sentences + `, "conclusion": ` + sentences + `}}`
	return &llm.JSONSchema{Name: "research_report", Schema: []byte(schema), Strict: true}
}
