package onnxgen_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/models/onnxgen"
	"github.com/exocortex/exocortex/models/ort"
	"github.com/exocortex/exocortex/models/ort/orttest"
)

// benchVocab is the vocabulary of the float benchmark models. Looking a token
// up costs the same in a table of 32k rows as in one of 250k, and the real
// table would make each float model 370 MiB bigger. The int8 e5 model keeps
// its real vocabulary (its table is 92 MiB).
const benchVocab = 32000

// BenchmarkEncoder runs models of the real architectures with random weights
// on one intra-op thread, to measure the speed the real ones will have:
//
//	go test -run '^$' -bench BenchmarkEncoder -benchtime 3x ./models/onnxgen
//
// ms/op is one Run; the per-item metrics divide it by the batch.
func BenchmarkEncoder(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: skipping the real-size model benchmarks")
	}
	orttest.Require(b)
	e5Float := onnxgen.E5Small().WithVocab(benchVocab)
	e5Float.Quantized = false
	models := []struct {
		name  string
		cfg   onnxgen.Config
		runs  []shape
		label string // the per-item unit
	}{
		{"e5-small-int8", onnxgen.E5Small(), []shape{{16, 256}, {1, 16}}, "seq"},
		{"e5-small-float", e5Float, []shape{{16, 256}, {1, 16}}, "seq"},
		{"mmarco-MiniLM-reranker", onnxgen.MiniLMReranker().WithVocab(benchVocab), []shape{{20, 256}, {40, 256}, {80, 256}}, "pair"},
	}
	dir := b.TempDir()
	for _, m := range models {
		b.Run(m.name, func(b *testing.B) {
			path := filepath.Join(dir, m.name+".onnx")
			if err := onnxgen.WriteEncoder(path, m.cfg); err != nil {
				b.Fatal(err)
			}
			s, err := ort.Open(path, ort.SessionOptions{IntraOpThreads: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for _, r := range m.runs {
				b.Run(fmt.Sprintf("batch=%dx%d", r.batch, r.seq), func(b *testing.B) {
					in := benchInputs(s, r, m.cfg.Vocab)
					if _, err := s.Run(in); err != nil { // warm up: first run allocates
						b.Fatal(err)
					}
					b.ResetTimer()
					for b.Loop() {
						if _, err := s.Run(in); err != nil {
							b.Fatal(err)
						}
					}
					ms := float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
					b.ReportMetric(ms, "ms/op")
					b.ReportMetric(ms/float64(r.batch), "ms/"+m.label)
					b.ReportMetric(float64(r.batch*r.seq)/ms*1000, "tokens/s")
				})
			}
		})
	}
}

type shape struct{ batch, seq int }

// benchInputs is a full batch (no padding) of pseudo-random token ids.
func benchInputs(s *ort.Session, r shape, vocab int) map[string]ort.Int64Tensor {
	n := r.batch * r.seq
	sh := []int64{int64(r.batch), int64(r.seq)}
	ids, mask := make([]int64, n), make([]int64, n)
	x := uint64(12345)
	for i := range ids {
		x = x*6364136223846793005 + 1442695040888963407
		ids[i] = 3 + int64((x>>33)%uint64(vocab-3))
		mask[i] = 1
	}
	in := map[string]ort.Int64Tensor{
		onnxgen.InputIDs:      {Shape: sh, Data: ids},
		onnxgen.AttentionMask: {Shape: sh, Data: mask},
	}
	if s.HasInput(onnxgen.TokenTypeIDs) {
		in[onnxgen.TokenTypeIDs] = ort.Int64Tensor{Shape: sh, Data: make([]int64, n)}
	}
	return in
}
