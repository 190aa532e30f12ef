package answer

import (
	"context"
	"fmt"
	"math"

	"github.com/exocortex/exocortex/models"
)

// Verification modes (Config.Verify).
const (
	// VerifyStandard runs the deterministic checks, and the entailment
	// model when one is installed.
	VerifyStandard = "standard"
	// VerifyStrict adds a judgement of every claim by the strategic
	// language model role (Judge).
	VerifyStrict = "strict"
)

// answerConfidence derives an answer's confidence from its verification:
// the mean support strength over its claims (an unsupported claim counts
// 0, so removals lower it), less for an answer cut at its budget, one that
// repeated itself, citations that had to move to another context, sentences in
// another language and notes set aside as instructions.
func answerConfidence(v Verified, cut, loop bool) float64 {
	c := v.Confidence
	if cut {
		c *= 0.8
	}
	if loop || v.Repeated > 0 {
		c *= 0.6
	}
	moved := 0
	for _, k := range v.Corrected {
		if k.Moved {
			moved++
		}
	}
	c *= math.Pow(0.9, float64(min(moved, 3)))
	if v.WrongLanguage > 0 {
		c *= 0.8
	}
	if len(v.SetAside) > 0 {
		c *= 0.8
	}
	return c
}

// verifyOptions are the checks the answer's claims go through: its
// language, and the entailment model or the strict judge when there is one.
func (a *Answerer) verifyOptions(ctx context.Context, lang string, cfg Config) Options {
	o := Options{Lang: lang, MinEntailment: cfg.MinEntailment}
	switch {
	case a.Entailer != nil:
		o.Entail = func(premise, hypothesis string) (float64, error) {
			return a.Entailer.Entail(ctx, premise, hypothesis)
		}
	case cfg.Verify == VerifyStrict && a.Router != nil:
		o.Entail = func(premise, hypothesis string) (float64, error) {
			return Judge(ctx, a.Router, premise, hypothesis)
		}
	}
	return o
}

// Entailer scores how strongly a premise (a block's text) states a
// hypothesis (a claim), 0 to 1: an NLI model.
type Entailer interface {
	Entail(ctx context.Context, premise, hypothesis string) (float64, error)
}

// NLIEntailer is an NLI model (models.NLI, models.LazyNLI) as an Entailer:
// the probability of its entailment label.
type NLIEntailer struct {
	Model interface {
		Score(ctx context.Context, premises, hypotheses []string) ([]models.Entailment, error)
	}
}

// Entail scores one pair.
func (e NLIEntailer) Entail(ctx context.Context, premise, hypothesis string) (float64, error) {
	r, err := e.Model.Score(ctx, []string{premise}, []string{hypothesis})
	if err != nil {
		return 0, err
	}
	if len(r) != 1 {
		return 0, fmt.Errorf("entailment: %d scores for one pair", len(r))
	}
	return float64(r[0].Entail), nil
}
