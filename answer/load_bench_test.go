package answer_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/schemas"
)

// envBusyLoop makes this test binary a busy loop (see TestBusyLoopHelper):
// the load of BenchmarkLocalAnswerUnderLoad.
const envBusyLoop = "EXOCORTEX_BUSY_LOOP"

// TestBusyLoopHelper is not a test: run with EXOCORTEX_BUSY_LOOP=1, it spins
// on one core until it is killed.
func TestBusyLoopHelper(t *testing.T) {
	if os.Getenv(envBusyLoop) != "1" {
		t.Skip("a busy loop for BenchmarkLocalAnswerUnderLoad")
	}
	runtime.GOMAXPROCS(1)
	x := 0
	for {
		x++
	}
}

// busyLoops starts n processes of this test binary spinning, stopped
// (SIGSTOP) until resume; they are killed when the benchmark ends.
type busyLoops []*exec.Cmd

func startBusyLoops(b *testing.B, n int) busyLoops {
	var loops busyLoops
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBusyLoopHelper$")
		cmd.Env = append(os.Environ(), envBusyLoop+"=1", "GOMAXPROCS=1")
		if err := cmd.Start(); err != nil {
			b.Fatalf("start a busy loop: %v", err)
		}
		loops = append(loops, cmd)
	}
	b.Cleanup(func() {
		for _, c := range loops {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	loops.signal(syscall.SIGSTOP)
	return loops
}

func (l busyLoops) signal(s syscall.Signal) {
	for _, c := range l {
		_ = c.Process.Signal(s)
	}
}

// BenchmarkLocalAnswerUnderLoad answers XQuAD questions (Russian and
// English) without a language model, with the extractive model of the real
// size (XLM-R base QA, random weights) over the question's paragraph and
// three others, at the default local deadline (5 s), on a quiet machine and
// with every core saturated by busy loops (EXOCORTEX_BENCH_LOAD processes,
// default 8 a core), interleaved. It reports wall p50/p95/max per
// condition against the deadline, how many passages the extractive model
// read, and how many answers fell to search-only; and, for comparison, the
// extractive model over all four passages at once with no budget (what the
// extractive rung did before it had one): quiet every round, under the same
// load every fifth round (it takes about a minute on two saturated cores).
//
//	go test ./answer -run '^$' -bench LocalAnswerUnderLoad -benchtime 10x
func BenchmarkLocalAnswerUnderLoad(b *testing.B) {
	var perSet [][]eval.Question
	blocks := map[string]string{}
	var order []string
	for _, f := range []string{"../../shared/eval/xquad.ru.json", "../../shared/eval/xquad.en.json"} {
		set, err := eval.Load(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		for _, d := range set.Docs {
			for _, bl := range d.Blocks {
				if _, ok := blocks[bl.ID]; !ok {
					order = append(order, bl.ID)
				}
				blocks[bl.ID] = bl.Text
			}
		}
		var qs []eval.Question
		for _, q := range set.Questions {
			if len(q.Gold) > 0 {
				qs = append(qs, q)
			}
		}
		perSet = append(perSet, qs)
	}
	// Russian and English questions in turn.
	var questions []eval.Question
	for i := range min(len(perSet[0]), len(perSet[1])) {
		questions = append(questions, perSet[0][i], perSet[1][i])
	}
	mdir := modeltest.Dir(b, modeltest.Options{RealShapes: true,
		Into: filepath.Join(os.TempDir(), "exocortex-bench-models-qa-v1")})
	m, _ := models.ManifestFor(mdir)
	spec, ok := m.Spec(models.RoleQA)
	if !ok {
		b.Fatalf("no QA model in %s", mdir)
	}
	qa, err := models.OpenQA(mdir, spec, models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer qa.Close()
	an, err := analysis.New(analysis.Full)
	if err != nil {
		b.Fatal(err)
	}
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	query := func(i int) *schemas.QueryReranked {
		q := questions[(i*13)%len(questions)]
		rq := &schemas.QueryReranked{Query: schemas.Query{QueryID: fmt.Sprint("q", i), Question: q.Question, Lang: q.Lang}}
		// The gold paragraph first, then the three after it: four passages
		// of the real length.
		for k := range 4 {
			id := order[(pos[q.Gold[0]]+k)%len(order)]
			rq.Contexts = append(rq.Contexts, schemas.Context{Passage: schemas.Passage{ChunkID: id, DocID: id, BlockID: id,
				BlockIDs: []string{id}, Text: blocks[id], Title: id}})
		}
		return rq
	}
	n := 8 * runtime.NumCPU()
	if v := os.Getenv("EXOCORTEX_BENCH_LOAD"); v != "" {
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("EXOCORTEX_BENCH_LOAD=%q: want a number of busy loops", v)
		}
	}
	loops := startBusyLoops(b, n)
	// Random weights: the threshold is lowered so that a span read is given.
	a := &answer.Answerer{QA: qa, Analyzer: an, Config: answer.Config{QAThreshold: 1e-6}}
	deadline := answer.DefaultLocalDeadline
	ctx := context.Background()
	readRe := regexp.MustCompile(`^qa_budget: read (\d+) of`)

	type stats struct {
		wall, qa, search  []float64
		read, searchOnly  int
		over, overPlusTol int
	}
	cond := map[string]*stats{"quiet": {}, "loaded": {}, "quiet-whole": {}, "loaded-whole": {}}
	ask := func(name string, i int) {
		s := cond[name]
		rq := query(i)
		t0 := time.Now()
		if strings.HasSuffix(name, "-whole") {
			texts := make([]string, len(rq.Contexts))
			for k, c := range rq.Contexts {
				texts[k] = c.Text
			}
			if _, err := qa.Answer(ctx, rq.Question, texts, 30); err != nil {
				b.Fatal(err)
			}
			s.wall = append(s.wall, ms(time.Since(t0)))
			return
		}
		done := a.Answer(ctx, rq)
		took := time.Since(t0)
		s.wall = append(s.wall, ms(took))
		s.qa = append(s.qa, done.TimingsMS["qa"])
		if v, ok := done.TimingsMS["search_only"]; ok {
			s.search = append(s.search, v)
		}
		read := 4
		for _, r := range done.Reasons {
			if m := readRe.FindStringSubmatch(r); m != nil {
				read, _ = strconv.Atoi(m[1])
			}
		}
		s.read += read
		if done.Mode == schemas.AnswerSearchOnly {
			s.searchOnly++
		}
		if took > deadline {
			s.over++
		}
		if took > deadline+500*time.Millisecond {
			s.overPlusTol++
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Interleaved, the order alternating; the slow comparison (a minute
		// an answer under full load) every fifth round only.
		names := []string{"quiet", "quiet-whole", "loaded"}
		if i%2 == 1 {
			names = []string{"loaded", "quiet-whole", "quiet"}
		}
		if i%5 == 0 {
			names = append(names, "loaded-whole")
		}
		for _, name := range names {
			if strings.HasPrefix(name, "loaded") {
				loops.signal(syscall.SIGCONT)
				time.Sleep(300 * time.Millisecond) // the load takes hold
			}
			ask(name, i)
			loops.signal(syscall.SIGSTOP)
		}
	}
	b.StopTimer()
	for _, name := range []string{"quiet", "loaded", "quiet-whole", "loaded-whole"} {
		s := cond[name]
		p50, p95, mx := percentiles(s.wall)
		b.ReportMetric(p50, name+"-p50-ms")
		b.ReportMetric(p95, name+"-p95-ms")
		b.ReportMetric(mx, name+"-max-ms")
		if strings.HasSuffix(name, "-whole") {
			b.Logf("%s (all four passages at once, no budget; %d busy loops on %d cores when loaded): wall p50 %.0f ms, p95 %.0f ms, max %.0f ms over %d",
				name, n, runtime.NumCPU(), p50, p95, mx, len(s.wall))
			continue
		}
		q50, q95, qmax := percentiles(s.qa)
		_, s95, smax := percentiles(s.search)
		b.ReportMetric(float64(s.read)/float64(len(s.wall)), name+"-passages-read")
		b.ReportMetric(float64(s.searchOnly), name+"-search-only")
		b.ReportMetric(float64(s.overPlusTol), name+"-over-deadline+0.5s")
		b.Logf("%s (%d busy loops on %d cores when loaded): wall p50 %.0f ms, p95 %.0f ms, max %.0f ms over %d answers, deadline %s; qa p50 %.0f ms, p95 %.0f ms, max %.0f ms; "+
			"search-only step p95 %.1f ms, max %.1f ms; passages read %.2f of 4 on average; search-only %d; over the deadline %d, over deadline + 0.5 s %d",
			name, n, runtime.NumCPU(), p50, p95, mx, len(s.wall), deadline, q50, q95, qmax, s95, smax, float64(s.read)/float64(len(s.wall)), s.searchOnly, s.over, s.overPlusTol)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentiles are the p50, p95 (nearest rank) and max of xs.
func percentiles(xs []float64) (p50, p95, mx float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return at(0.5), at(0.95), s[len(s)-1]
}
