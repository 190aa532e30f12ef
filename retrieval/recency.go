package retrieval

import (
	"context"
	"fmt"
	"math"
	"sort"
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
//
// In rerank mode the cross-encoder orders the candidates it scores, and
// there recency is fused with its score (preferRecent): a candidate is
// ordered by
//
//	score + RecencyWeight · 2^(−age/RecencyHalfLife)
//
// The score is a logit, the log-odds that the passage answers the
// question; recency is a prior belief that a newer note is the one wanted,
// and adding log prior odds to it is Bayes' rule. A note changed today has
// its odds multiplied by e^RecencyWeight (e ≈ 2.7 by default), one a
// half-life old by e^(RecencyWeight/2), an old one by about 1: recency
// decides between notes the cross-encoder scores within RecencyWeight of
// each other, and a note it scores more than RecencyWeight above another
// stays above it whatever their ages. The shown score stays the
// cross-encoder's.

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

// RecencyBonus is the cross-encoder score (a logit) a note of the given age
// gains in rerank mode (a note from the future counts as fresh).
func RecencyBonus(age time.Duration, cfg Config) float64 {
	cfg = cfg.withDefaults()
	age = max(age, 0)
	return cfg.RecencyWeight * math.Exp2(-float64(age)/float64(cfg.RecencyHalfLife))
}

// preferRecent reorders the contexts the cross-encoder scored (sorted by
// its score) by score plus each note's RecencyBonus when the query prefers
// recent notes. A note of unknown time gains nothing; when no note's time
// is known the order stays the cross-encoder's, with ReasonNoRecency.
func (r *Retriever) preferRecent(ctx context.Context, rq *schemas.QueryRetrieved, scored []schemas.Context, cfg Config, out *schemas.QueryReranked) error {
	if rq.Options.Scope == nil || !rq.Options.Scope.Recent || len(scored) == 0 {
		return nil
	}
	dt, ok := baseIndex(r.Index).(DocTimer)
	if !ok {
		noRecency(out, "this rerank worker has no index of note times; ordered by the cross-encoder alone")
		return nil
	}
	t := time.Now()
	seen := map[string]bool{}
	var docs []string
	for _, c := range scored {
		if d := c.DocID; d != "" && !seen[d] {
			seen[d] = true
			docs = append(docs, d)
		}
	}
	times, err := dt.DocTimes(ctx, docs)
	if err != nil {
		return fmt.Errorf("query %s: recency of the reranked candidates: %w", rq.QueryID, err)
	}
	if len(times) == 0 {
		noRecency(out, "none of the reranked notes has a known time; ordered by the cross-encoder alone")
		return nil
	}
	now := timeNow()
	type keyed struct {
		c   schemas.Context
		key float64
	}
	ks := make([]keyed, len(scored))
	for i, c := range scored {
		ks[i] = keyed{c: c, key: c.Score}
		if at, ok := times[c.DocID]; ok {
			ks[i].key += RecencyBonus(now.Sub(at), cfg)
		}
	}
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].key > ks[j].key }) // ties keep the cross-encoder's order
	for i := range ks {
		scored[i] = ks[i].c
	}
	out.TimingsMS["rerank_recency"] = ms(time.Since(t))
	return nil
}

// noRecency adds ReasonNoRecency with why, unless the query has it already
// (from its retrieve worker).
func noRecency(out *schemas.QueryReranked, why string) {
	for _, r := range out.Reasons {
		if strings.HasPrefix(r, ReasonNoRecency) {
			return
		}
	}
	out.Reasons = append(out.Reasons, ReasonNoRecency+": "+why)
}
