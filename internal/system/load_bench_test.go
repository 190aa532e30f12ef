package system_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// Load benchmark settings: 20 people asking at once, each waiting for the
// whole answer before the next question; a provider that takes 300 ms to
// its first token and streams a token every 25 ms (about 40 tokens a second,
// a hosted model's pace).
const (
	loadAskers        = 20
	loadAskedAlone    = 10 // questions per asker with nothing else running
	loadProviderFirst = 300 * time.Millisecond
	loadProviderToken = 25 * time.Millisecond
)

// BenchmarkLoad runs the whole pipeline (embedded NATS JetStream, SQLite,
// the embedded vector index, ONNX Runtime on the generated tiny models, the
// fake provider streaming at a model's pace) with the default settings of
// exocortex up, in three phases on one system:
//
//  1. ingest alone: 3,000 generated Markdown notes (Russian and English)
//     synced from a folder into the empty system, timed until every note is
//     indexed and every chunk embedded;
//  2. askers alone: 20 askers ask 10 questions each of the indexed corpus;
//  3. under load: another 3,000 notes are ingested while the 20 askers keep
//     asking until that ingest is done.
//
// It reports the time to the first answer token at the client (p50, p95)
// and the ingest throughput (notes/s, chunks/s), under load and alone. The
// questions are XQuAD's (ru and en), whose paragraphs the notes are made
// of, each asked once. EXOCORTEX_BENCH_NOTES sets the number of notes of
// each ingest (default 3000).
func BenchmarkLoad(b *testing.B) {
	notes := 3000
	if v := os.Getenv("EXOCORTEX_BENCH_NOTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("EXOCORTEX_BENCH_NOTES=%q: want a positive number of notes", v)
		}
		notes = n
	}
	src := loadSource(b)
	modelsDir := modeltest.Dir(b, modeltest.Options{NoQA: true, Into: filepath.Join(os.TempDir(), "exocortex-bench-load-models-v1")})
	srv := llmtest.NewScripted(b, llmtest.ScriptOptions{})
	srv.Always(llmtest.Delay(loadProviderFirst))
	srv.SetTokenDelay(loadProviderToken)
	vaultA, vaultB := b.TempDir(), b.TempDir()
	writeLoadNotes(b, vaultA, src, notes, 1)
	writeLoadNotes(b, vaultB, src, notes, 2)

	var m loadMetrics
	for i := 0; i < b.N; i++ {
		m.add(runLoad(b, modelsDir, srv.URL(), vaultA, vaultB, notes, src.questions))
	}
	m.report(b)
}

// loadRound is what one round measured.
type loadRound struct {
	aloneIngest, loadIngest ingestRun
	aloneFirst, loadFirst   []float64 // ms
	aloneStages, loadStages []float64 // ms of the query stages' own work
	modes                   map[string]int
}

type ingestRun struct {
	notes, chunks int
	took          time.Duration
}

type loadMetrics struct{ rounds []loadRound }

func (m *loadMetrics) add(r loadRound) { m.rounds = append(m.rounds, r) }

func (m *loadMetrics) report(b *testing.B) {
	var aloneFirst, loadFirst, aloneStages, loadStages []float64
	var alone, load ingestRun
	modes := map[string]int{}
	for _, r := range m.rounds {
		aloneFirst = append(aloneFirst, r.aloneFirst...)
		loadFirst = append(loadFirst, r.loadFirst...)
		aloneStages = append(aloneStages, r.aloneStages...)
		loadStages = append(loadStages, r.loadStages...)
		for _, x := range []struct{ sum, r *ingestRun }{{&alone, &r.aloneIngest}, {&load, &r.loadIngest}} {
			x.sum.notes += x.r.notes
			x.sum.chunks += x.r.chunks
			x.sum.took += x.r.took
		}
		for k, v := range r.modes {
			modes[k] += v
		}
	}
	b.ReportMetric(eval.Percentile(loadFirst, 50), "first-token-p50-ms")
	b.ReportMetric(eval.Percentile(loadFirst, 95), "first-token-p95-ms")
	b.ReportMetric(eval.Percentile(aloneFirst, 50), "first-token-alone-p50-ms")
	b.ReportMetric(eval.Percentile(aloneFirst, 95), "first-token-alone-p95-ms")
	b.ReportMetric(eval.Percentile(loadStages, 50), "query-stages-p50-ms")
	b.ReportMetric(eval.Percentile(aloneStages, 50), "query-stages-alone-p50-ms")
	b.ReportMetric(float64(load.notes)/load.took.Seconds(), "ingest-notes/s")
	b.ReportMetric(float64(load.chunks)/load.took.Seconds(), "ingest-chunks/s")
	b.ReportMetric(float64(alone.notes)/alone.took.Seconds(), "ingest-alone-notes/s")
	b.ReportMetric(float64(alone.chunks)/alone.took.Seconds(), "ingest-alone-chunks/s")
	b.ReportMetric(float64(len(loadFirst)), "answers-under-load")
	b.ReportMetric(float64(modes[schemas.AnswerLLM])/float64(max(1, len(aloneFirst)+len(loadFirst))), "llm-answer-fraction")
	b.Logf("answer modes: %v", modes)
}

