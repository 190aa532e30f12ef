package research

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
		"lead_evidence":   "No synthesis was written: %s. These are the best passages of your notes, by section.",
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
		"lead_evidence":   "Синтез не написан: %s. Ниже — лучшие фрагменты ваших заметок по разделам.",
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

// RenderMarkdown writes a report as Markdown: the title, a line that says
// why when there is no synthesis, the executive summary, the sections, where
// the notes disagree, the conclusion and the sources (title > section path,
// deep link), every sentence followed by its [n] markers.
func RenderMarkdown(rep *schemas.ResearchReport) string {
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
			for _, s := range ss {
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
	para(reportText(rep.Lang, "disagreements"), rep.Disagreements)
	para(reportText(rep.Lang, "conclusion"), rep.Conclusion)
	if len(rep.Sources) > 0 {
		fmt.Fprintf(&b, "## %s\n\n", reportText(rep.Lang, "sources"))
		for i, c := range rep.Sources {
			// The section path starts with the document's title path (a
			// SiYuan notebook's tree), which holds its title.
			path := c.SectionPath
			if c.Title != "" && !slices.Contains(path, c.Title) {
				path = append([]string{c.Title}, path...)
			}
			place := strings.Join(path, " > ")
			if place == "" {
				place = c.BlockID
			}
			link := "`" + c.BlockID + "`"
			if c.Link != "" {
				link = fmt.Sprintf("[%s](%s)", c.BlockID, c.Link)
			}
			fmt.Fprintf(&b, "%d. %s — %s\n", i+1, place, link)
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// sentenceMarkdown is a sentence with its markers before its closing
// punctuation: "Text [1, 2]."
func sentenceMarkdown(s schemas.ReportSentence) string {
	if len(s.Sources) == 0 {
		return s.Text
	}
	labels := make([]string, len(s.Sources))
	for i, n := range s.Sources {
		labels[i] = strconv.Itoa(n)
	}
	text := strings.TrimSpace(s.Text)
	end := len(text)
	for end > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:end])
		if !strings.ContainsRune(".!?…", r) {
			break
		}
		end -= size
	}
	return text[:end] + " [" + strings.Join(labels, ", ") + "]" + text[end:]
}
