// Package ort runs ONNX models with ONNX Runtime (through
// github.com/yalue/onnxruntime_go): it finds and loads the shared library once
// per process, opens models and runs them on int64 inputs (token ids, masks)
// returning float32 outputs by name.
//
// The library is not linked in: it is loaded at run time from the file Find
// locates, normally the one ops/install-onnxruntime.sh installs into
// .cache/onnxruntime/<version>/libonnxruntime.so.1. ONNX Runtime >= 1.24 is
// needed.
package ort
