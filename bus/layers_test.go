package bus_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayersAreKept checks the module's layer rules (issue 27): a package
// may not import (or, for a rule that says so, reach through others) the
// packages a rule forbids it. It reads the build's import graph with go
// list, test files left out.
func TestLayersAreKept(t *testing.T) {
	const module = "github.com/exocortex/exocortex/"
	rules := []struct {
		name      string
		pkgs      string   // a go list pattern, relative to the module root
		forbidden []string // import path prefixes below the module
		reach     bool     // the packages they depend on are held to the rule too
		except    []string // packages of pkgs the rule leaves out (test support), relative to the module root
		allowed   []string // imports a forbidden prefix covers that the rule allows, relative to the module root
		skip      string   // why the rule is not enforced yet
	}{
		{name: "the bus knows nothing of the application", pkgs: "./bus/...",
			forbidden: []string{"workers/", "internal/", "gateway"}, reach: true},
		{name: "eval reads notes and chunks through domain packages, not stages", pkgs: "./eval/...",
			forbidden: []string{"workers/"}, reach: true},
		{name: "the gateway reaches the system through the client and the bus", pkgs: "./gateway/...",
			forbidden: []string{"store", "workers/", "internal/"},
			// gatewaytest runs a whole system for the doors' tests; only
			// tests import it.
			except: []string{"gateway/gatewaytest"}},
		{name: "the client reaches the system through the bus, not the wiring or the data directory", pkgs: "./client",
			forbidden: []string{"internal/", "store", "vectors", "models"},
			// The client's own language-model providers answer here when
			// a running system's are others (Options.Providers).
			allowed: []string{"models/llm"}},
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to read the import graph with: %v", err)
	}
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			if rule.skip != "" {
				t.Skip(rule.skip)
			}
			cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", rule.pkgs)
			cmd.Dir = ".." // the module root
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list %s: %v (is the module building?)", rule.pkgs, err)
			}
			under := module + strings.TrimSuffix(strings.TrimPrefix(rule.pkgs, "./"), "/...")
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				pkg, imports, _ := strings.Cut(line, ": ")
				own := pkg == under || strings.HasPrefix(pkg, under+"/")
				if slices.Contains(rule.except, strings.TrimPrefix(pkg, module)) {
					continue
				}
				if !own && !rule.reach {
					continue
				}
				for _, imp := range strings.Fields(imports) {
					rel, ok := strings.CutPrefix(imp, module)
					if !ok || slices.Contains(rule.allowed, rel) {
						continue
					}
					for _, f := range rule.forbidden {
						if rel == strings.TrimSuffix(f, "/") || strings.HasPrefix(rel, strings.TrimSuffix(f, "/")+"/") {
							where := pkg
							if !own {
								where = pkg + " (which " + rule.pkgs + " depends on)"
							}
							t.Errorf("%s imports %s: %s may not reach %s", where, imp, rule.pkgs, f)
						}
					}
				}
			}
		})
	}
}