// runLoad is one round of the three phases on a fresh system.
func runLoad(b *testing.B, modelsDir, providerURL, vaultA, vaultB string, notes int, questions []string) loadRound {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{DataDir: b.TempDir(), Listen: "127.0.0.1:-1", ModelsDir: modelsDir,
		LLM: &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: providerURL,
			Models: map[string]string{llm.RoleFast: "m", llm.RoleLongContext: "m", llm.RoleStrategic: "m"}}}},
		Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Stop()
	if sys.Embedder == nil || sys.Vectors == nil || sys.Reranker == nil {
		b.Fatalf("models not loaded: %v", sys.ModelNotes)
	}
	// The generated embedding model has random weights: it puts unrelated
	// questions close together, so the semantic cache would answer most of
	// them from earlier answers (a real model does not). No query has come
	// yet, so the answer stage has not read it.
	sys.Answerer.Cache = nil
	r := loadRound{modes: map[string]int{}}
	var next atomic.Int64 // each question is asked once (the answer cache would take repeats)
	a := &askers{b: b, sys: sys, questions: questions, next: &next, modes: r.modes, timings: map[string][]float64{},
		seen: map[string]time.Time{}}
	defer a.logTimings()
	for _, subj := range []string{schemas.SubjectRetrieved, schemas.SubjectReranked} {
		stop, err := sys.Bus.Subscribe(subj, func(ev schemas.Event) {
			var id string
			switch e := ev.(type) {
			case *schemas.QueryRetrieved:
				id = "retrieved/" + e.QueryID
			case *schemas.QueryReranked:
				id = "reranked/" + e.QueryID
			default:
				return
			}
			a.mu.Lock()
			a.seen[id] = time.Now()
			a.mu.Unlock()
		})
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
	}

	b.Logf("ingest alone: %d notes", notes)
	r.aloneIngest = ingestAndWait(b, sys, vaultA, notes)
	b.Logf("ingest alone: %d notes, %d chunks in %s", r.aloneIngest.notes, r.aloneIngest.chunks, r.aloneIngest.took.Round(time.Millisecond))

	a.phase = "alone"
	r.aloneFirst, r.aloneStages = a.run(func(asked int) bool { return asked < loadAskedAlone })
	b.Logf("askers alone: %d answers, first token p50 %.0f ms, p95 %.0f ms", len(r.aloneFirst),
		eval.Percentile(r.aloneFirst, 50), eval.Percentile(r.aloneFirst, 95))

	a.phase = "load"
	var ingesting atomic.Bool
	ingesting.Store(true)
	done := make(chan ingestRun, 1)
	go func() {
		defer ingesting.Store(false)
		done <- ingestAndWait(b, sys, vaultB, 2*notes)
	}()
	r.loadFirst, r.loadStages = a.run(func(asked int) bool { return asked == 0 || ingesting.Load() })
	r.loadIngest = <-done
	r.loadIngest.notes -= r.aloneIngest.notes
	r.loadIngest.chunks -= r.aloneIngest.chunks
	b.Logf("under load: %d notes, %d chunks in %s; %d answers, first token p50 %.0f ms, p95 %.0f ms",
		r.loadIngest.notes, r.loadIngest.chunks, r.loadIngest.took.Round(time.Millisecond), len(r.loadFirst),
		eval.Percentile(r.loadFirst, 50), eval.Percentile(r.loadFirst, 95))
	return r
}

// ingestStages are the stages an ingest goes through.
func ingestStages() []bus.StageSpec {
	return slices.DeleteFunc(system.StageSpecs(), func(s bus.StageSpec) bool {
		return s.Name != "chunk" && s.Name != "index" && s.Name != "embed"
	})
}

