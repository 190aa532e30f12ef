package answer

import (
	"math"
	"sort"
)

// Calibration maps a raw score (an answer's confidence, the extractive
// model's span score) to the probability that the answer is right, fitted on
// a golden set by `exocortex eval --answers --calibrate`. Threshold is the
// calibrated probability below which the rung abstains.
type Calibration struct {
	// Method is "platt" (P = 1/(1+exp(A*x+B))) or "isotonic" (piecewise
	// linear through the points X -> Y, X ascending, Y non-decreasing).
	Method    string    `json:"method"`
	A         float64   `json:"a,omitempty"`
	B         float64   `json:"b,omitempty"`
	X         []float64 `json:"x,omitempty"`
	Y         []float64 `json:"y,omitempty"`
	Threshold float64   `json:"threshold"`
	// Samples is how many golden answers it was fitted on.
	Samples int `json:"samples,omitempty"`
}

// Apply returns the calibrated probability of raw; a nil calibration
// returns raw unchanged.
func (c *Calibration) Apply(raw float64) float64 {
	if c == nil {
		return raw
	}
	switch c.Method {
	case "platt":
		return 1 / (1 + math.Exp(c.A*raw+c.B))
	case "isotonic":
		n := len(c.X)
		if n == 0 || len(c.Y) != n {
			return raw
		}
		if raw <= c.X[0] {
			return c.Y[0]
		}
		if raw >= c.X[n-1] {
			return c.Y[n-1]
		}
		i := sort.SearchFloat64s(c.X, raw) // c.X[i-1] < raw <= c.X[i]
		x0, x1, y0, y1 := c.X[i-1], c.X[i], c.Y[i-1], c.Y[i]
		if x1 == x0 {
			return y1
		}
		return y0 + (y1-y0)*(raw-x0)/(x1-x0)
	}
	return raw
}

// Accept tells whether raw passes the calibrated threshold; without a
// calibration, whether raw reaches def.
func (c *Calibration) Accept(raw, def float64) bool {
	if c == nil {
		return raw >= def
	}
	return c.Apply(raw) >= c.Threshold
}
