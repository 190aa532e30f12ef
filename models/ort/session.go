package ort

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// ErrClosed is returned (wrapped) by Run on a closed Session.
var ErrClosed = errors.New("ort: session is closed")

// GraphOptimization is how much ONNX Runtime rewrites the graph when a model
// is opened. The zero value applies every optimisation.
type GraphOptimization int

const (
	// OptimizeAll applies every optimisation, layout ones included (ORT_ENABLE_ALL).
	OptimizeAll GraphOptimization = iota
	// OptimizeExtended applies the basic ones and operator fusions (ORT_ENABLE_EXTENDED).
	OptimizeExtended
	// OptimizeBasic folds constants and removes redundant nodes (ORT_ENABLE_BASIC).
	OptimizeBasic
	// OptimizeNone runs the graph as written (ORT_DISABLE_ALL).
	OptimizeNone
)

func (g GraphOptimization) level() (onnxruntime.GraphOptimizationLevel, error) {
	switch g {
	case OptimizeAll:
		return onnxruntime.GraphOptimizationLevelEnableAll, nil
	case OptimizeExtended:
		return onnxruntime.GraphOptimizationLevelEnableExtended, nil
	case OptimizeBasic:
		return onnxruntime.GraphOptimizationLevelEnableBasic, nil
	case OptimizeNone:
		return onnxruntime.GraphOptimizationLevelDisableAll, nil
	}
	return 0, fmt.Errorf("unknown graph optimization %d", int(g))
}

// SessionOptions tune a Session. The zero value is the default: one intra-op
// and one inter-op thread, no spinning, every graph optimisation. With one
// intra-op thread a Run computes on the calling goroutine's thread, so
// parallelism comes from running several Runs at once.
type SessionOptions struct {
	// IntraOpThreads is the number of threads one operator may use: 0 means
	// 1, a negative value lets ONNX Runtime pick (one per physical core).
	IntraOpThreads int
	// InterOpThreads is the number of threads that run independent operators
	// in parallel: 0 means 1, a negative value lets ONNX Runtime pick.
	InterOpThreads int
	// Spinning lets idle pool threads busy-wait for work, which lowers latency
	// and burns CPU. Off by default (session.intra_op.allow_spinning=0 and
	// session.inter_op.allow_spinning=0).
	Spinning bool
	// GraphOptimization defaults to OptimizeAll.
	GraphOptimization GraphOptimization
	// OptimizedModelPath, when set, makes ONNX Runtime write the optimised
	// graph there, to see which fusions applied.
	OptimizedModelPath string
}

func threads(n int) int {
	switch {
	case n == 0:
		return 1
	case n < 0:
		return 0 // ONNX Runtime's default
	}
	return n
}

// build turns o into ONNX Runtime session options; the caller destroys them.
func (o SessionOptions) build() (*onnxruntime.SessionOptions, error) {
	level, err := o.GraphOptimization.level()
	if err != nil {
		return nil, err
	}
	so, err := onnxruntime.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("create session options: %w", err)
	}
	spin := "0"
	if o.Spinning {
		spin = "1"
	}
	type step struct {
		what string
		do   func() error
	}
	steps := []step{
		{"set intra-op threads", func() error { return so.SetIntraOpNumThreads(threads(o.IntraOpThreads)) }},
		{"set inter-op threads", func() error { return so.SetInterOpNumThreads(threads(o.InterOpThreads)) }},
		{"set intra-op spinning", func() error { return so.AddSessionConfigEntry("session.intra_op.allow_spinning", spin) }},
		{"set inter-op spinning", func() error { return so.AddSessionConfigEntry("session.inter_op.allow_spinning", spin) }},
		{"set graph optimization", func() error { return so.SetGraphOptimizationLevel(level) }},
	}
	if o.OptimizedModelPath != "" {
		steps = append(steps, step{"set optimized model path", func() error { return so.SetOptimizedModelFilePath(o.OptimizedModelPath) }})
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			so.Destroy()
			return nil, fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return so, nil
}

// Session is an opened model. Run may be called from many goroutines at
// once: ONNX Runtime's Run is thread-safe on one session, and each call here
// has its own input and output tensors. Close waits for running Runs.
type Session struct {
	path    string
	inputs  []IOInfo
	outputs []IOInfo

	mu   sync.RWMutex // Run holds it shared, Close exclusively
	sess *onnxruntime.DynamicAdvancedSession
}

