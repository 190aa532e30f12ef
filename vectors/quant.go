package vectors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Scalar quantisation. A vector x (L2-normalised, so every component lies in
// [-1, 1]) is stored as one float32 scale s = max|x_i| / 127 followed by the
// int8 codes round(x_i / s). Per-vector scaling uses the full int8 range for
// every vector whatever its largest component. The rounding error of one
// component is at most s/2, so a dot product with a unit query is off by
// about s/sqrt(12) ≈ 3e-4 at 384 dimensions (s ≈ 0.15/127): small enough to
// steer the graph walk, not small enough to rank the final candidates —
// nearest neighbours in embedding data are often closer than that — which is
// why searches rescore with the float32 vectors (raw.go).

// recordSize is the bytes one stored vector takes: scale + codes, padded to
// four bytes so the scales of consecutive records stay aligned.
func recordSize(dim int) int { return (4 + dim + 3) &^ 3 }

// normalize returns x scaled to unit length in a new slice, or an error for a
// zero or non-finite vector.
func normalize(x []float32) ([]float32, error) {
	var ss float64
	for _, v := range x {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("vector has a non-finite component: %w", ErrInvalid)
		}
		ss += f * f
	}
	if ss == 0 {
		return nil, fmt.Errorf("vector is all zeros: %w", ErrInvalid)
	}
	inv := 1 / math.Sqrt(ss)
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(float64(v) * inv)
	}
	return out, nil
}

// quantize writes x's record (scale then codes) into rec, which has room for
// recordSize(len(x)) bytes.
func quantize(x []float32, rec []byte) {
	var maxAbs float32
	for _, v := range x {
		maxAbs = max(maxAbs, abs32(v))
	}
	scale := maxAbs / 127
	binary.LittleEndian.PutUint32(rec, math.Float32bits(scale))
	codes := rec[4 : 4+len(x)]
	if scale == 0 {
		clear(codes)
		return
	}
	inv := 1 / scale
	for i, v := range x {
		c := int32(math.Round(float64(v * inv)))
		codes[i] = byte(int8(min(max(c, -127), 127)))
	}
}

// dequantize writes the float32 vector a record stands for into dst.
func dequantize(rec []byte, dst []float32) {
	scale := recordScale(rec)
	codes := rec[4 : 4+len(dst)]
	for i := range dst {
		dst[i] = scale * float32(int8(codes[i]))
	}
}

func recordScale(rec []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(rec))
}

func abs32(v float32) float32 {
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}
