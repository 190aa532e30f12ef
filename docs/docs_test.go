package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository, one folder up from this package.
const root = ".."

// theDocs are the files the link check starts from: the README and every
// document in docs/. What they link is checked in turn.
func theDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		start = append(start, rel)
	}
	return start
}

func TestEveryRelativeLinkAndAnchorInTheDocsResolves(t *testing.T) {
	start := theDocs(t)
	if len(start) < 11 {
		t.Fatalf("found %d documents (%v), want the README and the ten in docs/", len(start), start)
	}
	broken, err := checkLinks(root, start)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("broken link: %s", b)
	}
}

func TestTheLinkCheckFindsAMissingFileAndAMissingAnchor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n"+
		"[ok](docs/a.md#a-heading), [ok too](docs/a.md#a-heading-1), [here](#top), [dir](docs/),\n"+
		"[gone](docs/missing.md), [no such heading](docs/a.md#nowhere),\n"+
		"[a web page](https://example.com/x.md), `[in code](docs/missing-in-code.md)`\n\n"+
		"```\n[in a fence](docs/missing-in-fence.md)\n```\n")
	write("docs/a.md", "# A\n\n## A heading\n\n## A heading\n\n[back](../README.md#nope)\n")
	broken, err := checkLinks(dir, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.File+" "+b.Target)
	}
	want := []string{"README.md docs/missing.md", "README.md docs/a.md#nowhere", "docs/a.md ../README.md#nope"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("broken links: got %q, want %q", got, want)
	}
}

func TestAnchorsAreNamedAsGitHubNamesThem(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"Measuring answers: `eval --answers`", "measuring-answers-eval---answers"},
		{"Is my index complete? `exocortex check`", "is-my-index-complete-exocortex-check"},
		{"Where `../shared/eval` comes from", "where-sharedeval-comes-from"},
		{"A full disk, and stopping", "a-full-disk-and-stopping"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
		{"Поиск по заметкам", "поиск-по-заметкам"},
		{"snake_case stays", "snake_case-stays"},
	} {
		if got := githubAnchor(tc.title); got != tc.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", tc.title, got, tc.want)
		}
	}
}

func TestTheREADMEFitsOnAScreen(t *testing.T) {
	info, err := os.Stat(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > 15*1024 {
		t.Errorf("README.md is %d bytes, over 15 KiB: move detail into docs/ and link it", info.Size())
	}
}

// CI runs the README's test command (.ci/run); the README must keep saying
// which command that is.
func TestTheREADMEGivesTheCommandCIRuns(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "./task test"
	if !strings.Contains(string(readme), cmd+"    # set up and run the whole test suite") {
		t.Errorf("README.md no longer gives %q as the command that runs the tests", cmd)
	}
	if !strings.Contains(string(ci), "\n"+cmd+"\n") {
		t.Errorf(".ci/run no longer runs %q, the README's test command", cmd)
	}
}

// ./task bench:table writes the scale table between these markers.
func TestTheBenchmarksKeepTheScaleTableMarkers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"<!-- scale:begin -->", "<!-- scale:end -->"} {
		if !strings.Contains(string(raw), m) {
			t.Errorf("docs/benchmarks.md has no %s line: ./task bench:table could not write the scale table", m)
		}
	}
}
