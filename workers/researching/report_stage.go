package researching

import (
	"context"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

// NewReport returns the report stage's handler (kb.research.draft ->
// kb.research.report, the report stored in KB_RESEARCH_REPORTS first).
func NewReport(d research.ReportDeps) (bus.Handler, error) {
	if d.Config.MaxDeliver == 0 {
		d.Config.MaxDeliver = reportMaxDeliver
	}
	rp, err := research.NewReporter(d)
	if err != nil {
		return nil, err
	}
	max := uint64(d.Config.MaxDeliver)
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		dr, err := bus.Decode[*schemas.ResearchDraft](m)
		if err != nil {
			return nil, err
		}
		rep, err := rp.Write(ctx, dr, m.Delivered >= max)
		if err != nil {
			return nil, err
		}
		rep.TraceID = m.TraceID
		return []schemas.Event{rep}, nil
	}), nil
}
