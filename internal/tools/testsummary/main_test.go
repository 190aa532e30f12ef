package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummaryKeepsPlainOutputAndListsSkippedTestsWithTheirReasons runs real
// 'go test -json' over a small module with a passing, a failing and two
// skipped tests.
func TestSummaryKeepsPlainOutputAndListsSkippedTestsWithTheirReasons(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/skippy\n\ngo 1.22\n",
		"a/a_test.go": `package a

import "testing"

func TestPasses(t *testing.T) { t.Log("chatty") }

func TestIntegrationNeedsAServer(t *testing.T) { t.Skip("set EXO_SERVER to a running server") }

func TestBroken(t *testing.T) { t.Error("two plus two is not five") }
`,
		"b/b_test.go": `package b

import "testing"

func TestSkipsWithoutReason(t *testing.T) { t.SkipNow() }
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	raw, _ := cmd.Output() // a test fails: exit status 1
	var out bytes.Buffer
	skipped, counts := Summarize(bytes.NewReader(raw), &out)
	PrintSkipped(&out, skipped)
	PrintCounts(&out, counts)
	got := out.String()
	for _, want := range []string{
		"--- FAIL: TestBroken",
		"two plus two is not five",
		"FAIL\texample.com/skippy/a",
		"ok  \texample.com/skippy/b",
		"2 tests skipped:",
		"SKIP example.com/skippy/a TestIntegrationNeedsAServer: set EXO_SERVER to a running server",
		"SKIP example.com/skippy/b TestSkipsWithoutReason: (no reason given)",
		"\ntests: 1 passed, 1 failed, 2 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"=== RUN", "chatty", "--- PASS", "\nPASS\n"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("summary has %q, which plain go test does not print:\n%s", unwanted, got)
		}
	}
}
