package models_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/models/onnxgen"
	"github.com/exocortex/exocortex/models/ort"
	"github.com/exocortex/exocortex/models/tokenizer"
)

// xquad returns real paragraphs and questions (Russian and English) from the
// shared evaluation data.
func xquad(b *testing.B) (paras, questions []string) {
	b.Helper()
	for _, f := range []string{"../../shared/eval/xquad.ru.json", "../../shared/eval/xquad.en.json"} {
		set, err := eval.Load(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		for _, d := range set.Docs {
			paras = append(paras, d.Blocks[0].Text)
		}
		for _, q := range set.Questions {
			questions = append(questions, q.Question)
		}
	}
	return paras, questions
}

// realModels generates the real-shape models once, into the temp dir, and
// reuses them on later runs.
func realModels(b *testing.B) string {
	b.Helper()
	return modeltest.Dir(b, modeltest.Options{RealShapes: true, NoQA: true,
		Into: filepath.Join(os.TempDir(), "exocortex-bench-models-v1")})
}

// percentiles are the p50 and p95 of ds in milliseconds.
func percentiles(ds []time.Duration) (p50, p95 float64) {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d.Microseconds()) / 1000
	}
	return eval.Percentile(ms, 50), eval.Percentile(ms, 95)
}

// BenchmarkEmbedPassages embeds real XQuAD paragraphs (about 150-250 tokens)
// with the e5-small architecture (int8, random weights), 32 per call, one
// intra-op thread per run, by one worker and by two in parallel.
func BenchmarkEmbedPassages(b *testing.B) {
	paras, _ := xquad(b)
	dir := realModels(b)
	e, err := models.OpenEmbedder(dir, specFor(b, dir, models.RoleEmbed), models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	const batch = 32
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += workers {
						lo := (i * batch) % (len(paras) - batch)
						if _, err := e.EmbedPassages(ctx, paras[lo:lo+batch]); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "chunks/s")
		})
	}
}

