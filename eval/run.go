package eval

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/exocortex/exocortex/store"
)

// Searcher is the retriever under test.
type Searcher interface {
	Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error)
}

// Report holds the metrics of one run. Recall@k counts a question as found
// when its gold is among the first k distinct documents (or blocks) returned.
type Report struct {
	Name         string  `json:"name,omitempty"`
	N            int     `json:"n"`
	RecallAt1    float64 `json:"recall_at_1"`
	RecallAt5    float64 `json:"recall_at_5"`
	RecallAt15   float64 `json:"recall_at_15"`
	MRRAt15      float64 `json:"mrr_at_15"`
	LatencyP50Ms float64 `json:"latency_ms_p50"`
	LatencyP95Ms float64 `json:"latency_ms_p95"`
	// Misses lists up to 20 question ids not found in the top 15.
	Misses []string `json:"misses,omitempty"`
	lat    []float64
}

// Options tunes a run.
type Options struct {
	// Fetch is how many chunks to ask for per question (default 60), enough
	// to fill 15 distinct documents.
	Fetch int
}

// Run asks every question and scores the ranks of its gold.
func Run(ctx context.Context, s Searcher, set *Set, opts Options) (Report, error) {
	if opts.Fetch <= 0 {
		opts.Fetch = 60
	}
	rep := Report{Name: set.Name}
	var lat []float64
	var r1, r5, r15, mrr float64
	for _, q := range set.Questions {
		if len(q.Gold) == 0 {
			continue // nothing to retrieve (a JSONL question without gold)
		}
		start := time.Now()
		hits, err := s.Search(ctx, q.Question, store.SearchOptions{K: opts.Fetch, SnippetTokens: -1}) // ranks only: no snippets
		if err != nil {
			return rep, fmt.Errorf("question %s: %w", q.ID, err)
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		rank := GoldRank(hits, q.Gold)
		rep.N++
		if rank >= 1 && rank <= 15 {
			mrr += 1 / float64(rank)
			r15++
			if rank <= 5 {
				r5++
			}
			if rank == 1 {
				r1++
			}
		} else if len(rep.Misses) < 20 {
			rep.Misses = append(rep.Misses, q.ID)
		}
	}
	rep.lat = lat
	if rep.N > 0 {
		n := float64(rep.N)
		rep.RecallAt1, rep.RecallAt5, rep.RecallAt15, rep.MRRAt15 = round4(r1/n), round4(r5/n), round4(r15/n), round4(mrr/n)
		rep.LatencyP50Ms, rep.LatencyP95Ms = round4(Percentile(lat, 50)), round4(Percentile(lat, 95))
	}
	return rep, nil
}

// GoldRank returns the 1-based rank of the first gold among the distinct
// documents of hits (a chunk of a gold document, or one covering a gold
// block, counts), or 0 when absent.
func GoldRank(hits []store.Hit, gold []string) int {
	want := make(map[string]bool, len(gold))
	for _, g := range gold {
		want[g] = true
	}
	seen := map[string]bool{}
	rank := 0
	for _, h := range hits {
		if !seen[h.DocID] {
			seen[h.DocID] = true
			rank++
		}
		if want[h.DocID] {
			return rank
		}
		for _, b := range h.BlockIDs {
			if want[b] {
				return rank
			}
		}
	}
	return 0
}

// Merge combines per-set reports into one weighted by question count.
func Merge(name string, reps []Report) Report {
	out := Report{Name: name}
	for _, r := range reps {
		out.N += r.N
		out.lat = append(out.lat, r.lat...)
	}
	if out.N == 0 {
		return out
	}
	for _, r := range reps {
		w := float64(r.N) / float64(out.N)
		out.RecallAt1 += w * r.RecallAt1
		out.RecallAt5 += w * r.RecallAt5
		out.RecallAt15 += w * r.RecallAt15
		out.MRRAt15 += w * r.MRRAt15
	}
	out.LatencyP50Ms, out.LatencyP95Ms = round4(Percentile(out.lat, 50)), round4(Percentile(out.lat, 95))
	out.RecallAt1, out.RecallAt5, out.RecallAt15, out.MRRAt15 = round4(out.RecallAt1), round4(out.RecallAt5), round4(out.RecallAt15), round4(out.MRRAt15)
	return out
}

// Percentile returns the p-th percentile (nearest rank) of xs.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func round4(x float64) float64 { return math.Round(x*10000) / 10000 }
