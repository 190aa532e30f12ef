package eval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/store"
)

// weighted searches with fixed column weights.
type weighted struct {
	st *store.Store
	w  store.Weights
}

func (s weighted) Search(ctx context.Context, q string, o store.SearchOptions) ([]store.Hit, error) {
	o.Weights = s.w
	return s.st.Search(ctx, q, o)
}

// TestIntegrationTuneWeights searches BM25 column weights on the dev part of
// XQuAD (ru and en indexed together) and logs each candidate's scores; the
// test part is scored only for the chosen weights. Set EXO_XQUAD_DIR to the
// folder holding xquad.en.json and xquad.ru.json.
func TestIntegrationTuneWeights(t *testing.T) {
	dir := os.Getenv("EXO_XQUAD_DIR")
	if dir == "" {
		t.Skip("EXO_XQUAD_DIR is not set (the folder with xquad.en.json and xquad.ru.json)")
	}
	ctx := context.Background()
	var sets []*eval.Set
	for _, lang := range []string{"ru", "en"} {
		s, err := eval.Load(filepath.Join(dir, "xquad."+lang+".json"))
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, s)
	}
	mode := analysis.Mode(os.Getenv("EXO_ANALYZER"))
	if mode == "" {
		mode = analysis.Full
	}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", Analyzer: mode, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	for _, s := range sets {
		for _, d := range s.Docs {
			if _, err := sys.Bus.Publish(ctx, d, "tune"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 100*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	score := func(part string, w store.Weights) []eval.Report {
		var reps []eval.Report
		for _, s := range sets {
			p, err := eval.Split(s, part)
			if err != nil {
				t.Fatal(err)
			}
			r, err := eval.Run(ctx, weighted{sys.Store, w}, p, eval.Options{})
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, r)
		}
		return reps
	}
	line := func(reps []eval.Report) string {
		var out string
		for _, r := range reps {
			out += fmt.Sprintf("  %s n=%d R@1 %.4f R@5 %.4f MRR %.4f", r.Name, r.N, r.RecallAt1, r.RecallAt5, r.MRRAt15)
		}
		return out
	}
	best, bestScore := store.Weights{}, -1.0
	for _, body := range []float64{0.25, 0.5, 1} {
		for _, lem := range []float64{2, 3, 5, 8} {
			w := store.Weights{Body: body, Lemmas: lem, Title: 1, Section: 0.75, Heads: 1}
			reps := score(eval.PartDev, w)
			// Sum of R@1 and MRR@15 over both languages.
			var sc float64
			for _, r := range reps {
				sc += r.RecallAt1 + r.MRRAt15
			}
			t.Logf("%+v%s", w, line(reps))
			if sc > bestScore {
				best, bestScore = w, sc
			}
		}
	}
	t.Logf("best on dev: %+v", best)
	t.Logf("test with best:    %s", line(score(eval.PartTest, best)))
	t.Logf("test with default: %s", line(score(eval.PartTest, store.DefaultWeights)))
}
