// Package orttest is for tests that need ONNX Runtime.
package orttest

import (
	"os"
	"testing"

	"github.com/exocortex/exocortex/models/ort"
)

// EnvSkip names the environment variable that, set to 1, lets tests that need
// the ONNX Runtime library skip when it is absent instead of failing.
const EnvSkip = "EXOCORTEX_SKIP_ORT"

// Require initialises ONNX Runtime with the library ort.Find locates. When
// that fails the test fails with the reason, which says how to install the
// library, unless EXOCORTEX_SKIP_ORT=1, in which case it is skipped.
func Require(tb testing.TB) {
	tb.Helper()
	err := ort.Available()
	if err == nil {
		return
	}
	if os.Getenv(EnvSkip) == "1" {
		tb.Skipf("skipping, %s=1 and ONNX Runtime is unavailable: %v", EnvSkip, err)
	}
	tb.Fatalf("this test needs ONNX Runtime (%s=1 skips it instead): %v", EnvSkip, err)
}
