package claimcheck_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer/claimcheck"
)

var (
	analyzerOnce sync.Once
	analyzer     *analysis.Analyzer
	analyzerErr  error
)

// fullAnalyzer is the project's analyzer in Full mode (Russian dictionary
// lemmas, English stems), loaded once.
func fullAnalyzer(tb testing.TB) *analysis.Analyzer {
	tb.Helper()
	analyzerOnce.Do(func() { analyzer, analyzerErr = analysis.New(analysis.Full) })
	if analyzerErr != nil {
		tb.Fatalf("analysis.New(Full): %v", analyzerErr)
	}
	return analyzer
}

// checkCase is a claim over an evidence block and the problems Check must
// find, each as Problem.String() gives it; none means the claim passes.
type checkCase struct {
	name     string
	claim    string
	evidence string
	cross    bool
	want     []string
}

func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	a := fullAnalyzer(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemStrings(claimcheck.Check(a, tc.claim, tc.evidence, claimcheck.Options{CrossLanguage: tc.cross}))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Check(%q,\n  over %q)\n got  %q\n want %q", tc.claim, tc.evidence, got, tc.want)
			}
		})
	}
}

func problemStrings(ps []claimcheck.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// missing builds the expected Problem string.
func missing(kind, item string) string {
	return claimcheck.Problem{Kind: kind, Item: item}.String()
}
