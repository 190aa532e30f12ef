package lexical

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
)

// v1FromIndex is x as the former index (uncompressed postings).
func v1FromIndex(x *Index) *v1Index {
	x.mu.Lock()
	x.materialize()
	x.mu.Unlock()
	o := v1New()
	o.ids, o.lens, o.langs, o.alive = slices.Clone(x.ids), slices.Clone(x.lens), slices.Clone(x.langs), slices.Clone(x.alive)
	for id, n := range x.byID {
		o.byID[id] = n
	}
	o.langNames = slices.Clone(x.langNames)
	for l, c := range x.langCodes {
		o.langCodes[l] = c
	}
	o.live, o.totalLen, o.dead = x.live, x.totalLen, x.dead
	for g, lists := range []map[string]plist{x.words, x.lemmas} {
		to := []map[string]*v1plist{o.words, o.lemmas}[g]
		for t, p := range lists {
			q := &v1plist{docs: make([]uint32, 0, p.n), tfs: make([][3]uint16, 0, p.n)}
			c := cursor{b: p.buf}
			for c.next() {
				q.docs, q.tfs = append(q.docs, c.d), append(q.tfs, c.f)
			}
			to[t] = q
		}
	}
	return o
}

// BenchmarkSnapshotFormerAndCompressed loads a store's lexical snapshot
// (the scale suite's, by default its 1M corpus's: EXOCORTEX_LEX_SNAPSHOT
// names another, of either format) as the former index (format 01,
// uncompressed postings) and as the compressed one, each from its own
// format's file, and ranks XQuAD's ru and en questions with both,
// interleaved query by query, at k=10 and k=200, common terms dropped as
// store.Search does (more than 5% of the rows). It reports each one's heap
// in use after loading, snapshot size, load time and p50/p95, and how many
// rankings were the same. Set EXOCORTEX_BENCH_1M=1.
func BenchmarkSnapshotFormerAndCompressed(b *testing.B) {
	if os.Getenv("EXOCORTEX_BENCH_1M") != "1" {
		b.Skip("set EXOCORTEX_BENCH_1M=1 (and EXOCORTEX_LEX_SNAPSHOT) to compare the former and compressed lexical index")
	}
	path := os.Getenv("EXOCORTEX_LEX_SNAPSHOT")
	if path == "" {
		path = "/tmp/exocortex-scale/v1-n1000000-seed17/exocortex.db.lex"
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("needs a lexical snapshot (build the scale suite's corpus): %v", err)
	}
	t0 := time.Now()
	src, _, err := ReadSnapshot(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s (%q) read in %s", path, raw[:8], time.Since(t0).Round(time.Millisecond))
	raw = nil
	dir := b.TempDir()
	v1Path, v2Path := filepath.Join(dir, "v1.lex"), filepath.Join(dir, "v2.lex")
	write := func(path string, w func(*bytes.Buffer) error) int64 {
		var buf bytes.Buffer
		if err := w(&buf); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		return int64(buf.Len())
	}
	size1 := write(v1Path, func(buf *bytes.Buffer) error { return v1FromIndex(src).WriteSnapshot(buf, []byte("bench")) })
	size2 := write(v2Path, func(buf *bytes.Buffer) error { return src.WriteSnapshot(buf, []byte("bench")) })
	st := src.Stats()
	src = nil

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	load := func(path string, read func(f *os.File) error) (time.Duration, int64) {
		h0 := heap()
		t0 := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := read(f); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		return took, int64(heap()) - int64(h0)
	}
	var old *v1Index
	var x *Index
	load1, heap1 := load(v1Path, func(f *os.File) (err error) { old, _, err = v1ReadSnapshot(f); return err })
	load2, heap2 := load(v2Path, func(f *os.File) (err error) { x, _, err = ReadSnapshot(f); return err })
	b.Logf("%s: %d rows, %d terms, %d postings", path, st.Rows, st.Terms, st.Postings)
	b.Logf("former:     snapshot %d MiB, loaded in %s, heap in use +%d MiB", size1>>20, load1.Round(time.Millisecond), heap1>>20)
	b.Logf("compressed: snapshot %d MiB, loaded in %s, heap in use +%d MiB", size2>>20, load2.Round(time.Millisecond), heap2>>20)

	a, err := analysis.New(analysis.Full)
	if err != nil {
		b.Fatal(err)
	}
	var qs []Query
	limit := int(0.05 * float64(x.Len()))
	for _, lang := range []string{"ru", "en"} {
		for _, q := range xquadQuestions(b, lang) {
			aq := a.Query(q)
			var lq Query
			for _, t := range aq.Words {
				if !x.DocFreqAbove(t, limit) {
					lq.Words = append(lq.Words, t)
				}
			}
			for _, t := range aq.Terms {
				if !x.DocFreqAbove(t, limit) {
					lq.Terms = append(lq.Terms, t)
				}
			}
			if len(lq.Words)+len(lq.Terms) == 0 {
				lq = Query{Words: aq.Words, Terms: aq.Terms}
			}
			qs = append(qs, lq)
		}
	}
	w := Weights{0.25, 3, 1, 0.75, 1}
	for i := 0; i < 20; i++ { // warm up
		old.Search(qs[i], 10, w, "")
		x.Search(qs[i], 10, w, "")
	}
	lat := map[string][]float64{}
	same := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i%len(qs)]
		for _, k := range []int{10, 200} {
			var ho, hx []Hit
			former := func() {
				t := time.Now()
				ho = old.Search(q, k, w, "")
				lat[fmt.Sprint("former-k", k)] = append(lat[fmt.Sprint("former-k", k)], float64(time.Since(t).Nanoseconds())/1e6)
			}
			compressed := func() {
				t := time.Now()
				hx = x.Search(q, k, w, "")
				lat[fmt.Sprint("compressed-k", k)] = append(lat[fmt.Sprint("compressed-k", k)], float64(time.Since(t).Nanoseconds())/1e6)
			}
			if i%2 == 0 { // each goes first half the time
				former()
				compressed()
			} else {
				compressed()
				former()
			}
			if fmt.Sprint(ho) == fmt.Sprint(hx) {
				same++
			}
		}
	}
	b.StopTimer()
	for _, name := range []string{"former-k10", "compressed-k10", "former-k200", "compressed-k200"} {
		xs := lat[name]
		slices.Sort(xs)
		b.ReportMetric(xs[len(xs)*50/100], name+"-p50-ms")
		b.ReportMetric(xs[min(len(xs)-1, len(xs)*95/100)], name+"-p95-ms")
	}
	b.ReportMetric(float64(same)/float64(2*b.N), "same-ranking")
	b.ReportMetric(float64(heap1>>20), "former-heap-MiB")
	b.ReportMetric(float64(heap2>>20), "compressed-heap-MiB")
	b.ReportMetric(float64(size1>>20), "former-snapshot-MiB")
	b.ReportMetric(float64(size2>>20), "compressed-snapshot-MiB")
	b.ReportMetric(load1.Seconds(), "former-load-s")
	b.ReportMetric(load2.Seconds(), "compressed-load-s")
	runtime.KeepAlive(old)
	runtime.KeepAlive(x)
}

// xquadQuestions reads XQuAD's questions in lang from ../../shared/eval.
func xquadQuestions(b *testing.B, lang string) []string {
	raw, err := os.ReadFile(filepath.Join("..", "..", "shared", "eval", "xquad."+lang+".json"))
	if err != nil {
		b.Skipf("needs ../shared/eval/xquad.%s.json: %v", lang, err)
	}
	var sq struct {
		Data []struct {
			Paragraphs []struct {
				QAs []struct{ Question string } `json:"qas"`
			}
		}
	}
	if err := json.Unmarshal(raw, &sq); err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, a := range sq.Data {
		for _, p := range a.Paragraphs {
			for _, q := range p.QAs {
				out = append(out, q.Question)
			}
		}
	}
	return out
}
