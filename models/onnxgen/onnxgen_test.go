package onnxgen_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/exocortex/exocortex/models/onnxgen"
	"github.com/exocortex/exocortex/models/ort"
	"github.com/exocortex/exocortex/models/ort/orttest"
)

var heads = []onnxgen.Head{onnxgen.HeadHidden, onnxgen.HeadClassifier, onnxgen.HeadQA}

func TestSameConfigGivesSameBytes(t *testing.T) {
	cfg := onnxgen.Tiny(onnxgen.HeadQA, 100)
	a, err := onnxgen.Encoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := onnxgen.Encoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two Encoder calls with the same config gave different bytes")
	}

	path := filepath.Join(t.TempDir(), "qa.onnx")
	if err := onnxgen.WriteEncoder(path, cfg); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, written) {
		t.Fatal("WriteEncoder wrote other bytes than Encoder returned")
	}

	cfg.Seed++
	c, err := onnxgen.Encoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Fatal("another seed gave the same bytes")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*onnxgen.Config)
		want   string // "" for valid
	}{
		{"a tiny config is valid", func(*onnxgen.Config) {}, ""},
		{"heads must divide hidden", func(c *onnxgen.Config) { c.Heads = 5 }, "5 heads do not divide hidden size 32"},
		{"the vocabulary must not be empty", func(c *onnxgen.Config) { c.Vocab = 0 }, "vocab is 0"},
		{"the pad token must be in the vocabulary", func(c *onnxgen.Config) { c.Vocab = 1 }, "pad token id 1 is outside the vocabulary"},
		{"every problem is reported", func(c *onnxgen.Config) { c.Layers = 0; c.Intermediate = -1 }, "layers is 0, must be positive\nonnxgen: intermediate is -1"},
		{"the head must be known", func(c *onnxgen.Config) { c.Head = 7 }, "unknown head 7"},
		{"labels must not be negative", func(c *onnxgen.Config) { c.Labels = -3 }, "labels is -3"},
		{"the model must fit protobuf's 2 GiB", func(c *onnxgen.Config) { *c = onnxgen.XLMRBaseQA().WithVocab(1_000_000) }, "over ONNX's 2 GiB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := onnxgen.Tiny(onnxgen.HeadClassifier, 100)
			tt.change(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if tt.want != "" {
				if _, err := onnxgen.Encoder(cfg); err == nil {
					t.Fatal("Encoder accepted an invalid config")
				}
			}
		})
	}
}