// Open loads the model at modelPath, initialising ONNX Runtime with the
// library Find returns when Init has not been called. It reads the model's
// inputs and outputs itself; all of them must be tensors.
func Open(modelPath string, opts SessionOptions) (*Session, error) {
	if err := Init(""); err != nil {
		return nil, fmt.Errorf("ort: open %s: %w", modelPath, err)
	}
	if _, err := os.Stat(modelPath); err != nil {
		return nil, fmt.Errorf("ort: open model: %w", err)
	}
	inputs, outputs, err := inspect(modelPath)
	if err != nil {
		return nil, fmt.Errorf("ort: open %s: read inputs and outputs: %w", modelPath, err)
	}
	so, err := opts.build()
	if err != nil {
		return nil, fmt.Errorf("ort: open %s: %w", modelPath, err)
	}
	defer so.Destroy()
	sess, err := onnxruntime.NewDynamicAdvancedSession(modelPath, names(inputs), names(outputs), so)
	if err != nil {
		return nil, fmt.Errorf("ort: open %s: create session: %w", modelPath, err)
	}
	return &Session{path: modelPath, inputs: inputs, outputs: outputs, sess: sess}, nil
}

// inspect lists the model's inputs and outputs. onnxruntime_go can only do
// that through a session of its own, so it opens a cheap one: no graph
// optimisation, one thread.
func inspect(modelPath string) ([]IOInfo, []IOInfo, error) {
	probe, err := SessionOptions{GraphOptimization: OptimizeNone}.build()
	if err != nil {
		return nil, nil, err
	}
	defer probe.Destroy()
	ins, outs, err := onnxruntime.GetInputOutputInfoWithOptions(modelPath, probe)
	if err != nil {
		return nil, nil, err
	}
	convert := func(kind string, infos []onnxruntime.InputOutputInfo) ([]IOInfo, error) {
		res := make([]IOInfo, 0, len(infos))
		for _, info := range infos {
			if info.OrtValueType != onnxruntime.ONNXTypeTensor {
				return nil, fmt.Errorf("%s %q is a %s, not a tensor", kind, info.Name, info.OrtValueType)
			}
			res = append(res, IOInfo{
				Name: info.Name,
				Type: ElementType(info.DataType),
				Dims: slices.Clone([]int64(info.Dimensions)),
			})
		}
		return res, nil
	}
	inputs, err := convert("input", ins)
	if err != nil {
		return nil, nil, err
	}
	outputs, err := convert("output", outs)
	if err != nil {
		return nil, nil, err
	}
	return inputs, outputs, nil
}

func names(infos []IOInfo) []string {
	res := make([]string, len(infos))
	for i, info := range infos {
		res[i] = info.Name
	}
	return res
}

func cloneInfos(infos []IOInfo) []IOInfo {
	res := make([]IOInfo, len(infos))
	for i, info := range infos {
		info.Dims = slices.Clone(info.Dims)
		res[i] = info
	}
	return res
}

// Path returns the model file the session was opened from.
func (s *Session) Path() string { return s.path }

// Inputs describes the model's inputs, in the model's order; every one of
// them must be given to Run.
func (s *Session) Inputs() []IOInfo { return cloneInfos(s.inputs) }

// Outputs describes the model's outputs, in the model's order.
func (s *Session) Outputs() []IOInfo { return cloneInfos(s.outputs) }

// HasInput reports whether the model has an input called name (whether it
// takes token_type_ids, say).
func (s *Session) HasInput(name string) bool {
	return slices.ContainsFunc(s.inputs, func(i IOInfo) bool { return i.Name == name })
}

// HasOutput reports whether the model has an output called name.
func (s *Session) HasOutput(name string) bool {
	return slices.ContainsFunc(s.outputs, func(i IOInfo) bool { return i.Name == name })
}

// Run runs the model on inputs, which must hold exactly the model's inputs by
// name (int32 inputs of a model are converted), and returns the named float32
// outputs, or every output when none is named. Input data are used in place
// and not modified; the returned tensors are the caller's.
//
// ONNX Runtime computes every output of the model on each Run; naming fewer
// only trims what is returned.
func (s *Session) Run(inputs map[string]Int64Tensor, outputs ...string) (map[string]Float32Tensor, error) {
	res, err := s.run(inputs, outputs)
	if err != nil {
		return nil, fmt.Errorf("ort: run %s: %w", s.path, err)
	}
	return res, nil
}

// RunContext is Run, stopped when ctx is done: ONNX Runtime is told to
// terminate the run (its terminate flag, checked between operators), and the
// error wraps ctx's (errors.Is(err, context.DeadlineExceeded) after a
// deadline). A run that cannot stop sooner ends with its current operator.
func (s *Session) RunContext(ctx context.Context, inputs map[string]Int64Tensor, outputs ...string) (map[string]Float32Tensor, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ort: run %s: %w", s.path, err)
	}
	if ctx.Done() == nil {
		return s.Run(inputs, outputs...)
	}
	opts, err := onnxruntime.NewRunOptions()
	if err != nil {
		return nil, fmt.Errorf("ort: run %s: create run options: %w", s.path, err)
	}
	defer opts.Destroy()
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			_ = opts.Terminate()
		case <-stop:
		}
	}()
	res, err := s.runWith(inputs, outputs, opts)
	close(stop)
	<-watched // Terminate is never called on destroyed options
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("ort: run %s: stopped: %w", s.path, cerr)
		}
		return nil, fmt.Errorf("ort: run %s: %w", s.path, err)
	}
	return res, nil
}

