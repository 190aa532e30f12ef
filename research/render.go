package research

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// reportTexts are the report's fixed strings by language.
var reportTexts = map[string]map[string]string{
	"en": {
		"summary":         "Executive summary",
		"disagreements":   "Where the notes disagree",
		"conclusion":      "Conclusion",
		"sources":         "Sources",
		"title":           "Research: %s",
		"title_evidence":  "What the notes say: %s",
		"untitled":        "Other notes",
		"lead_evidence":   "No synthesis was written: %s. These are the passages of your notes that answer the question, by sub-topic.",
		"no_provider":     "No synthesis was written: no language model provider is configured. These are the verified facts, by sub-question.",
		"model_failed":    "The language model could not write the report; these are the verified facts, by sub-question.",
		"model_unusable":  "The language model's report could not be used; these are the verified facts, by sub-question.",
		"lead_nothing":    "The research found nothing in the notes that answers this question.",
		"why_no_provider": "no language model provider is configured",
		"why_no_llm":      "evidence only was asked for (--no-llm)",
		"why_unreadable":  "the language model's replies were not the JSON asked for, also when asked again",
		"why_no_facts":    "the language model kept no verified fact from the documents read",
		"mode":            "Mode",
	},
	"ru": {
		"summary":         "Краткое изложение",
		"disagreements":   "Где заметки расходятся",
		"conclusion":      "Заключение",
		"sources":         "Источники",
		"title":           "Исследование: %s",
		"title_evidence":  "Что говорят заметки: %s",
		"untitled":        "Другие заметки",
		"lead_evidence":   "Синтез не написан: %s. Ниже — фрагменты ваших заметок, отвечающие на вопрос, по подтемам.",
		"no_provider":     "Синтез не написан: не настроен ни один поставщик языковой модели. Ниже — проверенные факты по подвопросам.",
		"model_failed":    "Языковая модель не смогла написать отчёт; ниже — проверенные факты по подвопросам.",
		"model_unusable":  "Отчёт языковой модели нельзя было использовать; ниже — проверенные факты по подвопросам.",
		"lead_nothing":    "Исследование не нашло в заметках ничего, что отвечало бы на этот вопрос.",
		"why_no_provider": "не настроен ни один поставщик языковой модели",
		"why_no_llm":      "запрошены только фрагменты заметок (--no-llm)",
		"why_unreadable":  "ответы языковой модели были не в нужном формате JSON, и повторные запросы не помогли",
		"why_no_facts":    "языковая модель не нашла в прочитанных документах ни одного проверенного факта",
		"mode":            "Режим",
	},
}

// reportText is a fixed string of the report in lang (English for any
// language but Russian).
func reportText(lang, key string) string {
	if t, ok := reportTexts[lang][key]; ok {
		return t
	}
	return reportTexts["en"][key]
}

// noSynthesisWhy says why an evidence_only report has no synthesis.
func noSynthesisWhy(lang string, noProvider bool) string {
	if noProvider {
		return reportText(lang, "why_no_provider")
	}
	return reportText(lang, "why_no_llm")
}

// lead is the line under the title that says why the report is what it is.
func lead(rep *schemas.ResearchReport) string {
	for _, r := range rep.Reasons {
		switch {
		case rep.Mode == schemas.ResearchEvidenceOnly && strings.HasPrefix(r, "synthesis_failed: "):
			why := reportText(rep.Lang, "why_no_facts")
			if strings.Contains(r, "could not be read") {
				why = reportText(rep.Lang, "why_unreadable")
			}
			return fmt.Sprintf(reportText(rep.Lang, "lead_evidence"), why)
		case rep.Mode == schemas.ResearchEvidenceOnly && strings.HasPrefix(r, "no_llm_provider: "):
			return fmt.Sprintf(reportText(rep.Lang, "lead_evidence"), noSynthesisWhy(rep.Lang, !strings.Contains(r, "--no-llm")))
		case strings.HasPrefix(r, "report_fallback: the model's report failed"):
			return reportText(rep.Lang, "model_failed")
		case strings.HasPrefix(r, "report_fallback: "):
			return reportText(rep.Lang, "model_unusable")
		case strings.HasPrefix(r, "no_llm_provider: "):
			return reportText(rep.Lang, "no_provider")
		case strings.HasPrefix(r, "no_facts: "):
			return reportText(rep.Lang, "lead_nothing")
		}
	}
	return ""
}

