package answer

import "github.com/exocortex/exocortex/schemas"

// DateCitations gives each citation its note's own time as the contexts
// carry it (Context.Updated, set by the rerank stage): answers show each
// source's date. A citation whose note the contexts do not date (a cached
// answer's) keeps the date it has.
func DateCitations(cites []schemas.Citation, contexts []schemas.Context) {
	if len(cites) == 0 {
		return
	}
	byDoc := map[string]string{}
	for _, c := range contexts {
		if c.Updated != "" && c.DocID != "" {
			byDoc[c.DocID] = c.Updated
		}
	}
	for i := range cites {
		if t, ok := byDoc[cites[i].DocID]; ok {
			cites[i].Updated = t
		}
	}
}

// SourceDate is the day of a source's time ("2026-03-02", the RFC 3339
// time's date as written), "" when it has none: how the doors show it.
func SourceDate(updated string) string {
	if len(updated) >= 10 && updated[4] == '-' && updated[7] == '-' {
		return updated[:10]
	}
	return ""
}
