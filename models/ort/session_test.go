package ort_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/onnxgen"
	"github.com/exocortex/exocortex/models/ort"
	"github.com/exocortex/exocortex/models/ort/orttest"
)

func TestInitIsIdempotent(t *testing.T) {
	orttest.Require(t)
	lib := ort.LibPath()
	if lib == "" {
		t.Fatal("LibPath() is empty after a successful Init")
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			if i%2 == 0 {
				errs[i] = ort.Init("")
			} else {
				errs[i] = ort.Init(lib)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Init again: %v", err)
	}
	if err := ort.Available(); err != nil {
		t.Fatalf("Available() = %v", err)
	}
	if v := ort.Version(); !strings.HasPrefix(v, "1.") {
		t.Errorf("Version() = %q", v)
	}

	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := ort.Init(other)
	if err == nil || !strings.Contains(err.Error(), "already initialised with "+lib) {
		t.Fatalf("Init(%s) = %v, want an error saying it is already initialised with %s", other, err, lib)
	}
}

func TestOpenReportsInputsAndOutputs(t *testing.T) {
	orttest.Require(t)
	s := openTiny(t, onnxgen.Tiny(onnxgen.HeadHidden, 50))
	in := s.Inputs()
	want := []ort.IOInfo{
		{Name: "input_ids", Type: ort.Int64, Dims: []int64{-1, -1}},
		{Name: "attention_mask", Type: ort.Int64, Dims: []int64{-1, -1}},
		{Name: "token_type_ids", Type: ort.Int64, Dims: []int64{-1, -1}},
	}
	if !slices.EqualFunc(in, want, equalInfo) {
		t.Errorf("Inputs() = %v, want %v", in, want)
	}
	out := s.Outputs()
	if len(out) != 1 || !equalInfo(out[0], ort.IOInfo{Name: "last_hidden_state", Type: ort.Float32, Dims: []int64{-1, -1, 32}}) {
		t.Errorf("Outputs() = %v", out)
	}
	if !s.HasInput("token_type_ids") || s.HasInput("position_ids") {
		t.Error("HasInput is wrong")
	}
	in[0].Dims[0] = 7
	if s.Inputs()[0].Dims[0] != -1 {
		t.Error("Inputs() shares its slices with the session")
	}
}

func TestOpenFailsNamingTheModel(t *testing.T) {
	orttest.Require(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("this is not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.onnx"), garbage} {
		s, err := ort.Open(path, ort.SessionOptions{})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded", path)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("Open(%s) error %q does not name the model", path, err)
		}
	}
}

