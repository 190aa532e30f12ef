package researching

import (
	"context"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// PlanStage declares the plan stage: kb.research.requested -> one
// kb.research.task per sub-question (strategic role; without a provider,
// the question itself, evidence_only; a reply that cannot be read, also
// when asked again, gives a plan built from the best documents' headings).
func PlanStage() stage.Declaration {
	return stage.Declaration{
		Name:       StagePlan,
		Stream:     stage.StreamResearch,
		Inputs:     []string{schemas.SubjectResearchRequested},
		Outputs:    []string{schemas.SubjectResearchTask, schemas.SubjectResearchProgressPrefix + "*"},
		AckWait:    PlanAckWait,
		MaxDeliver: PlanMaxDeliver,
		// The store and retriever build a plan without the model from the
		// best documents' headings when the model's plan cannot be read.
		Needs: stage.NeedRouter | stage.NeedStore | stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker | stage.NeedRetriever,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			cfg := stage.ConfigOf(d, PlanConfig{})
			cfg.MaxDeliver = PlanMaxDeliver
			return NewPlan(PlanDeps{Router: d.Router, Retriever: d.Retriever, Progress: progress(d), Config: cfg}), nil
		},
	}
}

// InvestigateStage declares the investigate stage: kb.research.task ->
// kb.research.finding, reading the retrieved documents one at a time and
// checkpointing the verified facts after each. Several workers (here or
// on other machines with worker --stage investigate) take tasks in parallel.
func InvestigateStage() stage.Declaration {
	return stage.Declaration{
		Name:        StageInvestigate,
		Stream:      stage.StreamResearch,
		Inputs:      []string{schemas.SubjectResearchTask},
		Outputs:     []string{schemas.SubjectResearchFinding, schemas.SubjectResearchProgressPrefix + "*"},
		AckWait:     InvestigateAckWait,
		MaxDeliver:  InvestigateMaxDeliver,
		Concurrency: 3,
		Needs: stage.NeedStore | stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker | stage.NeedRetriever |
			stage.NeedRouter | stage.NeedAnalyzer,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			state, err := d.KV(ctx, stage.BucketResearch)
			if err != nil {
				return nil, err
			}
			cfg := stage.ConfigOf(d, InvestigateConfig{})
			cfg.MaxDeliver = InvestigateMaxDeliver
			deps := InvestigateDeps{Router: d.Router, Retriever: d.Retriever, Analyzer: d.Analyzer, State: state,
				Progress: progress(d), Config: cfg}
			if d.Store != nil {
				deps.Docs = d.Store
			}
			return NewInvestigate(deps)
		},
	}
}