// LinkView is where a report's source links open.
type LinkView int

const (
	// FileLinks: each source's own link: siyuan://blocks/<id> for a SiYuan
	// block, the note's file URL at the block's heading for a Markdown
	// block (the CLI, a saved report).
	FileLinks LinkView = iota
	// NoteView: the gateway's note view at the block
	// (/notes/{doc_id}#{block_id}) for every source, a SiYuan block's own
	// link beside it (a report read through the gateway).
	NoteView
)

// RenderMarkdown writes a report as Markdown with its sources' own links
// (FileLinks): the title, a line that says why when there is no synthesis,
// the executive summary, the sections, where the notes disagree (each
// disagreement one item, each side with its own markers), the conclusion
// and the sources (title › section path, deep link), every sentence
// followed by its [n] markers.
func RenderMarkdown(rep *schemas.ResearchReport) string { return RenderMarkdownFor(rep, FileLinks) }

// GatewayMarkdown is the report's Markdown as the gateway serves it: every
// source links the gateway's note view at its block.
func GatewayMarkdown(rep *schemas.ResearchReport) string { return RenderMarkdownFor(rep, NoteView) }

// RenderMarkdownFor is RenderMarkdown with the sources' links opening in view.
func RenderMarkdownFor(rep *schemas.ResearchReport, view LinkView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", rep.Title)
	if l := lead(rep); l != "" {
		fmt.Fprintf(&b, "*%s*\n\n", l)
	}
	para := func(heading string, ss []schemas.ReportSentence) {
		if len(ss) == 0 {
			return
		}
		fmt.Fprintf(&b, "## %s\n\n", heading)
		if rep.Mode == schemas.ResearchEvidenceOnly {
			// Passages are a list; a line that cites nothing frames them.
			for i, s := range ss {
				if len(s.Sources) == 0 {
					if i > 0 {
						b.WriteString("\n")
					}
					fmt.Fprintf(&b, "%s\n\n", s.Text)
					continue
				}
				fmt.Fprintf(&b, "- %s\n", sentenceMarkdown(s))
			}
			b.WriteString("\n")
			return
		}
		parts := make([]string, len(ss))
		for i, s := range ss {
			parts[i] = sentenceMarkdown(s)
		}
		b.WriteString(strings.Join(parts, " ") + "\n\n")
	}
	para(reportText(rep.Lang, "summary"), rep.Summary)
	for _, sec := range rep.Sections {
		para(sec.Title, sec.Sentences)
	}
	// Each disagreement is one item, each side with its own markers (an
	// evidence-only report lays its passages out as its sections).
	if rep.Mode == schemas.ResearchEvidenceOnly {
		para(reportText(rep.Lang, "disagreements"), rep.Disagreements)
	} else if len(rep.Disagreements) > 0 {
		fmt.Fprintf(&b, "## %s\n\n", reportText(rep.Lang, "disagreements"))
		for _, s := range rep.Disagreements {
			fmt.Fprintf(&b, "- %s\n", sentenceMarkdown(s))
		}
		b.WriteString("\n")
	}
	para(reportText(rep.Lang, "conclusion"), rep.Conclusion)
	if len(rep.Sources) > 0 {
		fmt.Fprintf(&b, "## %s\n\n", reportText(rep.Lang, "sources"))
		for i, c := range rep.Sources {
			fmt.Fprintf(&b, "%d. %s — %s%s\n", i+1, SourceLabel(c), sourceLinks(c, view), sourceDate(c))
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// sourceLinks is a source's block id as a link to where it opens in view.
func sourceLinks(c schemas.Citation, view LinkView) string {
	if view == NoteView && c.DocID != "" && c.BlockID != "" {
		out := fmt.Sprintf("[%s](%s)", c.BlockID, NoteViewLink(c.DocID, c.BlockID))
		if strings.HasPrefix(c.Link, "siyuan://") {
			out += fmt.Sprintf(" ([SiYuan](%s))", c.Link)
		}
		return out
	}
	if c.Link != "" {
		return fmt.Sprintf("[%s](%s)", c.BlockID, c.Link)
	}
	return "`" + c.BlockID + "`"
}

// SourceLabel names a source: its title, then its section path, each name
// once ("Title › Section", never "Title › Title › Section": the section
// path of a note often starts with its title, or a heading repeats it).
func SourceLabel(c schemas.Citation) string {
	var parts []string
	seen := func(s string) bool {
		for _, p := range parts {
			if strings.EqualFold(p, s) {
				return true
			}
		}
		return false
	}
	add := func(s string) {
		if s = oneLine(s); s != "" && !seen(s) {
			parts = append(parts, s)
		}
	}
	// The section path starts with the document's title path (a SiYuan
	// notebook's tree, a Markdown note's folders), which holds its title.
	inPath := false
	for _, p := range c.SectionPath {
		inPath = inPath || strings.EqualFold(oneLine(p), oneLine(c.Title))
	}
	if !inPath {
		add(c.Title)
	}
	for _, p := range c.SectionPath {
		add(p)
	}
	if len(parts) == 0 {
		return c.BlockID
	}
	return strings.Join(parts, " › ")
}

// NoteViewLink is the gateway's note view of a block:
// /notes/{doc_id}#{block_id}, both ids URL-encoded (a Markdown block id
// holds '#').
func NoteViewLink(docID, blockID string) string {
	link := "/notes/" + url.PathEscape(docID)
	if blockID != "" {
		link += "#" + url.PathEscape(blockID)
	}
	return link
}

// sentenceMarkdown is a sentence with its markers before its closing
// punctuation: "Text [1, 2]."; a disagreement's sides each with their own:
// "A (2024-03-12): X [1]; the newer B (2024-04-02): Y [2]."
func sentenceMarkdown(s schemas.ReportSentence) string {
	if len(s.Sides) > 0 {
		parts := make([]string, 0, len(s.Sides))
		for _, sd := range s.Sides {
			parts = append(parts, strings.TrimSpace(sd.Lead+" "+withLabels(sd.Text, sd.Sources, ".!?…;,:—–")))
		}
		return strings.Join(parts, " ")
	}
	return withLabels(s.Text, s.Sources, ".!?…")
}

// withLabels puts " [n, m]" before the text's closing punctuation (any of
// punct).
func withLabels(text string, sources []int, punct string) string {
	text = strings.TrimSpace(text)
	if len(sources) == 0 {
		return text
	}
	labels := make([]string, len(sources))
	for i, n := range sources {
		labels[i] = strconv.Itoa(n)
	}
	end := len(text)
	for end > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:end])
		if !strings.ContainsRune(punct, r) {
			break
		}
		end -= size
	}
	return strings.TrimRight(text[:end], " ") + " [" + strings.Join(labels, ", ") + "]" + text[end:]
}

