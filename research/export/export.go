// Package export writes a research report back out: as Markdown whose
// citations are links (a file in a folder), or as SiYuan Markdown whose
// citations are block references to the cited blocks (a new document in a
// notebook), so the report links live into the notes.
package export

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/exocortex/exocortex/schemas"
)

// Style is how citations are written.
type Style int

const (
	// Links writes each citation [n] as a Markdown link to its block
	// (siyuan://blocks/<id>, or the file URL of a Markdown note).
	Links Style = iota
	// SiYuanRefs writes each citation of a SiYuan block as a block reference
	// ((<block id> "n")), which the kernel resolves to the cited block (its
	// refs table, backlinks); a citation of a block that is not in SiYuan
	// (a Markdown folder's) stays a link.
	SiYuanRefs
)

// siyuanLink is the prefix of a SiYuan block's deep link.
const siyuanLink = "siyuan://blocks/"

// headings are a report's section names in its language.
var headings = map[string]map[string]string{
	"en": {"question": "Question", "mode": "Mode", "summary": "Summary", "disagree": "Where the notes disagree",
		"conclusion": "Conclusion", "sources": "Sources", "notes": "Notes", "block": "block"},
	"ru": {"question": "Вопрос", "mode": "Режим", "summary": "Кратко", "disagree": "Где заметки расходятся",
		"conclusion": "Вывод", "sources": "Источники", "notes": "Примечания", "block": "блок"},
}

func heading(lang, key string) string {
	if h, ok := headings[lang]; ok {
		return h[key]
	}
	return headings["en"][key]
}

// Markdown renders r with its citations in style: title, question and mode,
// summary, one section per theme, where the notes disagree, conclusion,
// the sources (each with its title, section path, block id and link or
// reference, and the quoted text) and the report's reasons.
func Markdown(r *schemas.ResearchReport, style Style) string {
	var sb strings.Builder
	title := r.Title
	if title == "" {
		title = r.Question
	}
	if style == Links {
		// A SiYuan document's title is its name; in a file it is the first heading.
		fmt.Fprintf(&sb, "# %s\n\n", oneLine(title))
	}
	fmt.Fprintf(&sb, "**%s:** %s  \n**%s:** %s\n\n", heading(r.Lang, "question"), oneLine(r.Question), heading(r.Lang, "mode"), r.Mode)
	para := func(ss []schemas.ReportSentence) {
		var parts []string
		for _, s := range ss {
			if t := strings.TrimSpace(s.Text); t != "" || len(s.Sources) > 0 {
				parts = append(parts, t+cites(r, s.Sources, style))
			}
		}
		if len(parts) > 0 {
			sb.WriteString(strings.Join(parts, " ") + "\n\n")
		}
	}
	if len(r.Summary) > 0 {
		fmt.Fprintf(&sb, "## %s\n\n", heading(r.Lang, "summary"))
		para(r.Summary)
	}
	for _, sec := range r.Sections {
		fmt.Fprintf(&sb, "## %s\n\n", oneLine(sec.Title))
		para(sec.Sentences)
	}
	if len(r.Disagreements) > 0 {
		fmt.Fprintf(&sb, "## %s\n\n", heading(r.Lang, "disagree"))
		for _, s := range r.Disagreements {
			if len(s.Sides) == 0 {
				fmt.Fprintf(&sb, "- %s%s\n", strings.TrimSpace(s.Text), cites(r, s.Sources, style))
				continue
			}
			// Each side with its own citation.
			var parts []string
			for _, sd := range s.Sides {
				parts = append(parts, strings.TrimSpace(sd.Lead+" "+strings.TrimSpace(sd.Text)+cites(r, sd.Sources, style)))
			}
			fmt.Fprintf(&sb, "- %s\n", strings.Join(parts, " "))
		}
		sb.WriteString("\n")
	}
	if len(r.Conclusion) > 0 {
		fmt.Fprintf(&sb, "## %s\n\n", heading(r.Lang, "conclusion"))
		para(r.Conclusion)
	}
	if len(r.Sources) > 0 {
		fmt.Fprintf(&sb, "## %s\n\n", heading(r.Lang, "sources"))
		for i, c := range r.Sources {
			fmt.Fprintf(&sb, "%d. %s", i+1, source(r.Lang, c, style))
			if q := oneLine(c.Quote); q != "" {
				fmt.Fprintf(&sb, " — «%s»", q)
			}
			sb.WriteString("\n")
		}
		sb.WriteString("\n")
	}
	if len(r.Reasons) > 0 {
		fmt.Fprintf(&sb, "## %s\n\n", heading(r.Lang, "notes"))
		for _, reason := range r.Reasons {
			fmt.Fprintf(&sb, "- %s\n", oneLine(reason))
		}
		sb.WriteString("\n")
	}
	return strings.TrimRight(sb.String(), "\n") + "\n"
}

