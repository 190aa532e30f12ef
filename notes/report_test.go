package notes

import (
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

// A Markdown file whose front matter says "exocortex: report" (what
// research --save DIR writes) is sent flagged as a report, with its
// research id in its meta; any other note is not.
func TestAMarkdownReportIsFlaggedByItsFrontMatter(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		report   bool
		id       string
	}{
		{"the front matter research --save writes marks an English report",
			schemas.ReportFrontMatter("research-7", "2026-01-02T03:04:05Z") + "# Backups\n\nBackups run nightly [1].\n", true, "research-7"},
		{"the same front matter marks a Russian report",
			schemas.ReportFrontMatter("research-8", "2026-01-02T03:04:05Z") + "# Резервные копии\n\nКопии делаются ночью [1].\n", true, "research-8"},
		{"a hand-written mark in any case is a report too", "---\nexocortex: Report\n---\n# Notes on notes\n", true, ""},
		{"a note with other front matter is a note", "---\ntags: [report, exocortex]\ntitle: Weekly report\n---\n# Week 3\n\nShipped.\n", false, ""},
		{"a note without front matter is a note", "# Вороны\n\nВороны помнят лица.\n", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := parseMD(t, tc.md)
			if d.Report != tc.report || d.Meta[schemas.ReportIDKey] != tc.id {
				t.Errorf("report %v, research id %q (meta %v); want %v, %q", d.Report, d.Meta[schemas.ReportIDKey], d.Meta, tc.report, tc.id)
			}
			if tc.report && d.Meta[schemas.ReportTimeKey] == "" && tc.id != "" {
				t.Errorf("the generated time did not survive the front matter: %v", d.Meta)
			}
			for _, b := range d.Blocks {
				if b.Text == "exocortex: report" {
					t.Errorf("the front matter was indexed as text: %+v", b)
				}
			}
		})
	}
}
