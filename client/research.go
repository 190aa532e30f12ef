package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	researchstage "github.com/exocortex/exocortex/workers/researching"
	"github.com/exocortex/exocortex/workers/stage"
)

// ErrResearchFailed is a research that its stages gave up on (a "failed"
// progress step): no report will come.
var ErrResearchFailed = errors.New("research failed")

// ResearchOptions say what Research does besides waiting for the report.
type ResearchOptions struct {
	// OnProgress gets every progress step as it comes; nil: none.
	OnProgress func(*schemas.ResearchProgress)
	// Timeout bounds the wait for the report. Zero: Options.ResearchTimeout,
	// or the request's wall-time budget and a minute when that is shorter.
	Timeout time.Duration
}

// researchPath is the stages a research passes through (see searchPath).
var researchPath = stagesOn(stage.StreamResearch, researchstage.StagePlan, researchstage.StageInvestigate,
	researchstage.StageDraft, researchstage.StageReport)

// Research publishes a research request and waits for its report (see
// awaitReport).
func (c *Client) Research(ctx context.Context, req *schemas.ResearchRequested, o ResearchOptions) (*schemas.ResearchReport, error) {
	if c.bus == nil {
		return nil, errors.New("research runs on the bus: this client reads the data directory alone (start exocortex up)")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.opts.ResearchTimeout
		if w := time.Duration(req.Budget.WallSeconds) * time.Second; w > 0 && w+time.Minute < timeout {
			timeout = w + time.Minute
		}
	}
	return awaitReport(ctx, c.bus, req, timeout, o.OnProgress)
}