// cites writes the markers of a sentence's sources (1-based numbers into
// r.Sources); a number out of range is left out.
func cites(r *schemas.ResearchReport, nums []int, style Style) string {
	var sb strings.Builder
	for _, n := range nums {
		if n < 1 || n > len(r.Sources) {
			continue
		}
		c := r.Sources[n-1]
		label := fmt.Sprint(n)
		switch {
		case style == SiYuanRefs && isSiYuan(c):
			fmt.Fprintf(&sb, " ((%s %q))", c.BlockID, label)
		case c.Link != "":
			fmt.Fprintf(&sb, " [%s](%s)", label, linkTarget(c.Link))
		default:
			fmt.Fprintf(&sb, " [%s]", label)
		}
	}
	return sb.String()
}

// source is one entry of the sources list: a block reference (SiYuanRefs,
// a SiYuan block) or a link named by the source's title and section path.
func source(lang string, c schemas.Citation, style Style) string {
	name := sourceName(c)
	if style == SiYuanRefs && isSiYuan(c) {
		if d := dayOf(c.Updated); d != "" {
			return fmt.Sprintf("((%s %s)) (%s)", c.BlockID, quoteAnchor(name), d[2:])
		}
		return fmt.Sprintf("((%s %s))", c.BlockID, quoteAnchor(name))
	}
	if c.Link != "" {
		return fmt.Sprintf("[%s](%s) (%s %s%s)", escapeLinkText(name), linkTarget(c.Link), heading(lang, "block"), c.BlockID, dayOf(c.Updated))
	}
	return fmt.Sprintf("%s (%s %s%s)", name, heading(lang, "block"), c.BlockID, dayOf(c.Updated))
}

// dayOf is ", 2026-03-02": the day of a source's note time (RFC 3339), ""
// when unknown.
func dayOf(updated string) string {
	if len(updated) >= 10 && updated[4] == '-' && updated[7] == '-' {
		return ", " + updated[:10]
	}
	return ""
}

// sourceName is "Title > Section > Path", each name once: the title is
// put first unless the section path holds it (a SiYuan section path starts
// with the notebook's tree, the title inside it), and a name said again is
// left out.
func sourceName(c schemas.Citation) string {
	var parts []string
	add := func(s string) {
		if s = oneLine(s); s == "" {
			return
		}
		for _, p := range parts {
			if strings.EqualFold(p, s) {
				return
			}
		}
		parts = append(parts, s)
	}
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
	name := strings.Join(parts, " > ")
	if name == "" {
		name = c.BlockID
	}
	return name
}

func isSiYuan(c schemas.Citation) bool {
	return c.BlockID != "" && strings.HasPrefix(c.Link, siyuanLink)
}

// quoteAnchor writes a block reference's anchor text in double quotes (a
// static anchor: it stays as written); a double quote inside becomes a
// typographic one, which cannot end it.
func quoteAnchor(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, "”") + `"`
}

// linkTarget escapes what would end a Markdown link's destination.
func linkTarget(u string) string {
	r := strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E")
	return r.Replace(u)
}

func escapeLinkText(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`).Replace(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// FileName is a safe file name for the report from its title (its
// question, else its id), with ".md": no path separators, no characters
// that Windows, macOS or Linux refuse, no leading dot, at most 100 letters.
func FileName(r *schemas.ResearchReport) string {
	name := SafeTitle(r.Title)
	if name == "" {
		name = SafeTitle(r.Question)
	}
	if name == "" {
		name = "research " + SafeTitle(r.ResearchID)
	}
	return name + ".md"
}

// SafeTitle is title as one line without path separators, control
// characters or <>:"|?*\, trimmed of dots and spaces, at most 100 letters:
// fit for a file name and for a SiYuan document's title path segment.
func SafeTitle(title string) string {
	var sb strings.Builder
	for _, r := range title {
		switch {
		case strings.ContainsRune(`/\<>:"|?*`, r) || unicode.IsControl(r):
			sb.WriteRune(' ')
		default:
			sb.WriteRune(r)
		}
	}
	s := oneLine(sb.String())
	if rs := []rune(s); len(rs) > 100 {
		s = strings.TrimSpace(string(rs[:100]))
	}
	return strings.Trim(s, ". ")
}
