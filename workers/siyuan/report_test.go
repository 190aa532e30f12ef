package siyuan_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
)

// A report saved by research --save siyuan is a document with the
// attribute custom-exocortex-report; the bridge reads it from the document
// block's ial and sends the document flagged as a report, whether it sees
// the attribute's /ws event or only a later reconciliation.
func TestTheBridgeSendsASavedReportFlaggedAsAReport(t *testing.T) {
	for _, tc := range []struct {
		name, title, md string
		live            bool
	}{
		{"an English report marked after its creation, seen live", "/Research/Backups", "# Backups\n\nBackups run every night at 02:00 [1].\n", true},
		{"a Russian report marked while the bridge was away, found by reconciliation", "/Research/Резервные копии", "# Резервные копии\n\nКопии делаются каждую ночь в 02:00 [1].\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := kernel(t)
			var out sent
			src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond, Reconcile: time.Hour},
				bus.NewMemKV(), out.publish, zerolog.Nop())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := siyuan.NewClient(k.URL(), "tok")
			if !tc.live {
				// The report exists, unmarked, before the first sync.
				id, err := c.CreateDocWithMd(ctx, box, tc.title, tc.md)
				must(t, err)
				must(t, k.Flush())
				if _, err := src.Reconcile(ctx, nil); err != nil {
					t.Fatal(err)
				}
				evs := out.since(0)
				if !has(evs, id, false, func(e *schemas.DocChanged) bool { return !e.Report }) {
					t.Fatalf("the unmarked document was not sent as a note")
				}
				n := out.len()
				must(t, c.SetBlockAttrs(ctx, id, map[string]string{schemas.ReportAttr: "research-42"}))
				st, err := src.Reconcile(ctx, nil)
				if err != nil || st.Sent != 1 {
					t.Fatalf("reconciliation after the mark: %+v, %v; want the report sent again", st, err)
				}
				checkReport(t, out.since(n), id)
				return
			}
			done := make(chan error, 1)
			go func() { done <- src.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			out.waitFor(t, 0, "the initial sync", func(evs []*schemas.DocChanged) bool { return len(evs) == 4 })
			for k.Connected() == 0 {
				time.Sleep(10 * time.Millisecond)
			}
			for _, e := range out.since(0) {
				if e.Report {
					t.Errorf("note %s sent as a report", e.DocID)
				}
			}
			n := out.len()
			id, err := c.CreateDocWithMd(ctx, box, tc.title, tc.md)
			must(t, err)
			must(t, c.SetBlockAttrs(ctx, id, map[string]string{schemas.ReportAttr: "research-42"}))
			evs := out.waitFor(t, n, "the report flagged", func(evs []*schemas.DocChanged) bool {
				return has(evs, id, false, func(e *schemas.DocChanged) bool { return e.Report })
			})
			checkReport(t, evs, id)
		})
	}
}

func checkReport(t *testing.T, evs []*schemas.DocChanged, id string) {
	t.Helper()
	var last *schemas.DocChanged
	for _, e := range evs {
		if e.DocID == id {
			last = e
		}
	}
	if last == nil || !last.Report || last.Meta[schemas.ReportAttr] != "research-42" || !schemas.IsReportMeta(last.Meta) {
		t.Fatalf("the report was sent as %+v; want Report and meta %s=research-42", last, schemas.ReportAttr)
	}
}
