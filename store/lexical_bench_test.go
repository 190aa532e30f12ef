package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/lexical"
	"github.com/exocortex/exocortex/schemas"
)

var benchSentenceEnd = regexp.MustCompile(`([.!?])\s+`)

// xquadSentencesQuestions reads the sentences of the XQuAD ru and en
// paragraphs and the questions.
func xquadSentencesQuestions(b *testing.B) (sents, questions []string) {
	b.Helper()
	for _, lang := range []string{"ru", "en"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "shared", "eval", "xquad."+lang+".json"))
		if err != nil {
			b.Skipf("needs ../shared/eval/xquad.%s.json: %v", lang, err)
		}
		var sq struct {
			Data []struct {
				Paragraphs []struct {
					Context string
					QAs     []struct{ Question string } `json:"qas"`
				}
			}
		}
		if err := json.Unmarshal(raw, &sq); err != nil {
			b.Fatal(err)
		}
		for _, a := range sq.Data {
			for _, p := range a.Paragraphs {
				for _, s := range strings.Split(benchSentenceEnd.ReplaceAllString(p.Context, "$1\n"), "\n") {
					if s = strings.TrimSpace(s); s != "" {
						sents = append(sents, s)
					}
				}
				for _, q := range p.QAs {
					questions = append(questions, q.Question)
				}
			}
		}
	}
	return sents, questions
}

// benchChunkText recombines sentences at random into about 80 words, as
// retrieval's BenchmarkRetrieve100k does.
func benchChunkText(rng *rand.Rand, sents []string) string {
	var words []string
	n := 0
	for n < 80 {
		s := sents[rng.IntN(len(sents))]
		words = append(words, s)
		n += len(strings.Fields(s))
	}
	return strings.Join(words, " ")
}

// BenchmarkLexical100k ranks XQuAD's questions (ru and en) over 100k chunks
// with FTS5 and with the memory engine, interleaved query by query (so the
// machine's load hits both alike), k=10 as `search` does; it reports p50 and
// p95 of each, the memory index's build time and its heap. Set
// EXOCORTEX_BENCH_100K=1: the corpus (XQuAD sentences recombined at random,
// about 80 words a chunk) is built once into the temp dir and kept.
func BenchmarkLexical100k(b *testing.B) {
	if os.Getenv("EXOCORTEX_BENCH_100K") != "1" {
		b.Skip("set EXOCORTEX_BENCH_100K=1 to build and search a 100k-chunk corpus")
	}
	n := 100_000
	if v := os.Getenv("EXOCORTEX_BENCH_LEX_N"); v != "" {
		fmt.Sscan(v, &n)
	}
	sents, questions := xquadSentencesQuestions(b)
	ctx := context.Background()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("exocortex-bench-lex-%d-v1", n))
	fts := buildLexCorpus(b, dir, n, sents)
	defer fts.Close()
	fts.Lexical = LexicalFTS5
	mem, err := OpenReadOnly(fts.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer mem.Close()
	mem.Lexical = LexicalMemory
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_ = os.Remove(LexSnapshotPath(fts.Path()))
	t0 := time.Now()
	idx, err := mem.LexicalIndex(ctx) // built from SQLite, then its snapshot saved
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	st := idx.Stats()
	fi, err := os.Stat(LexSnapshotPath(fts.Path()))
	if err != nil {
		b.Fatalf("no snapshot after the build: %v", err)
	}
	// Another process's start: from the snapshot.
	again, err := OpenReadOnly(fts.Path())
	if err != nil {
		b.Fatal(err)
	}
	again.Lexical = LexicalMemory
	t1 := time.Now()
	if _, err := again.LexicalIndex(ctx); err != nil {
		b.Fatal(err)
	}
	load := time.Since(t1)
	again.Close()
	b.Logf("memory index: %d rows, %d terms, %d postings, built and saved in %s, loaded in %s, heap +%d MiB, snapshot %d MiB",
		st.Rows, st.Terms, st.Postings, build.Round(time.Millisecond), load.Round(time.Millisecond),
		(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))>>20, fi.Size()>>20)
	var tf, tm []float64
	same := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := questions[i%len(questions)]
		t := time.Now()
		hf, err := fts.Search(ctx, q, SearchOptions{SnippetTokens: -1})
		if err != nil {
			b.Fatal(err)
		}
		tf = append(tf, float64(time.Since(t).Microseconds())/1000)
		t = time.Now()
		hm, err := mem.Search(ctx, q, SearchOptions{SnippetTokens: -1})
		if err != nil {
			b.Fatal(err)
		}
		tm = append(tm, float64(time.Since(t).Microseconds())/1000)
		if len(hf) > 0 && len(hm) > 0 && math.Abs(hf[0].Score-hm[0].Score) <= 1e-9*math.Abs(hf[0].Score) || len(hf) == 0 && len(hm) == 0 {
			same++
		}
	}
	b.StopTimer()
	report := func(name string, xs []float64) {
		slices.Sort(xs)
		b.ReportMetric(xs[len(xs)*50/100], name+"-p50-ms")
		b.ReportMetric(xs[min(len(xs)-1, len(xs)*95/100)], name+"-p95-ms")
	}
	report("fts5", tf)
	report("memory", tm)
	b.ReportMetric(float64(same)/float64(b.N), "same-top-score")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(load.Seconds(), "load-s")
	b.ReportMetric(float64((int64(m1.HeapAlloc)-int64(m0.HeapAlloc))>>20), "heap-MiB")
}

