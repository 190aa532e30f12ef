package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm/llmtest"
)

// promtool is Prometheus' own checker (Debian's prometheus package), or
// $PROMTOOL; the tests that need it are skipped without it.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (apt-get install prometheus, or set PROMTOOL): the scrape and the dashboard's queries cannot be checked by Prometheus")
	}
	return p
}

// TestTheMetricsAreThereAtZeroFromTheStartAndEveryPanelShowsZero scrapes
// the gateway of a fresh `up` before any question: every stage's handled,
// failed, retried and dead-lettered counters, every provider's request,
// error and cancellation counters, every answer mode and the
// cancellations are there at 0; promtool finds the exposition clean; and
// every dashboard query, evaluated by promtool over those series, gives 0
// rather than no data.
func TestTheMetricsAreThereAtZeroFromTheStartAndEveryPanelShowsZero(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	data := t.TempDir()
	srv := llmtest.New(t)
	_, upErr := startUp(t, data, []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="},
		"--no-models", "--http", "127.0.0.1:0")
	addr := waitHTTP(t, upErr)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}

	zero := func(name string, labels map[string]string) {
		t.Helper()
		for _, m := range fams[name].GetMetric() {
			if matches(m, labels) {
				if v := m.GetCounter().GetValue(); v != 0 {
					t.Errorf("%s%v = %v at the start, want 0", name, labels, v)
				}
				return
			}
		}
		t.Errorf("%s%v is not exported at the start", name, labels)
	}
	for _, st := range system.StageNames() {
		for _, n := range []string{"handled", "failed", "retried", "dead_lettered"} {
			zero("exocortex_stage_messages_"+n+"_total", map[string]string{"stage": st})
		}
	}
	for _, mode := range []string{"llm", "cache", "extractive", "search_only"} {
		zero("exocortex_answers_total", map[string]string{"mode": mode})
	}
	zero("exocortex_answers_cancelled_total", nil)
	for _, n := range []string{"requests", "errors", "requests_cancelled"} {
		name := "exocortex_llm_" + n + "_total"
		if len(fams[name].GetMetric()) == 0 {
			t.Errorf("%s has no series for the configured provider", name)
		}
		for _, m := range fams[name].GetMetric() {
			zero(name, labelsOf(m))
		}
	}

	// promtool lints the exposition as Prometheus reads it.
	lint := exec.Command(tool, "check", "metrics")
	lint.Stdin = strings.NewReader(string(raw))
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// Every dashboard query over these series, as they stand for 20
	// minutes: min(query) is 0, so the panel draws 0 and not "No data".
	dash := readDashboard(t)
	var series []string
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, s := range seriesOf(name, f.GetType(), m) {
				series = append(series, fmt.Sprintf("      - series: '%s'\n        values: '%s'\n", s.name, s.values))
			}
		}
	}
	sort.Strings(series)
	var tests strings.Builder
	n := 0
	for _, p := range dash {
		for _, expr := range p.exprs {
			if !strings.Contains(expr, "vector(0)") {
				continue // a state or a time since an event: no data is the truth until there is one
			}
			n++
			q := strings.ReplaceAll(expr, "$__rate_interval", "5m")
			fmt.Fprintf(&tests, "      - expr: 'min(%s)'\n        eval_time: 20m\n        exp_samples:\n          - labels: '{}'\n            value: 0\n",
				strings.ReplaceAll(q, "'", "''"))
		}
	}
	if n < 20 {
		t.Fatalf("only %d dashboard queries fall back to 0", n)
	}
	file := filepath.Join(t.TempDir(), "dashboard_test.yml")
	body := "evaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n" + strings.Join(series, "") + "    promql_expr_test:\n" + tests.String()
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "test", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules (the dashboard's queries at the start): %v\n%s", err, out)
	}
}

type panelQueries struct {
	title string
	exprs []string
}

func readDashboard(t *testing.T) []panelQueries {
	t.Helper()
	raw, err := os.ReadFile("../../ops/grafana/exocortex.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []panelQueries
	for _, p := range d.Panels {
		pq := panelQueries{title: p.Title}
		for _, tg := range p.Targets {
			pq.exprs = append(pq.exprs, tg.Expr)
		}
		out = append(out, pq)
	}
	return out
}

type inputSeries struct{ name, values string }

// seriesOf is a scraped metric as promtool's input series, its value held
// for 20 minutes (a histogram as its buckets, sum and count).
func seriesOf(name string, typ dto.MetricType, m *dto.Metric) []inputSeries {
	hold := func(v float64) string { return fmt.Sprintf("%gx20", v) }
	sel := func(name string, extra ...string) string {
		var ls []string
		for _, lp := range m.GetLabel() {
			ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
		}
		ls = append(ls, extra...)
		return name + "{" + strings.Join(ls, ",") + "}"
	}
	switch typ {
	case dto.MetricType_COUNTER:
		return []inputSeries{{sel(name), hold(m.GetCounter().GetValue())}}
	case dto.MetricType_GAUGE:
		return []inputSeries{{sel(name), hold(m.GetGauge().GetValue())}}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		out := []inputSeries{{sel(name + "_sum"), hold(h.GetSampleSum())}, {sel(name + "_count"), hold(float64(h.GetSampleCount()))},
			{sel(name+"_bucket", `le="+Inf"`), hold(float64(h.GetSampleCount()))}}
		for _, b := range h.GetBucket() {
			out = append(out, inputSeries{sel(name+"_bucket", fmt.Sprintf("le=%q", fmt.Sprint(b.GetUpperBound()))), hold(float64(b.GetCumulativeCount()))})
		}
		return out
	}
	return nil // summaries and untyped: no dashboard reads them
}

func matches(m *dto.Metric, want map[string]string) bool {
	got := labelsOf(m)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}