// BenchmarkEmbedQuery embeds real questions one at a time: the query side's
// first step.
func BenchmarkEmbedQuery(b *testing.B) {
	_, qs := xquad(b)
	dir := realModels(b)
	e, err := models.OpenEmbedder(dir, specFor(b, dir, models.RoleEmbed), models.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if _, err := e.EmbedQuery(ctx, qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	p50, p95 := percentiles(ds)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p95, "p95-ms")
}

// BenchmarkRerank scores 20, 40 and 80 real (question, paragraph) pairs with
// the mMiniLMv2-L12-H384 architecture (int8, random weights) at the
// reranker's default settings.
func BenchmarkRerank(b *testing.B) {
	paras, qs := xquad(b)
	dir := realModels(b)
	spec := specFor(b, dir, models.RoleRerank)
	for _, threads := range []int{1, 2} {
		opts := models.RerankOptions()
		opts.Session = ort.SessionOptions{IntraOpThreads: threads}
		ce, err := models.OpenCrossEncoder(dir, spec, opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{20, 40, 80} {
			b.Run(fmt.Sprintf("threads=%d/candidates=%d", threads, n), func(b *testing.B) {
				ctx := context.Background()
				var ds []time.Duration
				for i := 0; i < b.N; i++ {
					lo := (i * 7) % (len(paras) - n)
					t := time.Now()
					if _, err := ce.Score(ctx, qs[i%len(qs)], paras[lo:lo+n]); err != nil {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(t))
				}
				p50, p95 := percentiles(ds)
				b.ReportMetric(p50, "p50-ms")
				b.ReportMetric(p95, "p95-ms")
			})
		}
		ce.Close()
	}
}

func specFor(b *testing.B, dir, role string) models.Spec {
	m, err := models.ManifestFor(dir)
	if err != nil {
		b.Fatal(err)
	}
	s, _ := m.Spec(role)
	return s
}

// rerankSetting is one way to run the default rerank: how many candidates,
// how long an input, which part of a long passage, which model.
type rerankSetting struct {
	name       string
	candidates int
	maxLength  int
	window     bool
	layers     int // 12: the default mMiniLMv2-L12-H384; 6: the same cut to 6 layers
}

// BenchmarkRerankBudget runs the ways to bring the default rerank within
// its budget side by side: every round scores the same question and
// candidates (real XQuAD paragraphs) under each setting in turn, so load on
// the machine falls on all of them alike. Random weights: real speed, not
// real quality (eval --mode rerank measures that with the real model).
//
//	go test -run '^$' -bench RerankBudget -benchtime 20x ./models
//
// EXOCORTEX_RERANK_SETTINGS (names, comma-separated) runs some of them.
func BenchmarkRerankBudget(b *testing.B) {
	paras, qs := xquad(b)
	dir := realModels(b)
	spec := specFor(b, dir, models.RoleRerank)
	l6 := l6Models(b, dir, spec)
	settings := []rerankSetting{
		{"before-80x192-head", 80, 192, false, 12},
		{"40x192-window", 40, 192, true, 12},
		{"40x160-window", 40, 160, true, 12},
		{"40x128-head", 40, 128, false, 12},
		{"40x128-window", 40, 128, true, 12}, // the default
		{"48x128-window", 48, 128, true, 12},
		{"L6-40x192-window", 40, 192, true, 6},
		{"L6-40x128-window", 40, 128, true, 6},
	}
	// EXOCORTEX_RERANK_SETTINGS=before-80x192-head,40x128-window runs those only.
	if only := os.Getenv("EXOCORTEX_RERANK_SETTINGS"); only != "" {
		var keep []rerankSetting
		for _, s := range settings {
			if slices.Contains(strings.Split(only, ","), s.name) {
				keep = append(keep, s)
			}
		}
		settings = keep
	}
	ces := make([]*models.CrossEncoder, len(settings))
	for i, s := range settings {
		opts := models.RerankOptions()
		opts.MaxLength, opts.QueryWindow = s.maxLength, s.window
		d := dir
		if s.layers == 6 {
			d = l6
		}
		ce, err := models.OpenCrossEncoder(d, spec, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer ce.Close()
		ces[i] = ce
	}
	ctx := context.Background()
	for j, s := range settings { // the first run of a session is slower
		if _, err := ces[j].Score(ctx, qs[0], paras[:s.candidates]); err != nil {
			b.Fatal(err)
		}
	}
	ds := make([][]time.Duration, len(settings))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[(i*37)%len(qs)]
		lo := (i * 53) % (len(paras) - 80)
		for j, s := range settings {
			t := time.Now()
			if _, err := ces[j].Score(ctx, q, paras[lo:lo+s.candidates]); err != nil {
				b.Fatal(err)
			}
			ds[j] = append(ds[j], time.Since(t))
		}
	}
	b.StopTimer()
	for j, s := range settings {
		p50, p95 := percentiles(ds[j])
		b.ReportMetric(p50, s.name+"-p50-ms")
		b.ReportMetric(p95, s.name+"-p95-ms")
	}
}

// l6Models writes the reranker of dir cut to 6 layers (random weights, as
// the 12-layer one) beside it, under the same spec, and returns its
// directory: the speed of a smaller cross-encoder of the same family.
func l6Models(b *testing.B, dir string, spec models.Spec) string {
	b.Helper()
	out := filepath.Join(os.TempDir(), "exocortex-bench-models-l6-v1")
	onnx := filepath.Join(out, spec.Name, filepath.FromSlash(spec.ONNX))
	if _, err := os.Stat(onnx); err == nil {
		return out
	}
	tokPath := filepath.Join(dir, spec.Name, filepath.FromSlash(spec.Tokenizer))
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		b.Fatal(err)
	}
	cfg := onnxgen.MiniLMReranker().WithVocab(tok.VocabSize())
	cfg.Quantized, cfg.Layers = true, 6
	if err := os.MkdirAll(filepath.Dir(onnx), 0o755); err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(tokPath)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, spec.Name, filepath.FromSlash(spec.Tokenizer)), raw, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := onnxgen.WriteEncoder(onnx+".tmp", cfg); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(onnx+".tmp", onnx); err != nil {
		b.Fatal(err)
	}
	return out
}

