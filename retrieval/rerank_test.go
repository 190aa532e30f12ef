package retrieval_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// reverser is a cross-encoder that scores a passage by the number at the
// end of its text (a fused rank) reversed, so that its order is the fused
// order upside down; it records the passages it was asked about.
type reverser struct{ asked []string }

func (r *reverser) Score(_ context.Context, _ string, passages []string) ([]float32, error) {
	r.asked = append(r.asked, passages...)
	out := make([]float32, len(passages))
	for i, p := range passages {
		var n int
		if _, err := fmt.Sscanf(p[strings.LastIndexByte(p, ' ')+1:], "%d", &n); err != nil {
			return nil, err
		}
		out[i] = float32(n)
	}
	return out, nil
}

func (*reverser) Name() string { return "reverser" }

// fused returns n candidates in fused order (rank i+1 has text "passage i+1").
func fused(n int) []schemas.Candidate {
	out := make([]schemas.Candidate, n)
	for i := range out {
		out[i].ChunkID = fmt.Sprintf("c%02d", i+1)
		out[i].Text = fmt.Sprintf("passage %d", i+1)
		out[i].FusedRank = i + 1
		out[i].Fused = 1 / (60 + float64(i+1))
	}
	return out
}

func TestTheCrossEncoderScoresTheFusedTopAndNeverLessThanItsTop20(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates int // Config.RerankCandidates
		fused, k   int
		scored     int
	}{
		{"by default the best 40 of 80 are scored", 0, 80, 60, 40},
		{"a setting under the floor still scores the fused top 20", 5, 80, 60, 20},
		{"a larger setting scores more", 60, 80, 80, 60},
		{"fewer candidates than the setting are all scored", 0, 15, 15, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := &reverser{}
			r := &retrieval.Retriever{Reranker: ce, Config: retrieval.Config{RerankCandidates: tc.candidates}}
			// Candidates that arrive out of fused order are scored by it.
			cands := fused(tc.fused)
			slices.Reverse(cands)
			out, err := r.Rerank(context.Background(), &schemas.QueryRetrieved{Query: schemas.Query{QueryID: "q", Options: schemas.QueryOptions{K: tc.k, Expand: -1}}, Searched: "q", Mode: schemas.ModeRerank,
				Candidates: cands})
			if err != nil {
				t.Fatal(err)
			}
			if len(ce.asked) != tc.scored {
				t.Fatalf("the cross-encoder scored %d candidates, want %d", len(ce.asked), tc.scored)
			}
			for i, p := range ce.asked {
				if want := fmt.Sprintf("passage %d", i+1); p != want {
					t.Fatalf("scored %q at %d, want the fused order (%q)", p, i, want)
				}
			}
			if len(out.Contexts) != tc.k {
				t.Fatalf("%d contexts, want %d", len(out.Contexts), tc.k)
			}
			// The scored ones first, in the cross-encoder's order (the fused
			// order reversed); then the rest in fused order.
			for i, c := range out.Contexts {
				want, src := tc.scored-i, "rerank"
				if i >= tc.scored {
					want, src = i+1, "fused"
				}
				if c.FusedRank != want || c.Source != src || c.Rank != i+1 {
					t.Errorf("context %d: fused rank %d (%s), want %d (%s)", i+1, c.FusedRank, c.Source, want, src)
				}
			}
		})
	}
}
