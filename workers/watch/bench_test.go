package watch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/system"
)

// vaultNote is generated note i: Russian and English prose, headings,
// wikilinks to other notes, in folders of 100.
func vaultNote(i, n int, extra string) string {
	en := []string{"Crows use tools to get food", "the meeting moved to Thursday", "budget review for the third quarter",
		"owls hunt silently at night", "the garden needs water every morning", "release notes mention the new parser"}
	ru := []string{"Вороны используют инструменты", "встреча перенесена на четверг", "обзор бюджета за третий квартал",
		"совы охотятся бесшумно ночью", "сад нужно поливать каждое утро", "в заметках о выпуске новый парсер"}
	return fmt.Sprintf("# Note %d\n\n%s, note %d. %s.\n\n## Links\n\nSee [[note-%05d]] and [[note-%05d]].\n\n## Заметка\n\n%s, заметка %d. %s\n",
		i, en[i%len(en)], i, en[(i/7)%len(en)], (i+1)%n, (i*7+3)%n, ru[i%len(ru)], i, extra)
}

func notePath(vault string, i int) string {
	return filepath.Join(vault, fmt.Sprintf("folder-%03d", i/100), fmt.Sprintf("note-%05d.md", i))
}

// BenchmarkEditToSearchable measures, in a generated vault of 10,000 notes
// (EXOCORTEX_WATCH_NOTES=N for another size) followed by up's watcher
// through inotify, the time from an edit's write to the edited text being
// found by search, over 50 edits one after another: p50, p95 and max.
// Lexical index (no models): the time is the watcher's debounce and the
// pipeline's (chunk, index), not the embedding model's.
func BenchmarkEditToSearchable(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("EXOCORTEX_WATCH_NOTES")); err == nil && v > 0 {
		n = v
	}
	const edits = 50
	vault, data := b.TempDir(), b.TempDir()
	for i := range n {
		write(b, notePath(vault, i), vaultNote(i, n, ""))
	}
	t0 := time.Now()
	sys := startWatching(b, data, vault, false)
	ctx := context.Background()
	for {
		docs, _, err := sys.Store.Counts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if docs >= n {
			break
		}
		if time.Since(t0) > 15*time.Minute {
			b.Fatalf("the first reconciliation indexed %d of %d notes in 15 minutes", docs, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 100*time.Millisecond, nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d notes indexed by the start's reconciliation in %s", n, time.Since(t0).Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	var lat []time.Duration
	for it := 0; it < b.N; it++ {
		lat = lat[:0]
		for e := range edits {
			i := rng.IntN(n)
			word := fmt.Sprintf("zedit%dx%dq", it, e)
			path := notePath(vault, i)
			start := time.Now()
			write(b, path, vaultNote(i, n, "Правка "+word+"."))
			foundAt(b, sys, word, path)
			lat = append(lat, time.Since(start))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(0.95).Milliseconds()), "p95-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
	b.Logf("%d edits in a %d-note vault: edit -> searchable p50 %s, p95 %s, max %s", len(lat), n,
		pct(0.50).Round(time.Millisecond), pct(0.95).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}