// nliPairsOf builds n (block, claim) pairs from real XQuAD paragraphs,
// Russian and English in turn: the block is a paragraph's first blockWords
// words, the claim claimWords words from its middle (a claim an answer
// could make about that block).
func nliPairsOf(b *testing.B, n, blockWords, claimWords int) (blocks, claims []string) {
	b.Helper()
	var ru, en []string
	for _, f := range []string{"../../shared/eval/xquad.ru.json", "../../shared/eval/xquad.en.json"} {
		set, err := eval.Load(f)
		if err != nil {
			b.Skipf("eval data not found: %v", err)
		}
		for _, d := range set.Docs {
			if w := strings.Fields(d.Blocks[0].Text); len(w) >= blockWords {
				if strings.Contains(f, ".ru.") {
					ru = append(ru, strings.Join(w[:blockWords], " "))
				} else {
					en = append(en, strings.Join(w[:blockWords], " "))
				}
			}
		}
	}
	for i := 0; len(blocks) < n; i++ {
		block := ru[i%len(ru)]
		if i%2 == 1 {
			block = en[i%len(en)]
		}
		w := strings.Fields(block)
		lo := (len(w) - claimWords) / 2
		blocks, claims = append(blocks, block), append(claims, strings.Join(w[lo:lo+claimWords], " "))
	}
	return blocks, claims
}

// BenchmarkNLI scores 8 (claim, block) pairs of about 25 and 120 words
// (real XQuAD text, Russian and English) per call with the architecture of
// multilingual-MiniLMv2-L6-mnli-xnli (fp32, as its ONNX export; random
// weights): the entailment check of one answer's claims. ms/claim is the
// call's median time over 8. The int8 runs are the same model quantized as
// onnxruntime's quantize_dynamic does (what an int8 export of it, such as
// onnx-community's model_int8.onnx, would cost).
//
//	go test -run '^$' -bench NLI -benchtime 20x ./models
func BenchmarkNLI(b *testing.B) {
	const pairs = 8
	blocks, claims := nliPairsOf(b, pairs, 120, 25)
	dir := modeltest.Dir(b, modeltest.Options{RealShapes: true, NoReranker: true, NoQA: true, NLI: true,
		Into: filepath.Join(os.TempDir(), "exocortex-bench-models-nli-v1")})
	spec := specFor(b, dir, models.RoleNLI)
	tok, err := tokenizer.Load(filepath.Join(dir, spec.Name, filepath.FromSlash(spec.Tokenizer)))
	if err != nil {
		b.Fatal(err)
	}
	tokens := 0
	for i := range blocks {
		tokens += len(tok.EncodePair(blocks[i], claims[i], tokenizer.Truncation{MaxLength: spec.MaxLength}).IDs)
	}
	int8 := nliInt8Models(b, dir, spec, tok.VocabSize())
	for _, v := range []struct {
		name    string
		dir     string
		threads int
	}{{"fp32", dir, 1}, {"fp32", dir, 2}, {"int8", int8, 1}, {"int8", int8, 2}} {
		n, err := models.OpenNLI(v.dir, spec, models.Options{Session: ort.SessionOptions{IntraOpThreads: v.threads}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/threads=%d/pairs=%d", v.name, v.threads, pairs), func(b *testing.B) {
			ctx := context.Background()
			if _, err := n.Score(ctx, blocks, claims); err != nil { // the first run of a session is slower
				b.Fatal(err)
			}
			var ds []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := time.Now()
				if _, err := n.Score(ctx, blocks, claims); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t))
			}
			b.StopTimer()
			p50, p95 := percentiles(ds)
			b.ReportMetric(p50, "p50-ms")
			b.ReportMetric(p95, "p95-ms")
			b.ReportMetric(p50/pairs, "ms/claim")
			b.ReportMetric(float64(tokens)/pairs, "tokens/pair")
		})
		n.Close()
	}
}

// nliInt8Models writes the NLI model of dir quantized (same seed) beside it,
// under the same spec, and returns its directory.
func nliInt8Models(b *testing.B, dir string, spec models.Spec, vocab int) string {
	b.Helper()
	out := filepath.Join(os.TempDir(), "exocortex-bench-models-nli-int8-v1")
	onnx := filepath.Join(out, spec.Name, filepath.FromSlash(spec.ONNX))
	if _, err := os.Stat(onnx); err == nil {
		return out
	}
	for _, p := range []string{spec.Tokenizer, spec.Config} {
		raw, err := os.ReadFile(filepath.Join(dir, spec.Name, filepath.FromSlash(p)))
		if err != nil {
			b.Fatal(err)
		}
		dst := filepath.Join(out, spec.Name, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg := onnxgen.MiniLMNLI().WithVocab(vocab)
	cfg.Quantized = true
	if err := os.MkdirAll(filepath.Dir(onnx), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := onnxgen.WriteEncoder(onnx+".tmp", cfg); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(onnx+".tmp", onnx); err != nil {
		b.Fatal(err)
	}
	return out
}
