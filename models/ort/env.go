package ort

import (
	"fmt"
	"path/filepath"
	"sync"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// env is the process-wide ONNX Runtime environment. onnxruntime_go keeps a
// single global environment, so there is at most one per process.
var env struct {
	mu      sync.Mutex
	libPath string // set once the environment is initialised
}

// Init initialises the ONNX Runtime environment for the process, loading the
// shared library at libPath ("" means the one Find returns). It is safe to
// call from several goroutines and more than once: a later call with "" or
// with the same library is a no-op, a later call with another library is an
// error, since a process can load only one. A failed Init can be retried
// (after installing the library, say).
func Init(libPath string) error {
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.libPath != "" {
		if libPath == "" || samePath(libPath, env.libPath) {
			return nil
		}
		return fmt.Errorf("ort: init with %s: ONNX Runtime is already initialised with %s", libPath, env.libPath)
	}
	if libPath == "" {
		p, err := Find()
		if err != nil {
			return err
		}
		libPath = p
	} else if !isFile(libPath) {
		return fmt.Errorf("%w: %s is not a file (%s)", ErrNotFound, libPath, installHint)
	}
	onnxruntime.SetSharedLibraryPath(libPath)
	if err := onnxruntime.InitializeEnvironment(onnxruntime.WithLogLevelError()); err != nil {
		return fmt.Errorf("ort: init ONNX Runtime from %s (needs version >= 1.24): %w", libPath, err)
	}
	env.libPath = libPath
	return nil
}

// Available reports whether ONNX Runtime can be used: nil when Init has
// succeeded, otherwise the error of Init("") (which, on success, leaves the
// environment initialised).
func Available() error {
	return Init("")
}

// LibPath returns the library the environment was initialised with, "" before
// a successful Init.
func LibPath() string {
	env.mu.Lock()
	defer env.mu.Unlock()
	return env.libPath
}

// Version returns the loaded ONNX Runtime's version, "" before a successful
// Init.
func Version() string {
	if LibPath() == "" {
		return ""
	}
	return onnxruntime.GetVersion()
}

func samePath(a, b string) bool {
	return canonical(a) == canonical(b)
}

func canonical(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}