func TestPresetsHaveTheRealArchitectures(t *testing.T) {
	tests := []struct {
		name string
		cfg  onnxgen.Config
		want [7]int // vocab, hidden, layers, heads, intermediate, max positions, type vocab
	}{
		{"multilingual-e5-small", onnxgen.E5Small(), [7]int{250037, 384, 12, 12, 1536, 512, 2}},
		{"mmarco-mMiniLMv2-L12-H384", onnxgen.MiniLMReranker(), [7]int{250002, 384, 12, 12, 1536, 514, 1}},
		{"xlm-roberta-base-squad2", onnxgen.XLMRBaseQA(), [7]int{250002, 768, 12, 12, 3072, 514, 1}},
		{"multilingual-MiniLMv2-L6-mnli-xnli", onnxgen.MiniLMNLI(), [7]int{250002, 384, 6, 12, 1536, 514, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			got := [7]int{c.Vocab, c.Hidden, c.Layers, c.Heads, c.Intermediate, c.MaxPositions, c.TypeVocab}
			if got != tt.want {
				t.Fatalf("sizes = %v, want %v", got, tt.want)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if !onnxgen.E5Small().Quantized || !onnxgen.E5Small().TokenTypeInput {
		t.Error("E5Small should be quantized and take token_type_ids, like the int8 export")
	}
	if nli := onnxgen.MiniLMNLI(); nli.Labels != 3 || nli.Quantized || nli.TokenTypeInput || nli.Head != onnxgen.HeadClassifier {
		t.Errorf("MiniLMNLI = %+v, want an fp32 classifier of 3 labels without token_type_ids, like its ONNX export", nli)
	}
	if got := onnxgen.E5Small().WithVocab(1000).Vocab; got != 1000 {
		t.Errorf("WithVocab(1000).Vocab = %d", got)
	}
}

// TestQuantizedGraphIsQuantizeDynamics checks the graph without running it:
// every weight MatMul is quantize_dynamic's pattern and every embedding is
// read through DequantizeLinear.
func TestQuantizedGraphIsQuantizeDynamics(t *testing.T) {
	for _, h := range heads {
		t.Run(h.String(), func(t *testing.T) {
			cfg := onnxgen.Tiny(h, 100)
			headLinears := map[onnxgen.Head]int{onnxgen.HeadHidden: 0, onnxgen.HeadClassifier: 2, onnxgen.HeadQA: 1}[h]
			linears := 6*cfg.Layers + headLinears

			float := opCounts(t, cfg)
			if float["MatMul"] != 2*cfg.Layers+linears || float["MatMulInteger"] != 0 {
				t.Errorf("float model: %d MatMul and %d MatMulInteger, want %d and 0", float["MatMul"], float["MatMulInteger"], 2*cfg.Layers+linears)
			}

			cfg.Quantized = true
			q := opCounts(t, cfg)
			want := map[string]int{
				"MatMul":                2 * cfg.Layers, // scores and context: no constant weight
				"MatMulInteger":         linears,
				"DynamicQuantizeLinear": 4*cfg.Layers + headLinears, // Q, K and V share theirs
				"DequantizeLinear":      3,                          // word, position, token type tables
				"LayerNormalization":    1 + 2*cfg.Layers,
				"Softmax":               cfg.Layers,
				"Erf":                   cfg.Layers,
			}
			for op, n := range want {
				if q[op] != n {
					t.Errorf("quantized model has %d %s, want %d", q[op], op, n)
				}
			}
			if q["Cast"] < linears || q["Mul"] < 2*linears {
				t.Errorf("quantized model has %d Cast and %d Mul, want at least %d and %d", q["Cast"], q["Mul"], linears, 2*linears)
			}
		})
	}
}

func TestORTLoadsEveryVariant(t *testing.T) {
	orttest.Require(t)
	tokens := []ioSpec{{"input_ids", []int64{-1, -1}}, {"attention_mask", []int64{-1, -1}}}
	withTypes := append(slices.Clone(tokens), ioSpec{"token_type_ids", []int64{-1, -1}})
	outputs := map[onnxgen.Head][]ioSpec{
		onnxgen.HeadHidden:     {{"last_hidden_state", []int64{-1, -1, 32}}},
		onnxgen.HeadClassifier: {{"logits", []int64{-1, 1}}},
		onnxgen.HeadQA:         {{"start_logits", []int64{-1, -1}}, {"end_logits", []int64{-1, -1}}},
	}
	for _, h := range heads {
		for _, quantized := range []bool{false, true} {
			for _, tokenTypes := range []bool{false, true} {
				name := h.String()
				if quantized {
					name += "/int8"
				}
				if tokenTypes {
					name += "/token_type_ids"
				}
				t.Run(name, func(t *testing.T) {
					cfg := onnxgen.Tiny(h, 100)
					cfg.Quantized = quantized
					cfg.TokenTypeInput = tokenTypes
					s := open(t, cfg)

					wantIn := tokens
					if tokenTypes {
						wantIn = withTypes
					}
					checkIO(t, "input", s.Inputs(), ort.Int64, wantIn)
					checkIO(t, "output", s.Outputs(), ort.Float32, outputs[h])

					out := run(t, s, [][]int64{{0, 17, 18, 19, 2}, {0, 20, 2, 1, 1}})
					for name, o := range out {
						for _, v := range o.Data {
							if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
								t.Fatalf("%s has %v", name, v)
							}
						}
					}
				})
			}
		}
	}
	t.Run("classifier/3 labels (NLI)", func(t *testing.T) {
		cfg := onnxgen.Tiny(onnxgen.HeadClassifier, 100)
		cfg.Labels = 3
		s := open(t, cfg)
		checkIO(t, "input", s.Inputs(), ort.Int64, tokens)
		checkIO(t, "output", s.Outputs(), ort.Float32, []ioSpec{{"logits", []int64{-1, 3}}})
		out := run(t, s, [][]int64{{0, 17, 18, 19, 2}, {0, 20, 2, 1, 1}})["logits"]
		if !slices.Equal(out.Shape, []int64{2, 3}) || out.Data[0] == out.Data[1] {
			t.Errorf("logits %v %v, want 3 different scores per row", out.Shape, out.Data)
		}
	})
}

func TestHFConfigNamesTheClassifierOutputsInOrder(t *testing.T) {
	cfg := onnxgen.MiniLMNLI().WithVocab(100)
	raw, err := onnxgen.HFConfig(cfg, []string{"contradiction", "entailment", "neutral"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Architectures []string          `json:"architectures"`
		ID2Label      map[string]string `json:"id2label"`
		Label2ID      map[string]int    `json:"label2id"`
		Layers        int               `json:"num_hidden_layers"`
		Pad           int               `json:"pad_token_id"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID2Label["0"] != "contradiction" || got.ID2Label["2"] != "neutral" || got.Label2ID["entailment"] != 1 ||
		got.Architectures[0] != "XLMRobertaForSequenceClassification" || got.Layers != 6 || got.Pad != 1 {
		t.Errorf("config.json = %s", raw)
	}
	if _, err := onnxgen.HFConfig(cfg, []string{"entailment", "contradiction"}); err == nil || !strings.Contains(err.Error(), "2 labels for a classifier of 3 outputs") {
		t.Errorf("two labels for three outputs: %v", err)
	}
}

// TestPaddingDoesNotChangeRealTokens runs a sequence alone and padded in a
// batch beside a longer one: the attention mask must keep the padding out of
// every real token's result. Quantized models are close but not exact: the
// activations are quantized with one scale for the whole batch, as in the
// real int8 export.
func TestPaddingDoesNotChangeRealTokens(t *testing.T) {
	orttest.Require(t)
	e5Shaped := onnxgen.E5Small().WithVocab(1000)
	e5Shaped.Layers = 2
	e5Shaped.Quantized = false
	tests := []struct {
		name string
		cfg  onnxgen.Config
		tol  float64
	}{
		{"hidden", onnxgen.Tiny(onnxgen.HeadHidden, 100), 1e-4},
		{"classifier", onnxgen.Tiny(onnxgen.HeadClassifier, 100), 1e-4},
		{"qa", onnxgen.Tiny(onnxgen.HeadQA, 100), 1e-4},
		{"e5 sized, 2 layers", e5Shaped, 1e-4},
		{"hidden int8", quantized(onnxgen.Tiny(onnxgen.HeadHidden, 100)), 1e-2},
		{"classifier int8", quantized(onnxgen.Tiny(onnxgen.HeadClassifier, 100)), 1e-2},
	}
	short := []int64{0, 17, 18, 19, 2}
	long := []int64{0, 30, 31, 32, 33, 34, 35, 36, 37, 2}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, tt.cfg)
			alone := run(t, s, [][]int64{short})
			batch := run(t, s, [][]int64{long, short})
			for name, a := range alone {
				b := batch[name]
				var got []float32
				switch name {
				case "last_hidden_state": // [batch, seq, hidden]: row 1, its first 5 tokens
					hidden := int(a.Shape[2])
					seq := int(b.Shape[1])
					got = b.Data[seq*hidden : seq*hidden+len(short)*hidden]
				case "logits": // [batch, 1]
					got = b.Data[1:2]
				default: // [batch, seq]
					seq := int(b.Shape[1])
					got = b.Data[seq : seq+len(short)]
				}
				if d := maxDiff(a.Data, got); d > tt.tol {
					t.Errorf("%s of the padded sequence differs from the one alone by %g (tolerance %g)", name, d, tt.tol)
				}
			}
		})
	}
}

// TestQuantizedApproximatesFloat checks that the int8 model is the float
// model of the same seed, quantized.
func TestQuantizedApproximatesFloat(t *testing.T) {
	orttest.Require(t)
	cfg := onnxgen.Tiny(onnxgen.HeadHidden, 100)
	ids := [][]int64{{0, 17, 18, 19, 20, 21, 22, 2}}
	f := run(t, open(t, cfg), ids)["last_hidden_state"].Data
	q := run(t, open(t, quantized(cfg)), ids)["last_hidden_state"].Data
	if c := cosine(f, q); c < 0.99 {
		t.Fatalf("cosine similarity of the float and int8 hidden states = %.4f, want >= 0.99", c)
	}
}

func quantized(c onnxgen.Config) onnxgen.Config {
	c.Quantized = true
	return c
}

// open writes cfg's model into a temporary directory and opens it.
func open(t *testing.T, cfg onnxgen.Config) *ort.Session {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := onnxgen.WriteEncoder(path, cfg); err != nil {
		t.Fatal(err)
	}
	s, err := ort.Open(path, ort.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// run pads the rows with XLM-R's pad id 1 to the longest and runs them.
func run(t *testing.T, s *ort.Session, rows [][]int64) map[string]ort.Float32Tensor {
	t.Helper()
	seq := 0
	for _, r := range rows {
		seq = max(seq, len(r))
	}
	shape := []int64{int64(len(rows)), int64(seq)}
	ids := make([]int64, 0, len(rows)*seq)
	mask := make([]int64, 0, len(rows)*seq)
	for _, r := range rows {
		for i := range seq {
			if i < len(r) {
				ids, mask = append(ids, r[i]), append(mask, 1)
			} else {
				ids, mask = append(ids, 1), append(mask, 0)
			}
		}
	}
	in := map[string]ort.Int64Tensor{
		onnxgen.InputIDs:      {Shape: shape, Data: ids},
		onnxgen.AttentionMask: {Shape: shape, Data: mask},
	}
	if s.HasInput(onnxgen.TokenTypeIDs) {
		in[onnxgen.TokenTypeIDs] = ort.Int64Tensor{Shape: shape, Data: make([]int64, len(ids))}
	}
	out, err := s.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ioSpec is an input or output a model should have.
type ioSpec struct {
	name string
	dims []int64
}

func checkIO(t *testing.T, kind string, got []ort.IOInfo, typ ort.ElementType, want []ioSpec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%ss = %v, want %v", kind, got, want)
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].Type != typ || !slices.Equal(got[i].Dims, w.dims) {
			t.Errorf("%s %d = %v, want %s %s%v", kind, i, got[i], w.name, typ, w.dims)
		}
	}
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// opCounts generates cfg's model and counts its nodes by op type, reading the
// protobuf back: ModelProto.graph (7) -> GraphProto.node (1) ->
// NodeProto.op_type (4).
func opCounts(t *testing.T, cfg onnxgen.Config) map[string]int {
	t.Helper()
	model, err := onnxgen.Encoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, g := range messages(t, model, 7) {
		for _, n := range messages(t, g, 1) {
			for _, op := range messages(t, n, 4) {
				counts[string(op)]++
			}
		}
	}
	return counts
}

// messages returns the length-delimited fields numbered field of msg.
func messages(t *testing.T, msg []byte, field protowire.Number) [][]byte {
	t.Helper()
	var res [][]byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			t.Fatalf("bad protobuf tag: %v", protowire.ParseError(n))
		}
		msg = msg[n:]
		if num == field && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				t.Fatalf("bad protobuf field: %v", protowire.ParseError(n))
			}
			res = append(res, v)
			msg = msg[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, msg)
		if n < 0 {
			t.Fatalf("bad protobuf field: %v", protowire.ParseError(n))
		}
		msg = msg[n:]
	}
	return res
}
