package main

import (
	"fmt"
	"strings"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// facetsUsage is the help of search's --facets.
const facetsUsage = "after the hits, count the documents of the query's candidates (the fused top 80, not only the k shown) by notebook, tag and month, to narrow the search by (in --json: facets)"

// facetsShown is how many values of each facet the text output names.
const facetsShown = 10

// printFacets prints a search's facets after its hits:
// "notebooks: Work 12, Personal 3", "tags: recipe 5, …", "months: 2026-11 4, …".
func printFacets(f *schemas.Facets) {
	if f == nil {
		return
	}
	nbs, tags, months := f.Labels()
	fmt.Printf("\nfacets of %d candidate documents:\n", f.Docs)
	fmt.Printf("notebooks: %s\n", facetLine(nbs))
	fmt.Printf("tags: %s\n", facetLine(tags))
	fmt.Printf("months: %s\n", facetLine(months))
}

// facetLine joins the first facetsShown values, saying how many more.
func facetLine(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	if len(vs) > facetsShown {
		return strings.Join(vs[:facetsShown], ", ") + fmt.Sprintf(", … %d more", len(vs)-facetsShown)
	}
	return strings.Join(vs, ", ")
}

// sourceLabel is " (2026-03-02, newer)": a cited source's date and, when
// it disagrees with another source, whether it is the newer; "" when it
// has neither.
func sourceLabel(c schemas.Citation, lang string) string {
	if l := answer.SourceLabel(c, lang); l != "" {
		return " (" + l + ")"
	}
	return ""
}
