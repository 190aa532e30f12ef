package mcpserver

import (
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// dateNote is " (2026-03-02)": a passage's note date, "" when unknown.
func dateNote(updated string) string {
	if d := answer.SourceDate(updated); d != "" {
		return " (" + d + ")"
	}
	return ""
}

// writeFacets ends the search tool's text with the candidates' counts:
// "Notebooks: Work 12, Personal 3", "Tags: …", "Months: …".
func writeFacets(b *strings.Builder, f *schemas.Facets) {
	if f == nil {
		return
	}
	line := func(name string, vs []string) {
		if len(vs) == 0 {
			vs = []string{"none"}
		}
		fmt.Fprintf(b, "\n%s: %s", name, strings.Join(vs, ", "))
	}
	nbs, tags, months := f.Labels()
	fmt.Fprintf(b, "\n\nFacets of %d candidate documents:", f.Docs)
	line("Notebooks", nbs)
	line("Tags", tags)
	line("Months", months)
}
