package researching

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage names of the supervisor and the report.
const (
	StageDraft  = "draft"
	StageReport = "report"
)

// Consumer settings of the draft and report stages: a provider call of a
// few minutes at worst (in-progress acks keep the message), three tries.
const (
	draftAckWait     = 3 * time.Minute
	draftMaxDeliver  = 3
	reportAckWait    = 5 * time.Minute
	reportMaxDeliver = 3
)

// DraftReportSpecs are the consumer specs of the draft and report stages.
func DraftReportSpecs() []bus.StageSpec {
	return []bus.StageSpec{
		{Name: StageDraft, Stream: stage.StreamResearch, Filters: []string{schemas.SubjectResearchFinding},
			AckWait: draftAckWait, MaxDeliver: draftMaxDeliver},
		{Name: StageReport, Stream: stage.StreamResearch, Filters: []string{schemas.SubjectResearchDraft},
			AckWait: reportAckWait, MaxDeliver: reportMaxDeliver},
	}
}

// NewDraft returns the draft stage's handler (kb.research.finding ->
// kb.research.draft, once every finding of a research is in; or, when the
// outline names gaps, kb.research.task for each follow-up task, whose
// findings then complete the research again).
func NewDraft(d research.DraftDeps) (bus.Handler, error) {
	if d.Config.MaxDeliver == 0 {
		d.Config.MaxDeliver = draftMaxDeliver
	}
	dr, err := research.NewDrafter(d)
	if err != nil {
		return nil, err
	}
	max := uint64(d.Config.MaxDeliver)
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		f, err := bus.Decode[*schemas.ResearchFinding](m)
		if err != nil {
			return nil, err
		}
		evs, err := dr.Next(ctx, f, m.Delivered >= max)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			switch e := ev.(type) {
			case *schemas.ResearchDraft:
				e.TraceID = m.TraceID
			case *schemas.ResearchTask:
				e.TraceID = m.TraceID
			}
		}
		return evs, nil
	}), nil
}
