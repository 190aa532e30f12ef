package onnxgen

import (
	"encoding/binary"
	"hash/fnv"
	"math"
)

// weightStd is the standard deviation of the encoder's random weights, BERT's
// initializer range: small enough that activations stay well inside float32
// through any number of layers (LayerNorm renormalises each one).
const weightStd = 0.02

// headStd is the standard deviation of a head's weights for a layer with in
// inputs: 1/sqrt(in) gives scores and logits of order one that differ from
// input to input, as a trained head's do, where weightStd would squash every
// score to about zero.
func headStd(in int) float64 { return 1 / math.Sqrt(float64(in)) }

// Kinds of random weights. A quantized weight is the float weight of the same
// seed and name quantized the way quantize_dynamic does it, per tensor, over
// the range [-a, a] of the distribution (which the extremes of a large tensor
// reach): int8 weights symmetric with zero point 0, uint8 embedding tables
// asymmetric with zero point 128. So a quantized model approximates the float
// model of the same config and seed.
const (
	uniformFloat32 = iota // float32, uniform on [-a, a)
	quantizedInt8         // those floats as int8 on [-127, 127]
	quantizedUint8        // those floats as uint8, zero point 128
)

const uint8ZeroPoint = 128

// weights is a tensor's random content: a splitmix64 stream seeded from the
// model's seed and the tensor's name, so that the same seed always gives the
// same bytes, whatever the platform or Go version, and so that changing one
// tensor (the vocabulary size, say) leaves the others as they were.
type weights struct {
	kind  int
	count int     // number of elements
	bound float32 // a: the floats are uniform on [-a, a), standard deviation a/sqrt(3)
	state uint64
	seed  uint64
}

func newWeights(kind, count int, std float64, seed int64, name string) *weights {
	h := fnv.New64a()
	h.Write([]byte(name))
	s := uint64(seed)*0x9E3779B97F4A7C15 ^ h.Sum64()
	return &weights{kind: kind, count: count, bound: float32(std * math.Sqrt(3)), seed: s, state: s}
}

// scale is the quantization scale of a quantized kind.
func (w *weights) scale() float32 {
	if w.kind == quantizedUint8 {
		return 2 * w.bound / 255
	}
	return w.bound / 127
}

func (w *weights) size() int {
	if w.kind == uniformFloat32 {
		return 4 * w.count
	}
	return w.count
}

// reset rewinds the stream, so that the weights can be written again.
func (w *weights) reset() { w.state = w.seed }

func (w *weights) next() uint64 {
	w.state += 0x9E3779B97F4A7C15
	z := w.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// float returns the next float weight.
func (w *weights) float() float32 {
	u := float32(w.next()>>40) / (1 << 24) // [0, 1)
	return (2*u - 1) * w.bound
}

// fill writes the next len(dst) bytes of the tensor's raw data; dst must
// hold whole elements.
func (w *weights) fill(dst []byte) {
	switch w.kind {
	case uniformFloat32:
		for i := 0; i+4 <= len(dst); i += 4 {
			binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(w.float()))
		}
	case quantizedInt8:
		inv := 1 / w.scale()
		for i := range dst {
			q := math.Round(float64(w.float() * inv))
			dst[i] = byte(int8(max(-127, min(127, q))))
		}
	case quantizedUint8:
		inv := 1 / w.scale()
		for i := range dst {
			q := math.Round(float64(w.float()*inv)) + uint8ZeroPoint
			dst[i] = byte(max(0, min(255, q)))
		}
	}
}
