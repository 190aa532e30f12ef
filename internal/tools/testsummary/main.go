// Command testsummary runs 'go test -json' with the given arguments and
// prints what plain 'go test' would (each package's closing "ok" or "FAIL"
// line, and the whole output of failing tests), then the names of the
// skipped tests with the reasons they gave. It exits with go test's status.
//
//	go run ./internal/tools/testsummary -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary: start go test:", err)
		os.Exit(2)
	}
	skipped, counts := Summarize(out, os.Stdout)
	PrintSkipped(os.Stdout, skipped)
	PrintCounts(os.Stdout, counts)
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testsummary: go test:", err)
		os.Exit(2)
	}
}

// event is one line of 'go test -json' (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// Skip is a skipped test and the reason it logged.
type Skip struct {
	Package, Test, Reason string
}

// Counts are how many tests (subtests included) passed, failed and skipped.
type Counts struct{ Passed, Failed, Skipped int }

// Summarize copies the plain output of a 'go test -json' stream to w and
// returns the skipped tests and the counts. A line that is not JSON is copied
// as it is.
func Summarize(r io.Reader, w io.Writer) ([]Skip, Counts) {
	type key struct{ pkg, test string }
	buf := map[key][]string{}
	var skipped []Skip
	var n Counts
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := key{ev.Package, ev.Test}
		switch {
		case ev.Action == "build-output":
			fmt.Fprint(w, ev.Output)
		case ev.Test == "":
			// "PASS" is the verbose test binary's; plain go test prints
			// only the "ok" line after it.
			if ev.Action == "output" && !strings.HasPrefix(ev.Output, "=== ") && ev.Output != "PASS\n" {
				fmt.Fprint(w, ev.Output)
			}
		case ev.Action == "output":
			buf[k] = append(buf[k], ev.Output)
		case ev.Action == "fail":
			n.Failed++
			for _, o := range buf[k] {
				if !strings.HasPrefix(o, "=== ") {
					fmt.Fprint(w, o)
				}
			}
			delete(buf, k)
		case ev.Action == "skip":
			n.Skipped++
			skipped = append(skipped, Skip{Package: ev.Package, Test: ev.Test, Reason: reason(buf[k])})
			delete(buf, k)
		case ev.Action == "pass":
			n.Passed++
			delete(buf, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "testsummary: reading go test output:", err)
	}
	return skipped, n
}

// reason is what a skipped test logged: its output without the === and
// --- SKIP lines and the file:line prefixes.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], ".go:") {
			t = t[i+2:]
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

// PrintSkipped lists the skipped tests, by package and name.
func PrintSkipped(w io.Writer, skipped []Skip) {
	if len(skipped) == 0 {
		return
	}
	sort.Slice(skipped, func(i, j int) bool {
		if skipped[i].Package != skipped[j].Package {
			return skipped[i].Package < skipped[j].Package
		}
		return skipped[i].Test < skipped[j].Test
	})
	n := "tests"
	if len(skipped) == 1 {
		n = "test"
	}
	fmt.Fprintf(w, "\n%d %s skipped:\n", len(skipped), n)
	for _, s := range skipped {
		fmt.Fprintf(w, "SKIP %s %s: %s\n", s.Package, s.Test, s.Reason)
	}
}

// PrintCounts ends the output with one plain closing line, as test runners
// of every language print it: "tests: N passed, N failed, N skipped".
func PrintCounts(w io.Writer, n Counts) {
	fmt.Fprintf(w, "\ntests: %d passed, %d failed, %d skipped\n", n.Passed, n.Failed, n.Skipped)
}