// buildLexCorpus opens (or first builds) a store of n generated chunks.
func buildLexCorpus(b *testing.B, dir string, n int, sents []string) *Store {
	ctx := context.Background()
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err != nil {
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	st, err := Open(filepath.Join(dir, "exocortex.db"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(done); err == nil {
		return st
	}
	t0 := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	const perDoc = 20
	for lo := 0; lo < n; lo += 1000 {
		err := st.Batch(ctx, func(ctx context.Context) error {
			for i := lo; i < lo+1000 && i < n; i++ {
				text := benchChunkText(rng, sents)
				lang := "en"
				if strings.ContainsAny(text, "аеиоу") {
					lang = "ru"
				}
				c := &schemas.ChunkCreated{ChunkID: fmt.Sprintf("c%07d", i), DocID: fmt.Sprintf("d%06d", i/perDoc), DocVersion: 1,
					Ordinal: i % perDoc, Hash: fmt.Sprint(i), Text: text, Lang: lang,
					SectionPath: []string{fmt.Sprintf("Doc %d", i/perDoc)}, BlockIDs: []string{fmt.Sprintf("b%07d", i)}}
				if _, err := st.UpsertChunk(ctx, c); err != nil {
					return err
				}
			}
			for d := lo / perDoc; d*perDoc < lo+1000 && d*perDoc < n; d++ {
				doc := &schemas.DocStructure{DocID: fmt.Sprintf("d%06d", d), Title: fmt.Sprintf("Doc %d", d), Hash: fmt.Sprint(d), Version: 1}
				for i := d * perDoc; i < (d+1)*perDoc && i < n; i++ {
					doc.ChunkIDs = append(doc.ChunkIDs, fmt.Sprintf("c%07d", i))
				}
				if _, err := st.ApplyStructure(ctx, doc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if lo%20000 == 0 {
			b.Logf("built %d chunks in %s", lo, time.Since(t0).Round(time.Second))
		}
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d chunks in %s", n, time.Since(t0).Round(time.Second))
	return st
}

// BenchmarkLexicalIndex1M builds the memory index directly from n (1M by
// default) generated chunks' analyzer output, without SQLite, and ranks
// XQuAD's questions with it, dropping common terms as Search does. Set
// EXOCORTEX_BENCH_1M=1 (EXOCORTEX_BENCH_LEX_N changes n).
func BenchmarkLexicalIndex1M(b *testing.B) {
	if os.Getenv("EXOCORTEX_BENCH_1M") != "1" {
		b.Skip("set EXOCORTEX_BENCH_1M=1 to build and search a 1M-chunk memory index")
	}
	n := 1_000_000
	if v := os.Getenv("EXOCORTEX_BENCH_LEX_N"); v != "" {
		fmt.Sscan(v, &n)
	}
	sents, questions := xquadSentencesQuestions(b)
	a, err := analysis.New(analysis.Full)
	if err != nil {
		b.Fatal(err)
	}
	// Analyse the sentences once; a chunk's columns join its sentences'.
	type an struct{ words, lemmas string }
	as := make([]an, len(sents))
	for i, s := range sents {
		as[i].words, as[i].lemmas = a.Index(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	idx := lexical.New()
	for i := 0; i < n; i++ {
		var ws, ls []string
		nw := 0
		for nw < 80 {
			j := rng.IntN(len(sents))
			ws, ls = append(ws, as[j].words), append(ls, as[j].lemmas)
			nw += strings.Count(as[j].words, " ") + 1
		}
		title := fmt.Sprintf("doc %d", i/20)
		idx.Put(lexical.Row{ID: int64(i + 1), Lang: "", Cols: [lexical.NumColumns]string{
			strings.Join(ws, " "), strings.Join(ls, " "), title, title, title}})
	}
	idx.Trim() // as the store's rebuild does
	build := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	st := idx.Stats()
	b.Logf("memory index: %d rows, %d terms, %d postings, built in %s, heap +%d MiB", st.Rows, st.Terms, st.Postings,
		build.Round(time.Millisecond), (int64(m1.HeapAlloc)-int64(m0.HeapAlloc))>>20)
	limit := int(float64(n) * CommonFraction)
	w := lexical.Weights{DefaultWeights.Body, DefaultWeights.Lemmas, DefaultWeights.Title, DefaultWeights.Section, DefaultWeights.Heads}
	var ts []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		aq := a.Query(questions[i%len(questions)])
		q := lexical.Query{}
		for _, x := range aq.Words {
			if idx.DocFreq(x) <= limit {
				q.Words = append(q.Words, x)
			}
		}
		for _, x := range aq.Terms {
			if idx.DocFreq(x) <= limit {
				q.Terms = append(q.Terms, x)
			}
		}
		if len(q.Words)+len(q.Terms) == 0 {
			q = lexical.Query{Words: aq.Words, Terms: aq.Terms}
		}
		idx.Search(q, 10, w, "")
		ts = append(ts, float64(time.Since(t).Microseconds())/1000)
	}
	b.StopTimer()
	slices.Sort(ts)
	b.ReportMetric(ts[len(ts)*50/100], "memory-p50-ms")
	b.ReportMetric(ts[min(len(ts)-1, len(ts)*95/100)], "memory-p95-ms")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(float64((int64(m1.HeapAlloc)-int64(m0.HeapAlloc))>>20), "heap-MiB")
}
