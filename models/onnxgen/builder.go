package onnxgen

import (
	"fmt"
	"strings"
)

// builder adds nodes and initializers to a graph. Names follow the Hugging
// Face checkpoints (encoder.layer.3.attention.self.query.weight) and the
// PyTorch exporter (/encoder/layer.3/attention/self/query/MatMul), so that a
// generated graph reads like an exported one.
type builder struct {
	g         graph
	seed      int64
	quantized bool
	// dq maps a float tensor to its DynamicQuantizeLinear outputs, so that
	// the MatMuls sharing an input share its quantization, as quantize_dynamic
	// does.
	dq    map[string][3]string
	names map[string]bool
}

func newBuilder(cfg Config) *builder {
	return &builder{
		g:         graph{name: "onnxgen_" + cfg.Head.String()},
		seed:      cfg.Seed,
		quantized: cfg.Quantized,
		dq:        map[string][3]string{},
		names:     map[string]bool{},
	}
}

// unique panics on a name used twice: that is a bug of the generator, which
// ONNX Runtime would report far less clearly.
func (b *builder) unique(name string) string {
	if b.names[name] {
		panic(fmt.Sprintf("onnxgen: name %q used twice", name))
	}
	b.names[name] = true
	return name
}

// op adds a node named name whose one output is name + "_output_0" and
// returns that output.
func (b *builder) op(op, name string, inputs []string, attrs ...attr) string {
	return b.opOut(op, name, name+"_output_0", inputs, attrs...)
}

// opOut adds a node with one output called out.
func (b *builder) opOut(op, name, out string, inputs []string, attrs ...attr) string {
	b.g.nodes = append(b.g.nodes, node{
		op:      op,
		name:    b.unique(name),
		inputs:  inputs,
		outputs: []string{b.unique(out)},
		attrs:   attrs,
	})
	return out
}

// opOuts adds a node with the given outputs.
func (b *builder) opOuts(op, name string, inputs, outputs []string, attrs ...attr) {
	for _, o := range outputs {
		b.unique(o)
	}
	b.g.nodes = append(b.g.nodes, node{op: op, name: b.unique(name), inputs: inputs, outputs: outputs, attrs: attrs})
}

func (b *builder) init(t *tensor) string {
	b.unique(t.name)
	b.g.inits = append(b.g.inits, t)
	return t.name
}

func (b *builder) constInt64(name string, dims []int64, vals ...int64) string {
	return b.init(&tensor{name: name, dtype: dtInt64, dims: dims, raw: int64Raw(vals)})
}

func (b *builder) constInt32(name string, dims []int64, vals ...int32) string {
	return b.init(&tensor{name: name, dtype: dtInt32, dims: dims, raw: int32Raw(vals)})
}

func (b *builder) constFloat(name string, dims []int64, vals ...float32) string {
	return b.init(&tensor{name: name, dtype: dtFloat, dims: dims, raw: float32Raw(vals)})
}

func (b *builder) scalarFloat(name string, v float32) string { return b.constFloat(name, nil, v) }

// filled is a float tensor with every element v (LayerNorm's gamma and beta,
// biases).
func (b *builder) filled(name string, n int, v float32) string {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = v
	}
	return b.constFloat(name, []int64{int64(n)}, vals...)
}

// random is a tensor of random weights with standard deviation std. A
// quantized tensor (name "<w>_quantized") holds the float weights of <w>
// quantized; its scale is returned too.
func (b *builder) random(kind int, name string, dtype int32, std float64, dims ...int64) (string, float32) {
	count := int64(1)
	for _, d := range dims {
		count *= d
	}
	w := newWeights(kind, int(count), std, b.seed, strings.TrimSuffix(name, "_quantized"))
	return b.init(&tensor{name: name, dtype: dtype, dims: dims, gen: w}), w.scale()
}

// layerNorm normalises x over its last axis with gamma 1 and beta 0.
func (b *builder) layerNorm(prefix, x, out string, hidden int, eps float32) string {
	gamma := b.filled(prefix+".weight", hidden, 1)
	beta := b.filled(prefix+".bias", hidden, 0)
	return b.opOut("LayerNormalization", "/"+scope(prefix)+"/LayerNormalization", out,
		[]string{x, gamma, beta}, attrInt("axis", -1), attrFloat("epsilon", eps))
}