func (s *Session) run(inputs map[string]Int64Tensor, outputs []string) (map[string]Float32Tensor, error) {
	return s.runWith(inputs, outputs, nil)
}

func (s *Session) runWith(inputs map[string]Int64Tensor, outputs []string, opts *onnxruntime.RunOptions) (map[string]Float32Tensor, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.sess == nil {
		return nil, ErrClosed
	}
	if err := s.checkNames(inputs, outputs); err != nil {
		return nil, err
	}
	if len(outputs) == 0 {
		outputs = names(s.outputs)
	}

	ins := make([]onnxruntime.Value, len(s.inputs))
	defer destroy(ins)
	for i, info := range s.inputs {
		v, err := newInput(info, inputs[info.Name])
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", info.Name, err)
		}
		ins[i] = v
	}
	outs := make([]onnxruntime.Value, len(s.outputs)) // nil: ONNX Runtime allocates them
	defer destroy(outs)
	if err := s.sess.RunWithOptions(ins, outs, opts); err != nil {
		return nil, err
	}
	runtime.KeepAlive(inputs) // ONNX Runtime read the callers' slices in place

	res := make(map[string]Float32Tensor, len(outputs))
	for _, name := range outputs {
		i := slices.IndexFunc(s.outputs, func(o IOInfo) bool { return o.Name == name })
		t, ok := outs[i].(*onnxruntime.Tensor[float32])
		if !ok {
			return nil, fmt.Errorf("output %s is %s, not float32", name, s.outputs[i].Type)
		}
		// The data were copied into Go memory, which stays valid after the
		// tensor is destroyed.
		res[name] = Float32Tensor{Shape: []int64(t.GetShape()), Data: t.GetData()}
	}
	return res, nil
}

// checkNames reports missing and unknown inputs and unknown outputs at once.
func (s *Session) checkNames(inputs map[string]Int64Tensor, outputs []string) error {
	var errs []error
	var missing []string
	for _, info := range s.inputs {
		if _, ok := inputs[info.Name]; !ok {
			missing = append(missing, info.Name)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing input %s (the model takes %s)",
			strings.Join(missing, ", "), strings.Join(names(s.inputs), ", ")))
	}
	var unknown []string
	for name := range inputs {
		if !s.HasInput(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		errs = append(errs, fmt.Errorf("the model has no input %s (it takes %s)",
			strings.Join(unknown, ", "), strings.Join(names(s.inputs), ", ")))
	}
	for _, name := range outputs {
		if !s.HasOutput(name) {
			errs = append(errs, fmt.Errorf("the model has no output %s (it has %s)",
				name, strings.Join(names(s.outputs), ", ")))
		}
	}
	return errors.Join(errs...)
}

// newInput checks t against info and wraps it in an ONNX Runtime tensor.
func newInput(info IOInfo, t Int64Tensor) (onnxruntime.Value, error) {
	n, err := elements(t.Shape)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("shape %v has no elements", t.Shape)
	}
	if int64(len(t.Data)) != n {
		return nil, fmt.Errorf("shape %v needs %d values, got %d", t.Shape, n, len(t.Data))
	}
	if len(info.Dims) > 0 {
		if len(t.Shape) != len(info.Dims) {
			return nil, fmt.Errorf("shape %v has rank %d, the model wants %v", t.Shape, len(t.Shape), info.Dims)
		}
		for i, d := range info.Dims {
			if d >= 0 && t.Shape[i] != d {
				return nil, fmt.Errorf("shape %v does not fit the model's %v", t.Shape, info.Dims)
			}
		}
	}
	shape := onnxruntime.Shape(t.Shape)
	switch info.Type {
	case Int64:
		return onnxruntime.NewTensor(shape, t.Data)
	case Int32:
		data := make([]int32, len(t.Data))
		for i, v := range t.Data {
			if int64(int32(v)) != v {
				return nil, fmt.Errorf("value %d at %d does not fit the model's int32", v, i)
			}
			data[i] = int32(v)
		}
		return onnxruntime.NewTensor(shape, data)
	}
	return nil, fmt.Errorf("the model wants %s, only int64 and int32 inputs are supported", info.Type)
}

func destroy(values []onnxruntime.Value) {
	for _, v := range values {
		if v != nil {
			v.Destroy()
		}
	}
}

// Close releases the session; it waits for running Runs, and a Run after it
// fails with ErrClosed. Closing twice is a no-op.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil
	}
	err := s.sess.Destroy()
	s.sess = nil
	if err != nil {
		return fmt.Errorf("ort: close %s: %w", s.path, err)
	}
	return nil
}
