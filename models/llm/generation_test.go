package llm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/rs/zerolog"
)

func TestRouterSendsEachRolesBudgetTemperatureAndStop(t *testing.T) {
	srv := llmtest.New(t)
	p := prov("a", srv, true)
	p.Models = map[string]string{RoleFast: "f", RoleStrategic: "s", RoleLongContext: "l"}
	hot := 0.9
	cfg := Config{Providers: []Provider{p}, Roles: map[string]RoleSettings{
		RoleLongContext: {MaxTokens: 3000, Temperature: &hot, Stop: []string{"END"}},
	}}
	r, err := NewRouter(cfg, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{RoleFast, RoleStrategic, RoleLongContext} {
		if _, err := r.Stream(context.Background(), Request{Role: role}, nil); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
	}
	// A request's own settings win over its role's.
	cold := 0.0
	if _, err := r.Stream(context.Background(), Request{Role: RoleFast, MaxTokens: 7, Temperature: &cold, Stop: []string{"X"}}, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	want := []struct {
		model string
		max   int
		temp  float64
		stop  []string
	}{
		{"f", 1024, 0.2, []string{"\nQuestion:", "<context"}},
		{"s", 256, 0.3, nil},
		{"l", 3000, 0.9, []string{"END"}},
		{"f", 7, 0, []string{"X"}},
	}
	for i, w := range want {
		b := reqs[i].Body
		if b.Model != w.model || b.MaxTokens != w.max || b.Temperature == nil || *b.Temperature != w.temp || !slices.Equal(b.Stop, w.stop) {
			t.Errorf("request %d sent %s", i, reqs[i].Raw)
		}
		if b.ResponseFormat != nil || strings.Contains(reqs[i].Raw, "response_format") {
			t.Errorf("request %d asked for response_format without a schema: %s", i, reqs[i].Raw)
		}
	}
}

var answerSchema = &JSONSchema{Name: "answer", Strict: true,
	Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)}

func structuredProv(name string, srv *llmtest.Server) Provider {
	p := prov(name, srv, true)
	p.StructuredOutput = "json_schema"
	return p
}

func askJSON(t *testing.T, r *Router) Result {
	t.Helper()
	res, err := r.Stream(context.Background(), Request{Role: RoleFast, JSONSchema: answerSchema}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRouterSendsResponseFormatOnlyToProvidersThatTakeIt(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer(`{"answer": "yes"}`)
	r, _ := NewRouter(Config{Providers: []Provider{structuredProv("a", srv)}}, fastOpts())
	if !r.Structured(RoleFast) {
		t.Fatal("a json_schema provider is not structured")
	}
	res := askJSON(t, r)
	rf := srv.Requests()[0].Body.ResponseFormat
	if !res.Structured || rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Name != "answer" ||
		!rf.JSONSchema.Strict || !strings.Contains(string(rf.JSONSchema.Schema), `"required":["answer"]`) {
		t.Fatalf("structured %v, sent %s", res.Structured, srv.Requests()[0].Raw)
	}
	// An answer in JSON keeps the provider structured.
	askJSON(t, r)
	if !r.Structured(RoleFast) || srv.Requests()[1].Body.ResponseFormat == nil {
		t.Fatal("a provider that answered JSON lost its structured output")
	}

	plain := llmtest.New(t)
	r2, _ := NewRouter(Config{Providers: []Provider{prov("b", plain, true)}}, fastOpts())
	if r2.Structured(RoleFast) {
		t.Fatal("a provider without structured_output is structured")
	}
	if res := askJSON(t, r2); res.Structured || plain.Requests()[0].Body.ResponseFormat != nil {
		t.Fatalf("response_format sent to a provider without it: %s", plain.Requests()[0].Raw)
	}
}

func TestRouterRetriesWithoutResponseFormatWhenRejectedAndRemembers(t *testing.T) {
	srv := llmtest.New(t)
	srv.RejectResponseFormat(true)
	srv.SetAnswer("A prose answer.")
	var logs syncBuf
	opts := fastOpts()
	l := zerolog.New(&logs)
	opts.Logger = &l
	r, _ := NewRouter(Config{Providers: []Provider{structuredProv("a", srv)}}, opts)
	res := askJSON(t, r)
	reqs := srv.Requests()
	if res.Text != "A prose answer." || res.Structured || len(reqs) != 2 || reqs[0].Body.ResponseFormat == nil || reqs[1].Body.ResponseFormat != nil {
		t.Fatalf("res %+v, %d requests", res, len(reqs))
	}
	if len(res.Attempts) != 2 || !strings.Contains(res.Attempts[0].Err, "status 400") || res.Attempts[1].Err != "" {
		t.Fatalf("attempts %+v", res.Attempts)
	}
	if r.Structured(RoleFast) {
		t.Fatal("a provider that rejects response_format is still structured")
	}
	askJSON(t, r)
	if reqs := srv.Requests(); len(reqs) != 3 || reqs[2].Body.ResponseFormat != nil {
		t.Fatalf("response_format sent again: %d requests", len(reqs))
	}
	if h := r.Health()[0]; h.State != "closed" || h.ErrorScore != 0 {
		t.Fatalf("a 400 to response_format counted against the provider: %+v", h)
	}
	if n := strings.Count(logs.String(), "rejects response_format"); n != 1 {
		t.Fatalf("logged %d times: %s", n, logs.String())
	}
}

func TestRouterDetectsAProviderThatIgnoresResponseFormat(t *testing.T) {
	srv := llmtest.New(t) // the fake takes response_format and answers prose anyway
	srv.SetAnswer("Ravens use tools [1].")
	var logs syncBuf
	opts := fastOpts()
	l := zerolog.New(&logs)
	opts.Logger = &l
	r, _ := NewRouter(Config{Providers: []Provider{structuredProv("a", srv)}}, opts)
	res := askJSON(t, r)
	if !res.Structured || res.Text != "Ravens use tools [1]." {
		t.Fatalf("res %+v", res)
	}
	if r.Structured(RoleFast) {
		t.Fatal("a provider that answered prose to response_format is still structured")
	}
	res = askJSON(t, r)
	if res.Structured || srv.Requests()[1].Body.ResponseFormat != nil {
		t.Fatalf("response_format sent again to a provider that ignores it: %s", srv.Requests()[1].Raw)
	}
	if n := strings.Count(logs.String(), "ignores response_format"); n != 1 {
		t.Fatalf("logged %d times: %s", n, logs.String())
	}
}

func TestClientCutsAStreamThatRunsPastItsBudget(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer("and on and on ")
	srv.Always(llmtest.Forever(0))
	var got int
	start := time.Now()
	comp, err := newTestClient(srv).Chat(context.Background(), ChatRequest{Model: "m", MaxTokens: 50},
		func(string) error { got++; return nil })
	if err != nil {
		t.Fatalf("a stream cut at its budget is an error: %v", err)
	}
	if comp.FinishReason != FinishLength || !comp.Cut || comp.Tokens != got || got < 50 || got > budgetLimit(50)+1 {
		t.Fatalf("comp finish %q cut %v tokens %d (delivered %d)", comp.FinishReason, comp.Cut, comp.Tokens, got)
	}
	if !strings.HasPrefix(comp.Text, "and on and on and on") {
		t.Fatalf("text %q", comp.Text)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cut after %s", d)
	}
	if srv.Requests()[0].Body.MaxTokens != 50 {
		t.Fatalf("max_tokens not sent: %s", srv.Requests()[0].Raw)
	}

	// Through the router, with the role's default budget: cut, not retried.
	r, _ := NewRouter(Config{Providers: []Provider{prov("a", srv, true)}}, RouterOptions{})
	res, err := r.Stream(context.Background(), Request{Role: RoleFast}, nil)
	if err != nil || !res.Cut || res.FinishReason != FinishLength || len(res.Attempts) != 1 {
		t.Fatalf("res cut %v finish %q attempts %+v err %v", res.Cut, res.FinishReason, res.Attempts, err)
	}
	if n := res.Attempts[0].Tokens; n < 1024 || n > budgetLimit(1024)+1 {
		t.Fatalf("cut after %d tokens, want about 1024", n)
	}
}

func TestClientCountsLargePiecesAsFourCharactersATokenForTheBudget(t *testing.T) {
	srv := llmtest.New(t)
	srv.SetAnswer(strings.Repeat("x", 400)) // one piece of ~100 tokens
	srv.Always(llmtest.Forever(0))
	comp, err := newTestClient(srv).Chat(context.Background(), ChatRequest{Model: "m", MaxTokens: 100}, nil)
	if err != nil || !comp.Cut || comp.Tokens > 3 {
		t.Fatalf("comp tokens %d cut %v err %v", comp.Tokens, comp.Cut, err)
	}
}

func TestLoadConfigReadsRolesAndReportsTheirProblems(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"providers": [{"name": "a", "base_url": "http://localhost:8080/v1", "models": {"fast": "m"},
		"structured_output": "json_schema"}], "roles": {"fast": {"max_tokens": 300, "stop": ["###"]}, "strategic": {"temperature": 0}}}`), 0o600)
	cfg, err := LoadConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	fast, strat, long := cfg.RoleSettings(RoleFast), cfg.RoleSettings(RoleStrategic), cfg.RoleSettings(RoleLongContext)
	if fast.MaxTokens != 300 || *fast.Temperature != 0.2 || !slices.Equal(fast.Stop, []string{"###"}) ||
		strat.MaxTokens != 256 || *strat.Temperature != 0 || long.MaxTokens != 2048 || cfg.Providers[0].StructuredOutput != "json_schema" {
		t.Fatalf("fast %+v strategic %+v long %+v", fast, strat, long)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"providers": [{"name": "a", "base_url": "http://h", "models": {"fast": "m"}, "structured_output": "xml"}],
		"roles": {"quick": {}, "fast": {"max_tokens": -1, "temperature": 3, "stop": ["a","b","c","d","e"]}}}`), 0o600)
	_, err = LoadConfig(bad)
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{`structured_output "xml"`, `unknown role "quick"`, "negative max_tokens", "temperature 3", "5 stop strings"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