// awaitReport publishes a research request and waits for its report: it
// listens on kb.research.progress.<research_id> first (onProgress gets
// every step), then publishes kb.research.requested and returns the
// kb.research.report of that research. A research whose stages fail for
// good (a "failed" step without a task) ends with ErrResearchFailed; one
// that does not finish within timeout ends with an error naming what it
// waited for (a report stored meanwhile in KB_RESEARCH_REPORTS is still
// returned).
func awaitReport(ctx context.Context, b *bus.Bus, req *schemas.ResearchRequested, timeout time.Duration,
	onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	if req.Lang == "" {
		req.Lang = lang.DetectLang(req.Question)
	}
	if req.RequestedAt.IsZero() {
		req.RequestedAt = time.Now().UTC()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prog := &researchProgress{id: req.ResearchID, onProgress: onProgress, failed: make(chan string, 1), reported: make(chan struct{}, 1)}
	stop, err := b.Subscribe(schemas.SubjectResearchProgressPrefix+req.ResearchID, prog.see)
	if err != nil {
		return nil, err
	}
	defer stop()
	// The report comes on kb.research.report, shared by every research:
	// the bus hands this one only its own.
	w, err := b.Expect(schemas.SubjectResearchReport, req.ResearchID)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	reports := nextReport(ctx, b, w, req.ResearchID)
	ack, err := b.Publish(ctx, req, req.ResearchID)
	if err != nil {
		return nil, fmt.Errorf("research %s: %w", req.ResearchID, err)
	}
	// A report too large for one message travels as a stub: once the
	// report step says it is done, read the stored report.
	var poll <-chan time.Time
	for {
		select {
		case r := <-reports:
			// The report step's progress and the report travel apart: let
			// the step arrive, so the progress shown ends with it.
			if poll == nil {
				select {
				case <-prog.reported:
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
			}
			return r, nil
		case why := <-prog.failed:
			return nil, fmt.Errorf("research %s: %w: %s", req.ResearchID, ErrResearchFailed, why)
		case <-prog.reported:
			if poll == nil {
				t := time.NewTicker(500 * time.Millisecond)
				defer t.Stop()
				poll = t.C
			}
		case <-poll:
			if r, err := loadReport(ctx, b, req.ResearchID); err == nil && r != nil {
				return r, nil
			}
		case <-ctx.Done():
			return lastLook(ctx, b, w, req.ResearchID, ack.Sequence, timeout)
		}
	}
}

// researchProgress passes one research's progress on and signals its
// ends: failed (the research failed, with why) and reported (the report
// step said it is done).
type researchProgress struct {
	id         string
	onProgress func(*schemas.ResearchProgress)
	failed     chan string
	reported   chan struct{}
}

func (rp *researchProgress) see(ev schemas.Event) {
	p, ok := ev.(*schemas.ResearchProgress)
	if !ok || p.ResearchID != rp.id {
		return
	}
	if rp.onProgress != nil {
		rp.onProgress(p)
	}
	switch {
	case p.Step == "failed" && p.TaskID == "":
		select {
		case rp.failed <- p.Message:
		default:
		}
	case p.Step == "report" && p.Done:
		select {
		case rp.reported <- struct{}{}:
		default:
		}
	}
}

// nextReport hands on the research's report event when it comes.
func nextReport(ctx context.Context, b *bus.Bus, w *bus.Reply, researchID string) <-chan *schemas.ResearchReport {
	reports := make(chan *schemas.ResearchReport, 1)
	go func() {
		for {
			ev, err := w.Next(ctx)
			if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
				return
			}
			if err != nil {
				// A report whose body cannot be read: the stored one is
				// read once the report step says it is done.
				b.Log.Warn().Err(err).Str("research_id", researchID).Msg("research report not readable from its event")
				continue
			}
			if r, ok := ev.(*schemas.ResearchReport); ok {
				reports <- r
				return
			}
		}
	}()
	return reports
}

// lastLook is the end of a wait that ran out (ctx is done): the report
// may have been stored while its event was missed (a reconnect), so look
// before giving up; else say where the research stopped.
func lastLook(ctx context.Context, b *bus.Bus, w *bus.Reply, researchID string, seq uint64, timeout time.Duration) (*schemas.ResearchReport, error) {
	lookCtx, cancelLook := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelLook()
	if r, err := loadReport(lookCtx, b, researchID); err == nil && r != nil {
		return r, nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why := w.Explain(ctx, researchPath, seq)
		why.What, why.Waited = "report", timeout
		return nil, fmt.Errorf("research %s: %w ('exocortex research status %s' tells later whether it finished)", researchID, why, researchID)
	}
	return nil, fmt.Errorf("research %s: %w", researchID, ctx.Err())
}

// Report returns the stored report of a research (KB_RESEARCH_REPORTS),
// nil when there is none.
func (c *Client) Report(ctx context.Context, researchID string) (*schemas.ResearchReport, error) {
	return loadReport(ctx, c.bus, researchID)
}

func loadReport(ctx context.Context, b *bus.Bus, researchID string) (*schemas.ResearchReport, error) {
	kv, err := b.KV(ctx, stage.BucketReports)
	if err != nil {
		return nil, err
	}
	return research.LoadReport(ctx, kv, researchID)
}

// Reports returns every stored report, the newest first. A value that
// does not decode is skipped and named in the returned errors.
func (c *Client) Reports(ctx context.Context) ([]*schemas.ResearchReport, error) {
	kv, err := c.bus.KV(ctx, stage.BucketReports)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, fmt.Errorf("listing %s: %w", stage.BucketReports, err)
	}
	var out []*schemas.ResearchReport
	var errs []error
	for _, k := range keys {
		raw, err := kv.Get(ctx, k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if raw == nil {
			continue
		}
		var r schemas.ResearchReport
		if err := json.Unmarshal(raw, &r); err != nil {
			errs = append(errs, fmt.Errorf("stored report %s: %w", k, err))
			continue
		}
		if r.ResearchID == "" {
			r.ResearchID = k
		}
		out = append(out, &r)
	}
	sort.SliceStable(out, func(i, j int) bool { return ReportTime(out[i]).After(ReportTime(out[j])) })
	return out, errors.Join(errs...)
}

// ReportTime is when a report was finished (else started, else its
// envelope's time).
func ReportTime(r *schemas.ResearchReport) time.Time {
	switch {
	case !r.Finished.IsZero():
		return r.Finished
	case !r.Started.IsZero():
		return r.Started
	}
	return r.Time
}

// ResearchStateKeys returns the keys of KB_RESEARCH_STATE that belong to a
// research (its task checkpoints and the supervisor's record hold its id):
// a research with some and no report is in progress.
func (c *Client) ResearchStateKeys(ctx context.Context, researchID string) ([]string, error) {
	kv, err := c.bus.KV(ctx, stage.BucketResearch)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, fmt.Errorf("listing %s: %w", stage.BucketResearch, err)
	}
	var out []string
	for _, k := range keys {
		if strings.Contains(k, researchID) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// HasResearchStages reports whether the research stages' first consumer
// (plan, on KB_RESEARCH) exists on the client's server: without it a
// request is never picked up.
func (c *Client) HasResearchStages(ctx context.Context) bool {
	_, err := c.bus.JS.Consumer(ctx, stage.StreamResearch, "plan")
	return err == nil
}