func TestRunRejectsBadInputs(t *testing.T) {
	orttest.Require(t)
	s := openTiny(t, onnxgen.Tiny(onnxgen.HeadQA, 50))
	ok := tokens(2, 3)
	tests := []struct {
		name    string
		inputs  map[string]ort.Int64Tensor
		outputs []string
		want    []string
	}{
		{"a missing input is named", map[string]ort.Int64Tensor{"input_ids": ok["input_ids"]}, nil,
			[]string{"missing input attention_mask"}},
		{"an unknown input is named", with(ok, "token_type_ids", ok["input_ids"]), nil,
			[]string{"no input token_type_ids"}},
		{"an unknown output is named", ok, []string{"logits"},
			[]string{"no output logits", "start_logits, end_logits"}},
		{"data that do not fill the shape", with(ok, "attention_mask", ort.Int64Tensor{Shape: []int64{2, 3}, Data: []int64{1, 1}}), nil,
			[]string{"input attention_mask", "needs 6 values, got 2"}},
		{"a shape of the wrong rank", with(ok, "attention_mask", ort.Int64Tensor{Shape: []int64{6}, Data: make([]int64, 6)}), nil,
			[]string{"input attention_mask", "rank 1"}},
		{"an empty batch", with(with(ok, "attention_mask", ort.Int64Tensor{Shape: []int64{0, 3}}), "input_ids", ort.Int64Tensor{Shape: []int64{0, 3}}), nil,
			[]string{"no elements"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Run(tt.inputs, tt.outputs...)
			if err == nil {
				t.Fatal("Run succeeded")
			}
			for _, w := range append(tt.want, s.Path()) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRunReturnsTheNamedOutputs(t *testing.T) {
	orttest.Require(t)
	s := openTiny(t, onnxgen.Tiny(onnxgen.HeadQA, 50))
	in := tokens(2, 3)

	all, err := s.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || !slices.Equal(all["start_logits"].Shape, []int64{2, 3}) || len(all["end_logits"].Data) != 6 {
		t.Fatalf("Run without output names = %v, want start_logits and end_logits [2 3]", all)
	}

	one, err := s.Run(in, "end_logits")
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || !slices.Equal(one["end_logits"].Data, all["end_logits"].Data) {
		t.Fatalf("Run(end_logits) = %v, want end_logits only, as before", one)
	}
}

// TestRunConcurrently runs one session from many goroutines at once (run it
// with -race too): every result must equal the sequential one.
func TestRunConcurrently(t *testing.T) {
	orttest.Require(t)
	s := openTiny(t, onnxgen.Tiny(onnxgen.HeadClassifier, 50))
	inputs := make([]map[string]ort.Int64Tensor, 8)
	want := make([][]float32, len(inputs))
	for i := range inputs {
		inputs[i] = tokens(1+i%3, 4+i)
		out, err := s.Run(inputs[i], "logits")
		if err != nil {
			t.Fatal(err)
		}
		want[i] = out["logits"].Data
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(inputs))
	for range 4 {
		for i := range inputs {
			wg.Go(func() {
				out, err := s.Run(inputs[i], "logits")
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(out["logits"].Data, want[i]) {
					errs <- errors.New("a concurrent Run gave another result than the sequential one")
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSessionOptionsDoNotChangeResults(t *testing.T) {
	orttest.Require(t)
	cfg := onnxgen.Tiny(onnxgen.HeadHidden, 50)
	path := filepath.Join(t.TempDir(), "hidden.onnx")
	if err := onnxgen.WriteEncoder(path, cfg); err != nil {
		t.Fatal(err)
	}
	in := with(tokens(2, 5), "token_type_ids", ort.Int64Tensor{Shape: []int64{2, 5}, Data: make([]int64, 10)})
	var want []float32
	for _, opts := range []ort.SessionOptions{
		{},
		{IntraOpThreads: 2, InterOpThreads: -1, Spinning: true},
		{GraphOptimization: ort.OptimizeExtended},
		{GraphOptimization: ort.OptimizeBasic},
		{GraphOptimization: ort.OptimizeNone},
	} {
		s, err := ort.Open(path, opts)
		if err != nil {
			t.Fatalf("Open with %+v: %v", opts, err)
		}
		out, err := s.Run(in)
		s.Close()
		if err != nil {
			t.Fatalf("Run with %+v: %v", opts, err)
		}
		got := out["last_hidden_state"].Data
		if want == nil {
			want = got
			continue
		}
		for i := range got {
			if d := got[i] - want[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("with %+v element %d is %g, with the defaults %g", opts, i, got[i], want[i])
			}
		}
	}
}

func TestBadSessionOptions(t *testing.T) {
	orttest.Require(t)
	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := onnxgen.WriteEncoder(path, onnxgen.Tiny(onnxgen.HeadHidden, 50)); err != nil {
		t.Fatal(err)
	}
	_, err := ort.Open(path, ort.SessionOptions{GraphOptimization: 9})
	if err == nil || !strings.Contains(err.Error(), "unknown graph optimization 9") {
		t.Fatalf("Open with graph optimization 9 = %v", err)
	}
}

func TestClose(t *testing.T) {
	orttest.Require(t)
	s := openTiny(t, onnxgen.Tiny(onnxgen.HeadHidden, 50))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Run(tokens(1, 2)); !errors.Is(err, ort.ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

func openTiny(t *testing.T, cfg onnxgen.Config) *ort.Session {
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

// tokens is a batch of rows × seq token ids with a full attention mask.
func tokens(rows, seq int) map[string]ort.Int64Tensor {
	shape := []int64{int64(rows), int64(seq)}
	ids := make([]int64, rows*seq)
	mask := make([]int64, rows*seq)
	for i := range ids {
		ids[i] = int64(3 + i%40)
		mask[i] = 1
	}
	return map[string]ort.Int64Tensor{
		"input_ids":      {Shape: shape, Data: ids},
		"attention_mask": {Shape: shape, Data: mask},
	}
}

func with(in map[string]ort.Int64Tensor, name string, t ort.Int64Tensor) map[string]ort.Int64Tensor {
	out := make(map[string]ort.Int64Tensor, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	out[name] = t
	return out
}

func equalInfo(a, b ort.IOInfo) bool {
	return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Dims, b.Dims)
}

// TestRunContextStopsARunMidway: a run of about a second is told to stop
// 30 ms in and returns soon after with the context's error; the session
// still runs the same inputs to the end afterwards, and RunContext with a
// live context gives what Run gives.
func TestRunContextStopsARunMidway(t *testing.T) {
	orttest.Require(t)
	cfg := onnxgen.Tiny(onnxgen.HeadQA, 50)
	cfg.Hidden, cfg.Heads, cfg.Intermediate, cfg.Layers = 256, 4, 1024, 8
	s := openTiny(t, cfg)
	in := tokens(4, 512)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.RunContext(ctx, in)
	stoppedAfter := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("RunContext past its deadline = %v, want an error wrapping context.DeadlineExceeded", err)
	}

	start = time.Now()
	whole, err := s.RunContext(context.Background(), in)
	ranFor := time.Since(start)
	if err != nil {
		t.Fatalf("the same run to the end: %v", err)
	}
	t.Logf("stopped after %s; the whole run takes %s", stoppedAfter, ranFor)
	if stoppedAfter > ranFor/2 {
		t.Errorf("stopped after %s, the whole run takes %s: the run was not stopped midway", stoppedAfter, ranFor)
	}

	small := tokens(2, 3)
	plain, err := s.Run(small)
	if err != nil {
		t.Fatal(err)
	}
	live, cancelLive := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLive()
	got, err := s.RunContext(live, small)
	if err != nil || !slices.Equal(got["start_logits"].Data, plain["start_logits"].Data) || len(whole["start_logits"].Data) != 4*512 {
		t.Fatalf("RunContext with a live context = %v, %v; Run gave %v", got, err, plain)
	}

	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := s.RunContext(done, small); !errors.Is(err, context.Canceled) {
		t.Fatalf("RunContext with a cancelled context = %v, want context.Canceled", err)
	}
}