// ingestAndWait syncs a folder of notes as exocortex ingest does and waits
// until the index holds want documents, every chunk has its vector and the
// ingest stages are idle. It returns the documents and chunks the index
// holds then and the time it took.
func ingestAndWait(b *testing.B, sys *system.System, vault string, want int) ingestRun {
	ctx := context.Background()
	start := time.Now()
	kv, err := sys.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		b.Error(err)
		return ingestRun{}
	}
	_, ferrs, err := files.Sync(ctx, []string{vault}, kv, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := sys.Bus.Publish(ctx, ev, "bench-load")
		return err
	}, files.SyncOptions{})
	if err != nil || len(ferrs) > 0 {
		b.Errorf("sync %s: %v %v", vault, err, ferrs)
		return ingestRun{}
	}
	deadline := time.Now().Add(20 * time.Minute)
	for {
		docs, _, err := sys.Store.Counts(ctx)
		if err != nil {
			b.Error(err)
			return ingestRun{}
		}
		embedded, total, err := sys.Store.EmbedCounts(ctx, sys.Embedder.Name())
		if err != nil {
			b.Error(err)
			return ingestRun{}
		}
		if docs >= want && embedded == total {
			states, err := sys.Bus.StageStates(ctx, ingestStages())
			if err != nil {
				b.Error(err)
				return ingestRun{}
			}
			idle := true
			for _, s := range states {
				idle = idle && s.Pending == 0 && s.AckPending == 0
			}
			if idle {
				return ingestRun{notes: docs, chunks: total, took: time.Since(start)}
			}
		}
		if time.Now().After(deadline) {
			b.Errorf("ingest of %s: %d of %d documents, %d of %d chunks embedded after 20 minutes", vault, docs, want, embedded, total)
			return ingestRun{}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// askers are loadAskers clients asking through the bus, as exocortex ask
// does, each question once.
type askers struct {
	b         *testing.B
	sys       *system.System
	questions []string
	next      *atomic.Int64
	mu        sync.Mutex
	modes     map[string]int
	// timings collects every answer's TimingsMS by phase ("alone",
	// "under load") and step, for the log.
	phase   string
	timings map[string][]float64
	// seen is when each query's kb.query.retrieved and kb.query.reranked
	// were seen ("retrieved/<id>").
	seen map[string]time.Time
}

// logTimings logs each step's p50 and p95 in both phases.
func (a *askers) logTimings() {
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := slices.Sorted(maps.Keys(a.timings))
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s p50 %.0f p95 %.0f;", k, eval.Percentile(a.timings[k], 50), eval.Percentile(a.timings[k], 95))
	}
	a.b.Logf("answer timings (ms):%s", sb.String())
}

// run starts the askers; each asks while more(asked so far) holds. It
// returns every answer's time to its first token and the time its query
// stages worked on it (retrieve and rerank: translate, embed, vector,
// lexical, fuse, rerank, expand), in ms.
func (a *askers) run(more func(asked int) bool) (first, stages []float64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < loadAskers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for asked := 0; more(asked); asked++ {
				ms, st, ok := a.ask()
				if !ok {
					return
				}
				mu.Lock()
				first = append(first, ms)
				stages = append(stages, st)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first, stages
}

// ask asks the next question and returns the time from its publication to
// its first answer token at the client, and its query stages' time.
func (a *askers) ask() (first float64, stages float64, ok bool) {
	i := a.next.Add(1) - 1
	q := a.questions[int(i)%len(a.questions)]
	var once sync.Once
	var firstAt time.Time
	t0 := time.Now()
	done, _, err := client.New(a.sys.Bus, client.Options{AskTimeout: 3 * time.Minute}).Ask(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("load-%d", i), Question: q}}, client.AskOptions{OnToken: func(tok *schemas.AnswerToken) {
		if tok.Text != "" {
			once.Do(func() { firstAt = time.Now() })
		}
	}})
	if err != nil {
		a.b.Errorf("ask %q: %v", q, err)
		return 0, 0, false
	}
	once.Do(func() { firstAt = time.Now() }) // no token with text: the answer is the first thing the client sees
	for _, k := range []string{"translate", "embed", "vector", "lexical", "fuse", "rerank", "expand"} {
		stages += done.TimingsMS[k]
	}
	a.mu.Lock()
	a.modes[done.Mode]++
	for k, v := range done.TimingsMS {
		a.timings[a.phase+"/"+k] = append(a.timings[a.phase+"/"+k], v)
	}
	id := fmt.Sprintf("load-%d", i)
	if ret, ok := a.seen["retrieved/"+id]; ok {
		if rr, ok := a.seen["reranked/"+id]; ok {
			a.timings[a.phase+"/@retrieved"] = append(a.timings[a.phase+"/@retrieved"], float64(ret.Sub(t0).Microseconds())/1000)
			a.timings[a.phase+"/@reranked"] = append(a.timings[a.phase+"/@reranked"], float64(rr.Sub(t0).Microseconds())/1000)
			a.timings[a.phase+"/@first"] = append(a.timings[a.phase+"/@first"], float64(firstAt.Sub(t0).Microseconds())/1000)
		}
	}
	if done.Mode != schemas.AnswerLLM {
		for _, r := range done.Reasons {
			r, _, _ = strings.Cut(r, ":")
			a.modes[done.Mode+" ("+r+")"]++
		}
	}
	a.mu.Unlock()
	return float64(firstAt.Sub(t0).Microseconds()) / 1000, stages, true
}

