package eval

import (
	"math"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/answer"
)

func TestFitIsotonicPoolsAdjacentViolators(t *testing.T) {
	cases := []struct {
		name   string
		xs     []float64
		ys     []bool
		at     []float64
		want   []float64
		points int
	}{
		{"alternating outcomes pool into a rising step", []float64{1, 2, 3, 4, 5}, []bool{true, false, true, false, true},
			[]float64{1, 2, 3, 4, 5}, []float64{0.5, 0.5, 0.5, 0.5, 1}, 5},
		{"outcomes already rising are kept as they are", []float64{0.1, 0.5, 0.9}, []bool{false, false, true},
			[]float64{0.1, 0.5, 0.9, 0.7}, []float64{0, 0, 1, 0.5}, 3},
		{"equal scores are pooled before anything else", []float64{0.3, 0.3, 0.3, 0.8}, []bool{true, false, false, true},
			[]float64{0.3, 0.8}, []float64{1.0 / 3, 1}, 2},
		{"a falling set is one flat block", []float64{0.2, 0.4, 0.6, 0.8}, []bool{true, true, false, false},
			[]float64{0, 0.5, 1}, []float64{0.5, 0.5, 0.5}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := FitIsotonic(tc.xs, tc.ys)
			if len(c.X) != tc.points {
				t.Errorf("points %v -> %v, want %d points", c.X, c.Y, tc.points)
			}
			for i := 1; i < len(c.Y); i++ {
				if c.Y[i] < c.Y[i-1] || c.X[i] <= c.X[i-1] {
					t.Errorf("not monotone: x %v y %v", c.X, c.Y)
				}
			}
			for i, x := range tc.at {
				if got := c.Apply(x); math.Abs(got-tc.want[i]) > 1e-9 {
					t.Errorf("Apply(%v) = %v, want %v", x, got, tc.want[i])
				}
			}
		})
	}
}

// logisticSamples draws n scores uniform in [0,1], each right with
// probability 1/(1+exp(a*x+b)).
func logisticSamples(n int, a, b float64, seed int64) ([]float64, []bool) {
	r := rand.New(rand.NewSource(seed))
	xs, ys := make([]float64, n), make([]bool, n)
	for i := range xs {
		xs[i] = r.Float64()
		ys[i] = r.Float64() < 1/(1+math.Exp(a*xs[i]+b))
	}
	return xs, ys
}

func TestFitPlattRecoversAKnownLogistic(t *testing.T) {
	xs, ys := logisticSamples(20000, -8, 4, 1)
	c := FitPlatt(xs, ys)
	if math.Abs(c.A+8) > 0.6 || math.Abs(c.B-4) > 0.3 {
		t.Errorf("fit A=%.3f B=%.3f, want about -8 and 4", c.A, c.B)
	}
	if c.Samples != len(xs) || c.Method != MethodPlatt {
		t.Errorf("samples %d method %q", c.Samples, c.Method)
	}
}

func TestFitIsotonicFollowsAKnownLogistic(t *testing.T) {
	xs, ys := logisticSamples(20000, -8, 4, 2)
	c := FitIsotonic(xs, ys)
	prev := -1.0
	for x := 0.0; x <= 1; x += 0.01 {
		got := c.Apply(x)
		if got < prev {
			t.Fatalf("Apply falls at %.2f: %v after %v", x, got, prev)
		}
		prev = got
		if want := 1 / (1 + math.Exp(-8*x+4)); x > 0.1 && x < 0.9 && math.Abs(got-want) > 0.12 {
			t.Errorf("Apply(%.2f) = %.3f, true probability %.3f", x, got, want)
		}
	}
}

func TestFitPlattWithOneOutcomeOnlyStaysFinite(t *testing.T) {
	c := FitPlatt([]float64{0.6, 0.7, 0.9, 1}, []bool{true, true, true, true})
	if math.IsNaN(c.A) || math.IsInf(c.A, 0) || math.IsNaN(c.B) {
		t.Fatalf("A=%v B=%v", c.A, c.B)
	}
	if p := c.Apply(0.9); p < 0.5 || p >= 1 {
		t.Errorf("Apply(0.9) = %v, want a probability above one half and below one", p)
	}
}

func TestChooseThresholdMaximisesAccuracy(t *testing.T) {
	cases := []struct {
		name string
		xs   []float64
		ys   []bool
		keep []float64 // scores that must pass
		drop []float64 // and fail
	}{
		{"wrong answers below right ones are cut off", []float64{0.1, 0.2, 0.3, 0.7, 0.8, 0.9}, []bool{false, false, false, true, true, true},
			[]float64{0.7, 0.9}, []float64{0.1, 0.3}},
		{"all right keeps everything", []float64{0.2, 0.5, 0.9}, []bool{true, true, true}, []float64{0.2, 0.9}, nil},
		{"all wrong abstains always", []float64{0.2, 0.5, 0.9}, []bool{false, false, false}, nil, []float64{0.2, 0.9, 1}},
		{"a mostly right middle is kept", []float64{0.1, 0.2, 0.5, 0.55, 0.6, 0.9}, []bool{false, false, true, false, true, true},
			[]float64{0.6, 0.9}, []float64{0.1, 0.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{MethodIsotonic, MethodPlatt} {
				var samples []Sample
				for i, x := range tc.xs {
					samples = append(samples, Sample{Mode: "llm", Score: x, Correct: tc.ys[i]})
				}
				samples = append(samples, Sample{Mode: "extractive", Score: 0.95, Correct: false}) // another mode: ignored
				c, err := Calibrate(samples, "llm", method)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range tc.keep {
					if !c.Accept(x, 0) {
						t.Errorf("%s: %v not accepted (p=%.3f, threshold %.3f)", method, x, c.Apply(x), c.Threshold)
					}
				}
				for _, x := range tc.drop {
					if c.Accept(x, 0) {
						t.Errorf("%s: %v accepted (p=%.3f, threshold %.3f)", method, x, c.Apply(x), c.Threshold)
					}
				}
			}
		})
	}
	if _, err := Calibrate([]Sample{{Mode: "llm", Score: 1, Correct: true}}, "extractive", ""); err == nil {
		t.Error("calibrating a mode with no samples did not fail")
	}
}

func TestCalibrationFileRoundTrips(t *testing.T) {
	xs, ys := logisticSamples(200, -8, 4, 3)
	llm := FitIsotonic(xs, ys)
	llm.Threshold = ChooseThreshold(llm, xs, ys)
	qa := FitPlatt(xs, ys)
	path := filepath.Join(t.TempDir(), "calibration.json")
	if err := (&answer.Calibrations{LLM: llm, QA: qa, Set: "t"}).Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := answer.LoadCalibrations(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg answer.Config
	got.Apply(&cfg)
	for _, x := range []float64{0.1, 0.45, 0.8} {
		if cfg.Calibration.Apply(x) != llm.Apply(x) || cfg.QACalibration.Apply(x) != qa.Apply(x) {
			t.Errorf("at %v: loaded %v/%v, saved %v/%v", x, cfg.Calibration.Apply(x), cfg.QACalibration.Apply(x), llm.Apply(x), qa.Apply(x))
		}
	}
	if missing, err := answer.LoadCalibrations(filepath.Join(t.TempDir(), "none.json")); missing != nil || err != nil {
		t.Errorf("a missing file: %v, %v; want nil, nil", missing, err)
	}
}
