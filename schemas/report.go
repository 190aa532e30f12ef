package schemas

import "strings"

// Saved research reports are marked where they are written, so that a
// later search, answer or research does not take a report's copy of a
// passage for the note it came from:
//
//   - a SiYuan document gets the attribute custom-exocortex-report="<research
//     id>" on its document block (see ReportAttr);
//   - a Markdown file gets front matter with "exocortex: report",
//     "research_id: <id>" and "generated: <RFC 3339 time>" (see
//     ReportFrontMatter).
//
// Sources copy these into DocChanged.Meta and set DocChanged.Report
// (IsReportMeta); the chunk stage carries the flag on DocStructure, the
// index keeps it per document, and retrieval leaves such documents out
// unless QueryOptions.IncludeReports asks for them.
const (
	// ReportAttr is the SiYuan document attribute of a saved report; its
	// value is the research id.
	ReportAttr = "custom-exocortex-report"
	// ReportKey and ReportValue are the front matter line that marks a
	// Markdown report ("exocortex: report").
	ReportKey   = "exocortex"
	ReportValue = "report"
	// ReportIDKey is the front matter key of a Markdown report's research
	// id; ReportTimeKey the one of the time it was written.
	ReportIDKey   = "research_id"
	ReportTimeKey = "generated"
)

// IsReportMeta reports whether a document's metadata (Markdown front
// matter, SiYuan document attributes) marks it as a saved research report.
func IsReportMeta(meta map[string]string) bool {
	if len(meta) == 0 {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(meta[ReportKey]), ReportValue) {
		return true
	}
	return strings.TrimSpace(meta[ReportAttr]) != ""
}

// ReportFrontMatter is the front matter block that marks a Markdown report:
// "---\nexocortex: report\nresearch_id: <id>\ngenerated: <time>\n---\n".
// generated is an RFC 3339 time; an empty id or time leaves its line out.
func ReportFrontMatter(researchID, generated string) string {
	var sb strings.Builder
	sb.WriteString("---\n" + ReportKey + ": " + ReportValue + "\n")
	if id := yamlScalar(researchID); id != "" {
		sb.WriteString(ReportIDKey + ": " + id + "\n")
	}
	if t := yamlScalar(generated); t != "" {
		sb.WriteString(ReportTimeKey + ": " + t + "\n")
	}
	sb.WriteString("---\n")
	return sb.String()
}

// yamlScalar writes s as a double-quoted YAML scalar on one line ("" stays
// empty), so an id or time with ':' or '#' reads back as written.
func yamlScalar(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