// BlockLink opens a cited block: siyuan://blocks/<id> for a SiYuan block;
// for a note on disk its file URL, at the block's heading when it is under
// one (#slug of the last heading of its section path below the note's
// title, as Markdown viewers anchor headings; the index keeps no line).
func BlockLink(blockID, path, title string, sectionPath []string) string {
	link := answer.Link(blockID, path)
	if !strings.HasPrefix(link, "file://") {
		return link
	}
	u := url.URL{Scheme: "file", Path: path}
	if h := blockHeading(title, sectionPath); h != "" {
		u.Fragment = HeadingSlug(h)
	}
	return u.String()
}

// blockHeading is the last heading of a section path below the note's title
// ("" when the block is under the title alone, or the title is not in it).
func blockHeading(title string, sectionPath []string) string {
	at := -1
	for i, p := range sectionPath {
		if strings.EqualFold(oneLine(p), oneLine(title)) {
			at = i
		}
	}
	if at < 0 || at == len(sectionPath)-1 {
		return ""
	}
	return oneLine(sectionPath[len(sectionPath)-1])
}

// HeadingSlug is a heading's anchor as Markdown viewers (GitHub, VS Code,
// Obsidian's exports) make it: lower case, letters, digits, '-' and '_'
// kept, spaces as '-', the rest left out.
func HeadingSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// sourceDate is " (2026-03-02)": the day of the source's note time, "" when
// unknown.
func sourceDate(c schemas.Citation) string {
	if d := answer.SourceDate(c.Updated); d != "" {
		return " (" + d + ")"
	}
	return ""
}
