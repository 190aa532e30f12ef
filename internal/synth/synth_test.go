package synth

import (
	"math"
	"testing"
)

func TestVectorsAreDeterministicAndNormalised(t *testing.T) {
	g1, g2 := New(Default(7, 384, 10000)), New(Default(7, 384, 10000))
	a, b := make([]float32, 384), make([]float32, 384)
	for i := range 50 {
		g1.Vector(i, a)
		g2.Vector(i, b)
		var ss float64
		for d := range a {
			if a[d] != b[d] {
				t.Fatalf("vector %d differs between generators with one seed", i)
			}
			ss += float64(a[d]) * float64(a[d])
		}
		if math.Abs(ss-1) > 1e-4 {
			t.Fatalf("vector %d has squared norm %g", i, ss)
		}
	}
}

func TestStats(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration statistics")
	}
	st := Measure(New(Default(1, 384, 20000)), 20000, 50)
	t.Logf("20k points: %+v", st)
}
