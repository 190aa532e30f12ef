package system_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// BenchmarkSiYuanEditToSearchable edits a block in a fake kernel (SQL
// written lazily, as the real kernel does; the bridge asks it to flush)
// and times until the full-text index finds the new word: /ws savedoc ->
// coalescing window (the default 300 ms) -> flush, SQL and kramdown reads ->
// kb.doc.changed -> chunk -> index. Lexical only (no models).
func BenchmarkSiYuanEditToSearchable(b *testing.B) {
	k := siyuanKernel(b)
	sys, err := system.Start(context.Background(), system.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
		Log: zerolog.Nop(), StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok"}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Stop()
	searchable(b, sys, "tools", "20261121100831-para001")
	var lat []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		word := fmt.Sprintf("zq%dx%d", i, time.Now().UnixNano()%1000)
		t0 := time.Now()
		if err := k.EditDoc(syDoc, func(bs []siyuantest.Block) []siyuantest.Block {
			bs[1].Content = "Crows remember " + word + " faces."
			return bs
		}); err != nil {
			b.Fatal(err)
		}
		searchable(b, sys, word, "20261121100831-para001")
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
	}
	b.StopTimer()
	b.ReportMetric(eval.Percentile(lat, 50), "p50-ms")
	b.ReportMetric(eval.Percentile(lat, 95), "p95-ms")
}

// BenchmarkSiYuanInitialSync10k syncs a fake kernel holding 10,000 blocks
// (100 documents of a heading and 99 XQuAD paragraphs) into a fresh system and
// waits until every chunk is indexed.
func BenchmarkSiYuanInitialSync10k(b *testing.B) {
	var sents []string
	for _, d := range corpus(b) {
		if d.Source == schemas.SourceSiYuan {
			continue // the XQuAD paragraphs only
		}
		for _, bl := range d.Blocks {
			if bl.Text != "" {
				sents = append(sents, bl.Text)
			}
		}
	}
	k := siyuantest.New(b, "tok")
	k.AddNotebook(syBox, "Notes")
	for d := 0; d < 100; d++ {
		blocks := []siyuantest.Block{{ID: fmt.Sprintf("20261121%06d-h%06d", d, d), Type: "h", Subtype: "h1",
			Content: fmt.Sprintf("Section %d", d), Markdown: fmt.Sprintf("# Section %d", d)}}
		for p := 0; p < 99; p++ {
			s := sents[(d*99+p)%len(sents)]
			blocks = append(blocks, siyuantest.Block{ID: fmt.Sprintf("20261121%06d-p%06d", d, p), Type: "p", Content: s, Markdown: s})
		}
		if err := k.PutDoc(syBox, fmt.Sprintf("20261121%06d-doc%04d", d, d), "", fmt.Sprintf("/Doc %d", d), blocks...); err != nil {
			b.Fatal(err)
		}
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		t0 := time.Now()
		sys, err := system.Start(ctx, system.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:-1", NoModels: true,
			Log: zerolog.Nop(), StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok"}}}})
		if err != nil {
			b.Fatal(err)
		}
		for siyuanOf(sys).Status().DocsSynced != 100 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 10*time.Millisecond, nil); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		docs, _, _ := sys.Store.Counts(ctx)
		_ = sys.Stop()
		if docs != 100 {
			b.Fatalf("%d documents indexed, want 100", docs)
		}
	}
	b.ReportMetric(10000*float64(b.N)/total.Seconds(), "blocks/s")
	b.ReportMetric(total.Seconds()/float64(b.N), "s/sync")
}

// siyuanOf is the bridge running in sys.
func siyuanOf(sys *system.System) *siyuan.Source {
	return sys.Service(siyuan.RoleName).(*siyuan.Service).Source
}