// linear is x·W + bias for W [in, out] (PyTorch's Linear, transposed), W
// with standard deviation std. When the model is quantized the MatMul is the
// one quantize_dynamic writes.
func (b *builder) linear(prefix, x, out string, in, outDim int, std float64) string {
	p := "/" + scope(prefix)
	wName := prefix + ".weight"
	var y string
	if b.quantized {
		y = b.matMulInteger(p+"/MatMul", x, wName, int64(in), int64(outDim), std)
	} else {
		w, _ := b.random(uniformFloat32, wName, dtFloat, std, int64(in), int64(outDim))
		y = b.op("MatMul", p+"/MatMul", []string{x, w})
	}
	bias := b.filled(prefix+".bias", outDim, 0)
	if out == "" {
		return b.op("Add", p+"/Add", []string{bias, y})
	}
	return b.opOut("Add", p+"/Add", out, []string{bias, y})
}

// matMulInteger is quantize_dynamic's MatMul: the input is quantized to uint8
// per tensor at run time, the weight is int8 with zero point 0, and the int32
// product is scaled back by input scale × weight scale.
func (b *builder) matMulInteger(name, x, wName string, in, out int64, std float64) string {
	q, ok := b.dq[x]
	if !ok {
		q = [3]string{x + "_quantized", x + "_scale", x + "_zero_point"}
		b.opOuts("DynamicQuantizeLinear", x+"_QuantizeLinear", []string{x}, q[:])
		b.dq[x] = q
	}
	w, s := b.random(quantizedInt8, wName+"_quantized", dtInt8, std, in, out)
	wScale := b.scalarFloat(wName+"_scale", s)
	wZero := b.init(&tensor{name: wName + "_zero_point", dtype: dtInt8, raw: []byte{0}})
	mm := b.opOut("MatMulInteger", name+"_quant", name+"_output_quantized", []string{q[0], w, q[2], wZero})
	cast := b.opOut("Cast", name+"_quant_output_cast", name+"_output_quantized_cast", []string{mm}, attrInt("to", int64(dtFloat)))
	scale := b.opOut("Mul", name+"_quant_scales_mul", name+"_quant_scales_mul:0", []string{q[1], wScale})
	return b.opOut("Mul", name+"_quant_output_scale_mul", name+"_output_0", []string{cast, scale})
}

// embedding looks ids up in a [rows, hidden] table: a float Gather, or when
// quantized a Gather from a uint8 table followed by DequantizeLinear, which
// is what quantize_dynamic makes of a Gather on a constant.
func (b *builder) embedding(prefix, ids string, rows, hidden int) string {
	p := "/" + scope(prefix)
	wName := prefix + ".weight"
	if !b.quantized {
		w, _ := b.random(uniformFloat32, wName, dtFloat, weightStd, int64(rows), int64(hidden))
		return b.op("Gather", p+"/Gather", []string{w, ids})
	}
	w, s := b.random(quantizedUint8, wName+"_quantized", dtUint8, weightStd, int64(rows), int64(hidden))
	scale := b.scalarFloat(wName+"_scale", s)
	zero := b.init(&tensor{name: wName + "_zero_point", dtype: dtUint8, raw: []byte{uint8ZeroPoint}})
	g := b.opOut("Gather", p+"/Gather", p+"/Gather_output_0_quantized", []string{w, ids})
	return b.opOut("DequantizeLinear", p+"/Gather_output_0_DequantizeLinear", p+"/Gather_output_0", []string{g, scale, zero})
}

// scope turns a checkpoint prefix (encoder.layer.3.attention.self.query) into
// the exporter's scope (encoder/layer.3/attention/self/query).
func scope(prefix string) string {
	out := make([]byte, 0, len(prefix))
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		// A dot before a digit joins a layer index (layer.3); any other dot
		// separates scopes.
		if c == '.' && (i+1 >= len(prefix) || prefix[i+1] < '0' || prefix[i+1] > '9') {
			c = '/'
		}
		out = append(out, c)
	}
	return string(out)
}
