package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exocortex/exocortex/metrics"
)

// declared lists the names of every metric the package declares, from
// the collectors' descriptors.
func declared(t *testing.T) map[string]bool {
	t.Helper()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for _, c := range metrics.Collectors() {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fq.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("descriptor without a name: %s", d)
			}
			names[m[1]] = true
		}
	}
	return names
}

func TestEveryMetricTheDashboardQueriesIsDeclared(t *testing.T) {
	raw, err := os.ReadFile("../ops/grafana/exocortex.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("ops/grafana/exocortex.json: %v", err)
	}
	names := declared(t)
	ident := regexp.MustCompile(`\bexocortex_[a-z0-9_]+`)
	used := map[string]bool{}
	queries := 0
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			found := ident.FindAllString(tg.Expr, -1)
			if len(found) == 0 {
				t.Errorf("panel %q: query %q names no exocortex metric", p.Title, tg.Expr)
			}
			for _, n := range found {
				base := n
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(n, suf); ok && names[b] {
						base = b
					}
				}
				if !names[base] {
					t.Errorf("panel %q queries %s, which the metrics package does not declare", p.Title, n)
				}
				used[base] = true
			}
		}
	}
	// And the other way round: every declared metric is on the dashboard.
	var missing []string
	for n := range names {
		if !used[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("metrics no dashboard panel shows: %v", missing)
	}
	if queries < 10 {
		t.Errorf("the dashboard has %d queries", queries)
	}
}

func TestThePrometheusConfigScrapesTheGatewaysMetrics(t *testing.T) {
	raw, err := os.ReadFile("../ops/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"metrics_path: /metrics", `"127.0.0.1:7600"`, "job_name: exocortex"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("ops/prometheus.yml lacks %q", want)
		}
	}
}