// loadCorpus is what the generated notes are made of: XQuAD's paragraphs
// by language and article, and its questions.
type loadCorpus struct {
	articles  [2][][]string // [en, ru] -> article -> sentences
	titles    [2][]string
	questions []string
}

var loadSentenceEnd = regexp.MustCompile(`([.!?])\s+`)

func loadSource(b *testing.B) *loadCorpus {
	c := &loadCorpus{}
	for li, f := range []string{"../../../shared/eval/xquad.en.json", "../../../shared/eval/xquad.ru.json"} {
		set, err := eval.Load(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		byTitle := map[string]int{}
		for _, d := range set.Docs {
			ai, ok := byTitle[d.Title]
			if !ok {
				ai = len(c.articles[li])
				byTitle[d.Title] = ai
				c.articles[li] = append(c.articles[li], nil)
				c.titles[li] = append(c.titles[li], d.Title)
			}
			for _, s := range strings.Split(loadSentenceEnd.ReplaceAllString(d.Blocks[0].Text, "$1\n"), "\n") {
				if s = strings.TrimSpace(s); s != "" {
					c.articles[li][ai] = append(c.articles[li][ai], s)
				}
			}
		}
		for _, q := range set.Questions {
			c.questions = append(c.questions, q.Question)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	rng.Shuffle(len(c.questions), func(i, j int) { c.questions[i], c.questions[j] = c.questions[j], c.questions[i] })
	return c
}

// writeLoadNotes writes n notes into dir, half in English and half in Russian,
// shaped like a person's notes: a title, a dated line, one to four sections
// of sentences from one XQuAD article as paragraphs or lists, sometimes
// tags and a link to another note. seed varies the set.
func writeLoadNotes(b *testing.B, dir string, c *loadCorpus, n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 16))
	words := [2]struct{ note, date, see, tags, todo string }{
		{"note", "Written on", "See also", "Tags", "To check"},
		{"заметка", "Запись от", "См. также", "Теги", "Проверить"},
	}
	for i := 0; i < n; i++ {
		li := i % 2
		ai := rng.IntN(len(c.articles[li]))
		sents, title := c.articles[li][ai], c.titles[li][ai]
		w := words[li]
		var sb strings.Builder
		fmt.Fprintf(&sb, "# %s: %s %d.%d\n\n", title, w.note, seed, i)
		day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rng.IntN(700))
		fmt.Fprintf(&sb, "%s %s.\n\n", w.date, day.Format("2006-01-02"))
		start := rng.IntN(len(sents))
		for s, sections := 0, 1+rng.IntN(4); s < sections; s++ {
			k := 2 + rng.IntN(6)
			part := make([]string, 0, k)
			for j := 0; j < k; j++ {
				part = append(part, sents[(start+s*7+j)%len(sents)])
			}
			if sections > 1 {
				fmt.Fprintf(&sb, "## %s %d\n\n", firstWords(part[0], 4), s+1)
			}
			switch rng.IntN(4) {
			case 0:
				for _, p := range part {
					fmt.Fprintf(&sb, "- %s\n", p)
				}
				sb.WriteString("\n")
			case 1:
				fmt.Fprintf(&sb, "> %s\n\n%s\n\n", part[0], strings.Join(part[1:], " "))
			default:
				half := len(part) / 2
				fmt.Fprintf(&sb, "%s\n\n%s\n\n", strings.Join(part[:half], " "), strings.Join(part[half:], " "))
			}
		}
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&sb, "%s: [[%s: %s %d.%d]]\n\n", w.see, title, w.note, seed, rng.IntN(n))
		}
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&sb, "%s: #%s #%s\n", w.tags, strings.ToLower(firstWords(title, 1)), w.note)
		}
		if rng.IntN(5) == 0 {
			fmt.Fprintf(&sb, "\n- [ ] %s: %s\n", w.todo, firstWords(sents[rng.IntN(len(sents))], 6))
		}
		sub := filepath.Join(dir, fmt.Sprintf("%02d", i%30))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("note-%d-%04d.md", seed, i)), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Trim(strings.Join(f, " "), ".,;:!?()«»\"")
}
