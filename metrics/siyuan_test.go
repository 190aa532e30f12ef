package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

func TestTheSiYuanBridgesStateShowsInTheMetrics(t *testing.T) {
	k := siyuantest.New(t, "tok")
	k.AddNotebook("20261121100831-kt25p1g", "Notes")
	for i, id := range []string{"20261121100831-xs0m89b", "20261121100832-child01"} {
		if err := k.PutDoc("20261121100831-kt25p1g", id, "", []string{"/Birds", "/Owls"}[i],
			siyuantest.Block{ID: id[:15] + "para001", Type: "p", Content: "Crows use tools.", Markdown: "Crows use tools."}); err != nil {
			t.Fatal(err)
		}
	}
	k.SetAsync(true)
	sys, err := system.Start(context.Background(), system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1",
		Log:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
		StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond}}}})
	if err != nil {
		t.Fatal(err)
	}
	var fams = scrape(t)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		fams = scrape(t)
		if value(fams, "exocortex_siyuan_docs_synced", nil) == 2 && value(fams, "exocortex_siyuan_connected", nil) == 1 &&
			value(fams, "exocortex_siyuan_last_reconcile_timestamp_seconds", nil) > 0 {
			break
		}
	}
	if v := value(fams, "exocortex_siyuan_connected", nil); v != 1 {
		t.Errorf("exocortex_siyuan_connected = %v, want 1", v)
	}
	if v := value(fams, "exocortex_siyuan_docs_synced", nil); v != 2 {
		t.Errorf("exocortex_siyuan_docs_synced = %v, want 2", v)
	}
	if v := value(fams, "exocortex_siyuan_docs_sent_total", nil); v < 2 {
		t.Errorf("exocortex_siyuan_docs_sent_total = %v, want at least 2", v)
	}
	if at := value(fams, "exocortex_siyuan_last_reconcile_timestamp_seconds", nil); at <= 0 || time.Since(time.Unix(int64(at), 0)) > time.Minute {
		t.Errorf("exocortex_siyuan_last_reconcile_timestamp_seconds = %v, want the time of the first reconciliation", at)
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}
	// A stopped system's bridge is no longer reported.
	if fams = scrape(t); fams["exocortex_siyuan_connected"] != nil {
		t.Errorf("after Stop the bridge is still reported: %v", fams["exocortex_siyuan_connected"])
	}
}
