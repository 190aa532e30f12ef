package docs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// The README's code map ("Where to change what") says, for each folder,
// what its packages may import. These tests hold the map to the code: a
// package that imports something its row does not allow fails, so the map
// stays true and the layers stay kept.

const module = "github.com/exocortex/exocortex/"

// mapRow is one row of the code map: the folders it covers and the
// module's folders their packages may import (nil with any: no rule).
type mapRow struct {
	folders []string
	imports []string
	any     bool
	line    int
}

// readCodeMap parses the code map's table from the README.
func readCodeMap(readme string) ([]mapRow, error) {
	f, err := os.Open(readme)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []mapRow
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Where to change what"
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) != 3 {
				return nil, fmt.Errorf("README.md:%d: a code map row has %d cells, want 3 (folder | job | may import)", n, len(cells))
			}
			row := mapRow{folders: siblings(codeSpans(cells[0])), line: n}
			allowed := strings.TrimSpace(cells[2])
			switch {
			case allowed == "anything":
				row.any = true
			case allowed == "nothing", allowed == "-":
			default:
				row.imports = codeSpans(allowed)
				if len(row.imports) == 0 {
					return nil, fmt.Errorf("README.md:%d: may import %q names no folder in code spans (or say anything, nothing, -)", n, allowed)
				}
			}
			rows = append(rows, row)
		}
	}
	return rows, sc.Err()
}

// codeSpans are the `...` parts of s, without a trailing "/" or "/...".
func codeSpans(s string) []string {
	var out []string
	parts := strings.Split(s, "`")
	for i := 1; i < len(parts); i += 2 {
		p := strings.TrimSuffix(strings.TrimSuffix(parts[i], "/..."), "/")
		out = append(out, p)
	}
	return out
}

// siblings resolves "workers/chunk, index, embed" to full folders: a name
// without a slash after the first is the first's sibling.
func siblings(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	parent := path.Dir(names[0])
	out := []string{names[0]}
	for _, n := range names[1:] {
		if !strings.Contains(n, "/") && parent != "." {
			n = parent + "/" + n
		}
		out = append(out, n)
	}
	return out
}

// under reports whether folder p is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// rowOf is the row covering a package folder: the most specific folder.
func rowOf(rows []mapRow, pkg string) (mapRow, string, bool) {
	var best mapRow
	bestDir, found := "", false
	for _, r := range rows {
		for _, f := range r.folders {
			if under(pkg, f) && len(f) > len(bestDir) {
				best, bestDir, found = r, f, true
			}
		}
	}
	return best, bestDir, found
}

type listedPackage struct {
	ImportPath string
	Imports    []string
}

// modulePackages lists the module's packages with their (non-test) imports.
func modulePackages(t *testing.T) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// mapViolations lists the imports the map does not allow, and the packages
// it does not cover.
func mapViolations(rows []mapRow, pkgs []listedPackage) []string {
	var bad []string
	for _, p := range pkgs {
		dir, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		row, own, ok := rowOf(rows, dir)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no row of the code map covers this folder", dir))
			continue
		}
		if row.any {
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || under(dep, own) {
				continue
			}
			if !slices.ContainsFunc(row.imports, func(a string) bool { return under(dep, a) }) {
				bad = append(bad, fmt.Sprintf("%s imports %s, which its row (README.md:%d) does not allow", dir, dep, row.line))
			}
		}
	}
	return bad
}

func TestTheCodeMapSaysWhatEachPackageMayImport(t *testing.T) {
	rows, err := readCodeMap(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 15 {
		t.Fatalf("the README's code map has %d rows, want every folder", len(rows))
	}
	for _, v := range mapViolations(rows, modulePackages(t)) {
		t.Error(v)
	}
}

func TestTheCodeMapCheckFindsAForbiddenImportAndAnUncoveredFolder(t *testing.T) {
	rows := []mapRow{
		{folders: []string{"bus"}, imports: []string{"schemas"}, line: 1},
		{folders: siblings([]string{"workers/chunk", "index"}), imports: []string{"bus", "chunking"}, line: 2},
		{folders: []string{"schemas"}, line: 3},
		{folders: []string{"cmd"}, any: true, line: 4},
	}
	pkgs := []listedPackage{
		{ImportPath: module + "bus", Imports: []string{"fmt", module + "schemas"}},
		{ImportPath: module + "bus/bustest", Imports: []string{module + "bus"}},
		{ImportPath: module + "workers/index", Imports: []string{module + "bus", module + "store"}},
		{ImportPath: module + "schemas", Imports: []string{"encoding/json"}},
		{ImportPath: module + "cmd/exocortex", Imports: []string{module + "store"}},
		{ImportPath: module + "lonely", Imports: nil},
	}
	got := mapViolations(rows, pkgs)
	want := []string{
		"workers/index imports store, which its row (README.md:2) does not allow",
		"lonely: no row of the code map covers this folder",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
