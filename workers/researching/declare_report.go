package researching

import (
	"context"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// progress publishes research steps on core NATS.
func progress(d *stage.Deps) func(*schemas.ResearchProgress) {
	return func(p *schemas.ResearchProgress) {
		if err := d.PublishCore(p, ""); err != nil {
			d.Log.Warn().Err(err).Str("research_id", p.ResearchID).Str("step", p.Step).Msg("research progress not sent")
		}
	}
}

// DraftStage declares the draft stage (the supervisor): kb.research.finding
// -> kb.research.draft once every task of a research has reported (and
// kb.research.task for the follow-up tasks of the outline's gaps).
func DraftStage() stage.Declaration {
	return stage.Declaration{
		Name:       StageDraft,
		Stream:     stage.StreamResearch,
		Inputs:     []string{schemas.SubjectResearchFinding},
		Outputs:    []string{schemas.SubjectResearchDraft, schemas.SubjectResearchTask, schemas.SubjectResearchProgressPrefix + "*"},
		AckWait:    draftAckWait,
		MaxDeliver: draftMaxDeliver,
		Needs:      stage.NeedRouter,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			state, err := d.KV(ctx, stage.BucketResearch)
			if err != nil {
				return nil, err
			}
			cfg := stage.ConfigOf(d, research.DraftConfig{})
			cfg.MaxDeliver = draftMaxDeliver
			return NewDraft(research.DraftDeps{Router: d.Router, State: state, Progress: progress(d), Config: cfg})
		},
	}
}

// ReportStage declares the report stage: kb.research.draft -> the verified
// report, stored in KB_RESEARCH_REPORTS and published on kb.research.report.
func ReportStage() stage.Declaration {
	return stage.Declaration{
		Name:       StageReport,
		Stream:     stage.StreamResearch,
		Inputs:     []string{schemas.SubjectResearchDraft},
		Outputs:    []string{schemas.SubjectResearchReport, schemas.SubjectResearchProgressPrefix + "*"},
		AckWait:    reportAckWait,
		MaxDeliver: reportMaxDeliver,
		Needs:      stage.NeedRouter | stage.NeedAnalyzer | stage.NeedStore,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			reports, err := d.KV(ctx, stage.BucketReports)
			if err != nil {
				return nil, err
			}
			cfg := stage.ConfigOf(d, research.ReportConfig{})
			cfg.MaxDeliver = reportMaxDeliver
			var blocks research.BlockSource
			if d.Store != nil {
				blocks = research.StoreBlocks{Store: d.Store}
			}
			return NewReport(research.ReportDeps{Router: d.Router, Analyzer: d.Analyzer, Blocks: blocks, Reports: reports,
				Progress: progress(d), Config: cfg})
		},
	}
}
