package answer

import (
	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// VerifyClaim checks one claim (a research fact, say) against the blocks it
// names, each given as its own context (BlockID and Text: the block's own
// text), by the rules of Verify: a quote of the block in «» (at least
// MinQuoteWords content words) or, without one, at least MinOverlap and
// MinOverlapWords of the claim's content lemmas held by the block, with the
// same polarity. It returns a citation (Number 0) for every block that
// supports the claim, in the order given, and, when none does, the drop
// reason of the first block that failed (DropUnsupported, DropQuoteNotFound,
// DropPolarity; DropUncited when no block was given or the claim has no
// content words).
func VerifyClaim(a *analysis.Analyzer, claim string, blocks []schemas.Context) (cites []schemas.Citation, reason string) {
	v := &verifier{a: a, contexts: blocks, lemmas: map[[2]int]map[string]bool{}}
	if len(contentWords(a, claim)) == 0 || len(blocks) == 0 {
		return nil, DropUncited
	}
	for i, c := range blocks {
		e, why := v.support(claim, ref{label: c.BlockID, group: -1, ctx: i, named: c.BlockID})
		if why != "" {
			if reason == "" {
				reason = why
			}
			continue
		}
		cites = append(cites, schemas.Citation{BlockID: e.block, ChunkID: c.ChunkID, DocID: c.DocID, Title: c.Title,
			SectionPath: c.SectionPath, Quote: e.quote, Link: Link(e.block, c.Path)})
	}
	if len(cites) > 0 {
		return cites, ""
	}
	return nil, reason
}
