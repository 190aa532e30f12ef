package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
)

// scrape GETs /metrics from metrics.Handler and parses it with the
// Prometheus text parser.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(metrics.Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape /metrics: status %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics as Prometheus text: %v", err)
	}
	return fams
}

// value is a counter's or gauge's value, or a histogram's sample count, of
// the series of name whose labels include want (0 when there is none).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// histSum is a histogram's sum of observations over the matching series.
func histSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	if f := fams[name]; f != nil {
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) && m.Histogram != nil {
				total += m.Histogram.GetSampleSum()
			}
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(want)
}

func labelValues(fams map[string]*dto.MetricFamily, name, label string) []string {
	var out []string
	if f := fams[name]; f != nil {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out = append(out, lp.GetValue())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestMetricsMoveWhenNotesAreIndexedAndAQuestionIsAnswered(t *testing.T) {
	ctx := context.Background()
	down, up := llmtest.New(t), llmtest.New(t)
	down.Always(llmtest.Fail(503))
	cfg := &llm.Config{Providers: []llm.Provider{
		{Name: "down", BaseURL: down.URL(), Models: map[string]string{llm.RoleFast: "m"}, Free: true},
		{Name: "up", BaseURL: up.URL(), Models: map[string]string{llm.RoleFast: "m"}},
	}}
	sys, err := system.Start(ctx, system.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg,
		LLMOptions: llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		Log:        zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()

	before := scrape(t)

	// A malformed event is dead-lettered by the chunk stage.
	bad := nats.NewMsg(schemas.SubjectDocChanged)
	bad.Data = []byte(`{"type":"kb.doc.changed.v1","doc_id":`)
	if _, err := sys.Bus.JS.PublishMsg(ctx, bad); err != nil {
		t.Fatal(err)
	}
	ingestNotes(ctx, t, sys, map[string]string{
		"birds.md":  "# Birds\n\nRavens and crows use tools to get food.\n",
		"garden.md": "# Garden\n\nTomatoes need full sun and deep watering.\n",
	})

	up.SetAnswer("Crows «use tools to get food» [1].")
	done, _, err := client.New(sys.Bus, client.Options{AskTimeout: 30 * time.Second}).Ask(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "m1", Question: "What do crows use?"}}, client.AskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if done.Mode != schemas.AnswerLLM {
		t.Fatalf("answer mode %s (%v), want llm", done.Mode, done.Reasons)
	}
	// The answer stage settles its message after the follow-up questions,
	// which come after the answer.
	var after map[string]*dto.MetricFamily
	answerStage := map[string]string{"stage": "answer"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after = scrape(t)
		if value(after, "exocortex_stage_messages_handled_total", answerStage) > value(before, "exocortex_stage_messages_handled_total", answerStage) ||
			time.Now().After(deadline) {
			break
		}
	}

	moved := func(name string, labels map[string]string) float64 {
		t.Helper()
		d := value(after, name, labels) - value(before, name, labels)
		if d <= 0 {
			t.Errorf("%s %v did not move (before %v, after %v)", name, labels, value(before, name, labels), value(after, name, labels))
		}
		return d
	}
	for _, st := range []string{"chunk", "index", "retrieve", "rerank", "answer"} {
		moved("exocortex_stage_messages_handled_total", map[string]string{"stage": st})
		moved("exocortex_stage_handler_duration_seconds", map[string]string{"stage": st})
	}
	moved("exocortex_stage_messages_failed_total", map[string]string{"stage": "chunk"})
	if d := moved("exocortex_stage_messages_dead_lettered_total", map[string]string{"stage": "chunk"}); d != 1 {
		t.Errorf("chunk dead-lettered %v messages, want the one malformed event", d)
	}
	if d := value(after, "exocortex_stage_messages_failed_total", map[string]string{"stage": "index"}) -
		value(before, "exocortex_stage_messages_failed_total", map[string]string{"stage": "index"}); d != 0 {
		t.Errorf("index failed %v messages, want none", d)
	}
	if d := moved("exocortex_answers_total", map[string]string{"mode": "llm"}); d != 1 {
		t.Errorf("llm answers moved by %v, want 1", d)
	}
	moved("exocortex_llm_requests_total", map[string]string{"provider": "up"})
	moved("exocortex_llm_requests_total", map[string]string{"provider": "down"})
	moved("exocortex_llm_errors_total", map[string]string{"provider": "down"})
	if d := value(after, "exocortex_llm_errors_total", map[string]string{"provider": "up"}) -
		value(before, "exocortex_llm_errors_total", map[string]string{"provider": "up"}); d != 0 {
		t.Errorf("the answering provider counted %v errors, want none", d)
	}
	moved("exocortex_llm_request_duration_seconds", map[string]string{"provider": "up"})
	for _, step := range []string{"lexical", "fuse", "llm", "first_token", "total"} {
		moved("exocortex_query_step_duration_seconds", map[string]string{"step": step})
	}
	step := func(name string) float64 {
		m := map[string]string{"step": name}
		return histSum(after, "exocortex_query_step_duration_seconds", m) - histSum(before, "exocortex_query_step_duration_seconds", m)
	}
	if ft, total, lex := step("first_token"), step("total"), step("lexical"); !(ft > 0 && ft <= total && lex < total) {
		t.Errorf("query latency: first token %.4fs, lexical %.4fs, total %.4fs; want 0 < first token <= total, lexical < total", ft, lex, total)
	}
	// The notes were written after the process started: their lag from
	// change to index is observed.
	moved("exocortex_source_index_lag_seconds", map[string]string{"source": schemas.SourceMarkdown})

	// Gauges: every stage's consumer, read at scrape time; the breakers.
	if got, want := labelValues(after, "exocortex_stage_pending_messages", "stage"), sortedStages(); !equal(got, want) {
		t.Errorf("pending gauges for stages %v, want %v", got, want)
	}
	if got := labelValues(after, "exocortex_stage_ack_pending_messages", "stage"); len(got) != len(sortedStages()) {
		t.Errorf("ack-pending gauges for stages %v", got)
	}
	if v := value(after, "exocortex_stage_pending_messages", map[string]string{"stage": "index"}); v != 0 {
		t.Errorf("index pending %v after the pipeline went idle, want 0", v)
	}
	if v := value(after, "exocortex_llm_breaker_state", map[string]string{"provider": "down", "state": "open"}); v != 1 {
		t.Errorf("the failing provider's breaker_state{state=open} = %v, want 1", v)
	}
	if v := value(after, "exocortex_llm_breaker_state", map[string]string{"provider": "up", "state": "closed"}); v != 1 {
		t.Errorf("the answering provider's breaker_state{state=closed} = %v, want 1", v)
	}
	if after["go_goroutines"] == nil || after["process_cpu_seconds_total"] == nil && after["process_start_time_seconds"] == nil {
		t.Error("the Go runtime and process collectors are missing")
	}
}

func sortedStages() []string {
	s := append([]string(nil), system.StageNames()...)
	sort.Strings(s)
	return s
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ingestNotes writes notes (file name to text) into a folder, ingests it
// through the running system and waits until every stage is idle.
func ingestNotes(ctx context.Context, t *testing.T, sys *system.System, notes map[string]string) {
	t.Helper()
	vault := t.TempDir()
	for name, text := range notes {
		if err := os.WriteFile(filepath.Join(vault, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := sys.Bus.KV(ctx, stage.BucketSources)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := files.Sync(ctx, []string{vault}, kv, func(ctx context.Context, ev *schemas.DocChanged) error {
		_, err := sys.Bus.Publish(ctx, ev, "metrics-test")
		return err
	}, files.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := system.WaitIdle(wctx, sys.Bus, system.StageSpecs(), 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
}
