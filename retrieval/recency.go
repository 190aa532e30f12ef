package retrieval

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// Recency (Scope.Recent) is one more signal of the fusion. Reciprocal Rank
// Fusion gives a chunk 1/(k+rank) per list that holds it; the recency
// signal gives each candidate
//
//	RecencyWeight · 2^(−age/RecencyHalfLife) / (k+1)
//
// where age is how long ago its note was last changed (its own time, see
// store.DocTimes): a note changed today gets what a first place in one more
// list is worth, one a half-life old half of that, an old one almost
// nothing. It is a decay rather than a rank among the candidates so that a
// note's share does not hang on which other notes matched, and it adds to
// the fused score rather than multiplying it, so recency reorders notes that
// match about equally well and cannot lift a note that barely matched over
// one that matched well (a first place is worth 1/61, a 60th 1/120 with the
// default k). A note whose time is unknown gets no share. Without Recent
// the fusion is unchanged.

// timeNow is the clock of the recency signal (tests set it).
var timeNow = time.Now

// recencyPref is a query's preference for recent notes.
type recencyPref struct {
	qs  *queryScope
	out *schemas.QueryRetrieved
}

// recencyOf is the query's recency preference, nil when it has none.
func recencyOf(qs *queryScope, out *schemas.QueryRetrieved) *recencyPref {
	if qs == nil || !qs.scope.Recent {
		return nil
	}
	return &recencyPref{qs: qs, out: out}
}

// apply adds each candidate's recency share to its fused score.
func (p *recencyPref) apply(ctx context.Context, f *fusion, cfg Config) error {
	if p == nil || len(f.order) == 0 {
		return nil
	}
	si, ok := p.qs.raw.(ScopeIndex)
	if !ok {
		p.out.Reasons = append(p.out.Reasons, ReasonNoRecency+": this retrieve worker has no index of note times; ranked without recency")
		return nil
	}
	t := time.Now()
	seen := map[string]bool{}
	var docs []string
	for _, id := range f.order {
		if d := docOfCandidate(f.byID[id]); d != "" && !seen[d] {
			seen[d] = true
			docs = append(docs, d)
		}
	}
	times, err := si.DocTimes(ctx, docs)
	if err != nil {
		return fmt.Errorf("recency: %w", err)
	}
	now := timeNow()
	for _, id := range f.order {
		c := f.byID[id]
		if at, ok := times[docOfCandidate(c)]; ok {
			c.Fused += RecencyShare(now.Sub(at), cfg)
		}
	}
	p.out.TimingsMS["recency"] = ms(time.Since(t))
	return nil
}

// RecencyShare is the fused-score share of a note of the given age (a note
// from the future counts as fresh).
func RecencyShare(age time.Duration, cfg Config) float64 {
	cfg = cfg.withDefaults()
	age = max(age, 0)
	return cfg.RecencyWeight * math.Exp2(-float64(age)/float64(cfg.RecencyHalfLife)) / (cfg.RRFK + 1)
}

// docOfCandidate is a candidate's document: its passage's, else the part
// of its chunk id before the last ':' (the chunk stage's "<doc>:<hash>").
func docOfCandidate(c *schemas.Candidate) string {
	if c.DocID != "" {
		return c.DocID
	}
	if i := strings.LastIndexByte(c.ChunkID, ':'); i > 0 {
		return c.ChunkID[:i]
	}
	return ""
}
