package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// EnvLib names the environment variable that points at the ONNX Runtime
// shared library; when set it wins over every other place.
const EnvLib = "EXOCORTEX_ORT_LIB"

// libName is the file that ops/install-onnxruntime.sh installs.
const libName = "libonnxruntime.so.1"

// installHint tells a person how to get the library.
const installHint = "run ./task setup, or ops/install-onnxruntime.sh, or set " + EnvLib + " to the library's path"

// ErrNotFound is returned (wrapped) by Find, Init and Open when the ONNX
// Runtime shared library is nowhere to be found.
var ErrNotFound = errors.New("ort: ONNX Runtime shared library (" + libName + ", version >= 1.24) not found")

// Find locates the ONNX Runtime shared library. It looks, in order, at
//
//   - $EXOCORTEX_ORT_LIB, which must then name an existing file;
//   - <dir>/.cache/onnxruntime/<version>/libonnxruntime.so.1 for dir = the
//     current directory and each of its parents (the newest version wins);
//   - the same under the executable's directory and each of its parents;
//   - $HOME/.cache/exocortex/onnxruntime/<version>/libonnxruntime.so.1;
//   - the system library directories (/usr/local/lib, /usr/lib and their
//     multiarch subdirectories): libonnxruntime.so*.
//
// When nothing is found the error wraps ErrNotFound and says where it looked
// and how to install the library.
func Find() (string, error) {
	return hostFinder().find()
}

// finder holds everything Find reads from the host, so that tests can point
// it at a temporary tree.
type finder struct {
	getenv     func(string) string
	cwd        string // "" when unknown
	exe        string // the executable's path, "" when unknown
	home       string // "" when unknown
	systemDirs []string
}

func hostFinder() finder {
	f := finder{getenv: os.Getenv}
	if wd, err := os.Getwd(); err == nil {
		f.cwd = wd
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		f.exe = exe
	}
	if home, err := os.UserHomeDir(); err == nil {
		f.home = home
	}
	f.systemDirs = []string{"/usr/local/lib", "/usr/lib"}
	if triplet := multiarchTriplet(); triplet != "" {
		f.systemDirs = append(f.systemDirs, "/usr/local/lib/"+triplet, "/usr/lib/"+triplet)
	}
	f.systemDirs = append(f.systemDirs, "/usr/local/lib64", "/usr/lib64")
	return f
}

func multiarchTriplet() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	}
	return ""
}

func (f finder) find() (string, error) {
	if p := f.getenv(EnvLib); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("%w: %s=%s is not a file (%s)", ErrNotFound, EnvLib, p, installHint)
		}
		return p, nil
	}

	var looked []string
	seen := map[string]bool{}
	walkUp := func(start string) (string, bool) {
		for dir := start; ; {
			if !seen[dir] {
				seen[dir] = true
				if p, ok := newestInCache(filepath.Join(dir, ".cache", "onnxruntime")); ok {
					return p, true
				}
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return "", false
			}
			dir = parent
		}
	}
	if f.cwd != "" {
		if p, ok := walkUp(f.cwd); ok {
			return p, nil
		}
		looked = append(looked, filepath.Join(f.cwd, ".cache/onnxruntime/*/"+libName)+" and the same in every parent directory")
	}
	if f.exe != "" {
		dir := filepath.Dir(f.exe)
		if p, ok := walkUp(dir); ok {
			return p, nil
		}
		looked = append(looked, filepath.Join(dir, ".cache/onnxruntime/*/"+libName)+" and the same in every parent directory")
	}
	if f.home != "" {
		cache := filepath.Join(f.home, ".cache", "exocortex", "onnxruntime")
		if p, ok := newestInCache(cache); ok {
			return p, nil
		}
		looked = append(looked, filepath.Join(cache, "*", libName))
	}
	for _, dir := range f.systemDirs {
		if p, ok := systemLib(dir); ok {
			return p, nil
		}
	}
	if len(f.systemDirs) > 0 {
		looked = append(looked, strings.Join(f.systemDirs, ", ")+" (libonnxruntime.so*)")
	}
	return "", fmt.Errorf("%w; looked at $%s (unset), %s; %s",
		ErrNotFound, EnvLib, strings.Join(looked, "; "), installHint)
}

// newestInCache returns <cache>/<version>/libonnxruntime.so.1 for the newest
// version directory that has the library.
func newestInCache(cache string) (string, bool) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return "", false
	}
	var versions []string
	for _, e := range entries {
		if isFile(filepath.Join(cache, e.Name(), libName)) {
			versions = append(versions, e.Name())
		}
	}
	if len(versions) == 0 {
		return "", false
	}
	newest := slices.MaxFunc(versions, compareVersions)
	return filepath.Join(cache, newest, libName), true
}

// systemLib returns libonnxruntime.so.1, else libonnxruntime.so, else any
// other libonnxruntime.so.* in dir.
func systemLib(dir string) (string, bool) {
	for _, name := range []string{libName, "libonnxruntime.so"} {
		if p := filepath.Join(dir, name); isFile(p) {
			return p, true
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "libonnxruntime.so.*"))
	for _, m := range matches {
		if isFile(m) {
			return m, true
		}
	}
	return "", false
}

// compareVersions orders dotted versions numerically ("1.24.10" > "1.24.3");
// parts that are not numbers compare as strings.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y string
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		nx, errx := strconv.Atoi(x)
		ny, erry := strconv.Atoi(y)
		switch {
		case errx == nil && erry == nil:
			if c := nx - ny; c != 0 {
				return c
			}
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return 0
}

// isFile reports whether p is a regular file, following symlinks.
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
