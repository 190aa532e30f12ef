package eval

import (
	"fmt"
	"math"
	"sort"

	"github.com/exocortex/exocortex/answer"
)

// Calibration methods.
const (
	MethodIsotonic = "isotonic"
	MethodPlatt    = "platt"
)

// Calibrate fits a calibration of the raw scores of the samples of one mode
// (schemas.AnswerLLM: the answer's confidence; schemas.AnswerExtractive: the
// extractive model's span score) against their correctness, and chooses its
// threshold (ChooseThreshold). method is MethodIsotonic (the default) or
// MethodPlatt.
func Calibrate(samples []Sample, mode, method string) (*answer.Calibration, error) {
	var xs []float64
	var ys []bool
	for _, s := range samples {
		if s.Mode == mode {
			xs = append(xs, s.Score)
			ys = append(ys, s.Correct)
		}
	}
	if len(xs) == 0 {
		return nil, fmt.Errorf("no %s answers to calibrate on", mode)
	}
	var c *answer.Calibration
	switch method {
	case "", MethodIsotonic:
		c = FitIsotonic(xs, ys)
	case MethodPlatt:
		c = FitPlatt(xs, ys)
	default:
		return nil, fmt.Errorf("calibration method %q: want isotonic or platt", method)
	}
	c.Threshold = ChooseThreshold(c, xs, ys)
	return c, nil
}

// FitIsotonic fits the non-decreasing function of x that is closest to the
// outcomes in squared error, by pool-adjacent-violators: equal scores are
// pooled first, then any block whose mean is below the block before it is
// merged with it until the means rise. Each block becomes the points
// (lowest x, mean) and (highest x, mean), so Apply is flat inside a block
// and linear between blocks.
func FitIsotonic(xs []float64, ys []bool) *answer.Calibration {
	type block struct {
		lo, hi, sum, w float64
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	var blocks []block
	for _, i := range idx {
		y := 0.0
		if ys[i] {
			y = 1
		}
		if n := len(blocks); n > 0 && blocks[n-1].hi == xs[i] {
			blocks[n-1].sum += y
			blocks[n-1].w++
		} else {
			blocks = append(blocks, block{lo: xs[i], hi: xs[i], sum: y, w: 1})
		}
		for n := len(blocks); n > 1 && blocks[n-1].sum/blocks[n-1].w < blocks[n-2].sum/blocks[n-2].w; n = len(blocks) {
			a, b := blocks[n-2], blocks[n-1]
			blocks = append(blocks[:n-2], block{lo: a.lo, hi: b.hi, sum: a.sum + b.sum, w: a.w + b.w})
		}
	}
	c := &answer.Calibration{Method: MethodIsotonic, Samples: len(xs)}
	for _, b := range blocks {
		m := b.sum / b.w
		c.X, c.Y = append(c.X, b.lo), append(c.Y, m)
		if b.hi > b.lo {
			c.X, c.Y = append(c.X, b.hi), append(c.Y, m)
		}
	}
	return c
}

// FitPlatt fits P(correct) = 1/(1+exp(A*x+B)) by maximum likelihood with
// Platt's smoothed targets ((N+ + 1)/(N+ + 2) for right answers, 1/(N- + 2)
// for wrong ones, so that a set with one outcome only still has a finite
// fit), by Newton's method with a backtracking line search (Lin, Lin and
// Weng's version of Platt's algorithm).
func FitPlatt(xs []float64, ys []bool) *answer.Calibration {
	pos := 0
	for _, y := range ys {
		if y {
			pos++
		}
	}
	neg := len(ys) - pos
	hi, lo := (float64(pos)+1)/(float64(pos)+2), 1/(float64(neg)+2)
	t := make([]float64, len(ys))
	for i, y := range ys {
		t[i] = lo
		if y {
			t[i] = hi
		}
	}
	nll := func(a, b float64) float64 {
		s := 0.0
		for i, x := range xs {
			f := a*x + b
			// log(1+e^f) - (1-t) f, computed without overflow
			if f >= 0 {
				s += t[i]*f + math.Log1p(math.Exp(-f))
			} else {
				s += (t[i]-1)*f + math.Log1p(math.Exp(f))
			}
		}
		return s
	}
	a, b := 0.0, math.Log((float64(neg)+1)/(float64(pos)+1))
	fval := nll(a, b)
	const sigma = 1e-12
	for iter := 0; iter < 100; iter++ {
		var h11, h22, h21, g1, g2 float64
		for i, x := range xs {
			f := a*x + b
			var p, q float64 // p = 1/(1+e^f), q = 1-p
			if f >= 0 {
				e := math.Exp(-f)
				p, q = e/(1+e), 1/(1+e)
			} else {
				e := math.Exp(f)
				p, q = 1/(1+e), e/(1+e)
			}
			d2 := p * q
			h11 += x * x * d2
			h22 += d2
			h21 += x * d2
			d1 := t[i] - p
			g1 += x * d1
			g2 += d1
		}
		if math.Abs(g1) < 1e-7 && math.Abs(g2) < 1e-7 {
			break
		}
		h11 += sigma
		h22 += sigma
		det := h11*h22 - h21*h21
		da := -(h22*g1 - h21*g2) / det
		db := -(-h21*g1 + h11*g2) / det
		gd := g1*da + g2*db
		step := 1.0
		for step >= 1e-10 {
			na, nb := a+step*da, b+step*db
			if nv := nll(na, nb); nv < fval+1e-4*step*gd {
				a, b, fval = na, nb, nv
				break
			}
			step /= 2
		}
		if step < 1e-10 {
			break
		}
	}
	return &answer.Calibration{Method: MethodPlatt, A: a, B: b, Samples: len(xs)}
}

// ChooseThreshold returns the calibrated probability threshold that
// maximises accuracy on the samples: an answer is kept when
// Apply(score) >= threshold, and a kept right answer or an abstained wrong
// one counts as correct. The candidates are the samples' calibrated values
// and one just above the highest (abstain always); among equally accurate
// thresholds the lowest wins (it keeps the most answers).
func ChooseThreshold(c *answer.Calibration, xs []float64, ys []bool) float64 {
	ps := make([]float64, len(xs))
	for i, x := range xs {
		ps[i] = c.Apply(x)
	}
	cands := append([]float64(nil), ps...)
	sort.Float64s(cands)
	if len(cands) > 0 {
		cands = append(cands, math.Nextafter(cands[len(cands)-1], 2))
	}
	best, bestAcc := 0.0, -1
	for _, th := range cands {
		acc := 0
		for i, p := range ps {
			if (p >= th) == ys[i] {
				acc++
			}
		}
		if acc > bestAcc {
			best, bestAcc = th, acc
		}
	}
	return best
}
