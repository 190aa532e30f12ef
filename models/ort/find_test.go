package ort

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	// One temporary tree holds every place Find looks at:
	//   repo/.cache/onnxruntime/<v>/lib   a checkout
	//   repo/sub/dir                      a directory inside it
	//   app/bin/exocortex                 an installed binary
	//   app/.cache/onnxruntime/<v>/lib    its library
	//   home/.cache/exocortex/...         the user cache
	//   sys/lib                           a system library directory
	root := t.TempDir()
	at := func(p string) string { return filepath.Join(root, p) }
	mkdir := func(p string) { mustMkdir(t, at(p)) }
	touch := func(p string) string { mustTouch(t, at(p)); return at(p) }
	mkdir("empty")
	mkdir("repo/sub/dir")
	mkdir("sys/lib")
	mkdir("nolib/lib")

	repoLib := touch("repo/.cache/onnxruntime/1.24.3/libonnxruntime.so.1")
	newerRepoLib := filepath.Join(root, "repo/.cache/onnxruntime/1.24.10/libonnxruntime.so.1")
	appLib := touch("app/.cache/onnxruntime/1.24.3/libonnxruntime.so.1")
	appExe := touch("app/bin/exocortex")
	homeLib := touch("home/.cache/exocortex/onnxruntime/1.24.3/libonnxruntime.so.1")
	sysLib := touch("sys/lib/libonnxruntime.so.1.24.3")
	envLib := touch("custom/libonnxruntime.so")
	mkdir("repo/.cache/onnxruntime/1.25.0") // a version directory without the library

	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvLib {
				return v
			}
			return ""
		}
	}
	none := env("")

	tests := []struct {
		name string
		f    finder
		want string
	}{
		{"the environment variable wins", finder{getenv: env(envLib), cwd: at("repo"), home: at("home")}, envLib},
		{"the current directory's cache is found", finder{getenv: none, cwd: at("repo"), home: at("home")}, repoLib},
		{"a parent directory's cache is found", finder{getenv: none, cwd: at("repo/sub/dir"), home: at("home")}, repoLib},
		{"the executable's directory tree is searched", finder{getenv: none, cwd: at("empty"), exe: appExe, home: at("home")}, appLib},
		{"the user cache is searched", finder{getenv: none, cwd: at("empty"), home: at("home")}, homeLib},
		{"the system directories are searched last", finder{getenv: none, cwd: at("empty"), home: at("empty"), systemDirs: []string{at("nolib/lib"), at("sys/lib")}}, sysLib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.find()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("find() = %s, want %s", got, tt.want)
			}
		})
	}

	t.Run("the newest version wins", func(t *testing.T) {
		mustTouch(t, newerRepoLib)
		defer os.Remove(newerRepoLib)
		got, err := finder{getenv: none, cwd: at("repo")}.find()
		if err != nil || got != newerRepoLib {
			t.Fatalf("find() = %s, %v; want %s", got, err, newerRepoLib)
		}
	})

	t.Run("a missing file in the environment variable is an error", func(t *testing.T) {
		_, err := finder{getenv: env(at("nope.so")), cwd: at("repo")}.find()
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), at("nope.so")) {
			t.Fatalf("find() error = %v, want ErrNotFound naming the file", err)
		}
	})

	t.Run("nothing found says where it looked and how to install", func(t *testing.T) {
		_, err := finder{getenv: none, cwd: at("empty"), home: at("empty"), systemDirs: []string{at("nolib/lib")}}.find()
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("find() error = %v, want ErrNotFound", err)
		}
		for _, want := range []string{at("empty"), at("nolib/lib"), "ops/install-onnxruntime.sh", "./task setup", EnvLib, "libonnxruntime.so.1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int // sign
	}{
		{"1.24.3", "1.24.3", 0},
		{"1.24.10", "1.24.3", 1},
		{"1.9.0", "1.24.0", -1},
		{"1.24", "1.24.1", -1},
		{"1.24.3-rc1", "1.24.3-rc2", -1},
	}
	for _, tt := range tests {
		got := compareVersions(tt.a, tt.b)
		if sign(got) != tt.want {
			t.Errorf("compareVersions(%s, %s) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustTouch(t *testing.T, p string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte("not really a library"), 0o644); err != nil {
		t.Fatal(err)
	}
}
