package llm

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/rs/zerolog"
)

const testKey = "sk-test-SECRET-4242"

func prov(name string, srv *llmtest.Server, free bool) Provider {
	return Provider{Name: name, BaseURL: srv.URL(), APIKeyEnv: "LLM_TEST_KEY", Models: map[string]string{RoleFast: name + "-model"},
		Free: free, Timeout: time.Second}
}

func fastOpts() RouterOptions {
	return RouterOptions{Retries: -1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, BreakerDelay: time.Minute}
}

func ask(t *testing.T, r *Router) (Result, error) {
	t.Helper()
	return r.Stream(context.Background(), Request{Role: RoleFast, Messages: []Message{{Role: "user", Content: "q"}}}, nil)
}

func TestRouterFallsOverAndOpensBreaker(t *testing.T) {
	t.Setenv("LLM_TEST_KEY", testKey)
	bad, good := llmtest.New(t), llmtest.New(t)
	bad.Always(llmtest.Fail(500))
	good.SetAnswer("fine answer")
	r, err := NewRouter(Config{Providers: []Provider{prov("bad", bad, true), prov("good", good, false)}}, fastOpts())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		res, err := ask(t, r)
		if err != nil || res.Text != "fine answer" || res.Provider != "good" || len(res.Attempts) != 2 {
			t.Fatalf("request %d: res %+v err %v", i, res, err)
		}
	}
	if h := r.Health(); h[0].State != "open" || h[0].ErrorScore < 2 || h[1].State != "closed" || h[1].LatencyEWMA == 0 {
		t.Fatalf("health %+v", h)
	}
	res, err := ask(t, r)
	if err != nil || res.Provider != "good" || len(bad.Requests()) != 3 {
		t.Fatalf("res %+v err %v, bad called %d times", res, err, len(bad.Requests()))
	}
}

func TestRouterPrefersFreeProviders(t *testing.T) {
	paid, free := llmtest.New(t), llmtest.New(t)
	r, _ := NewRouter(Config{Providers: []Provider{prov("paid", paid, false), prov("free", free, true)}}, fastOpts())
	if res, err := ask(t, r); err != nil || res.Provider != "free" {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestRouterSkipsRateLimitedAndModellessProviders(t *testing.T) {
	a, b, c := llmtest.New(t), llmtest.New(t), llmtest.New(t)
	pa := prov("a", a, true)
	pa.RateLimit = "1/1h"
	pc := prov("c", c, true)
	pc.Models = map[string]string{RoleStrategic: "big"}
	r, _ := NewRouter(Config{Providers: []Provider{pc, pa, prov("b", b, false)}}, fastOpts())
	if res, _ := ask(t, r); res.Provider != "a" {
		t.Fatalf("first from %s", res.Provider)
	}
	if res, _ := ask(t, r); res.Provider != "b" {
		t.Fatalf("second from %s", res.Provider)
	}
	if len(c.Requests()) != 0 || len(a.Requests()) != 1 {
		t.Fatal("skipped providers were called")
	}
	only, _ := NewRouter(Config{Providers: []Provider{pa}}, fastOpts())
	ask(t, only)
	_, err := ask(t, only)
	if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "1/1 requests per 1h0m0s") || !strings.Contains(err.Error(), "next slot") {
		t.Fatalf("err = %v", err)
	}
	if _, err := only.Stream(context.Background(), Request{Role: "nope"}, nil); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("err = %v", err)
	}
}

func TestRouterReportsEveryAttemptWhenAllFail(t *testing.T) {
	a, b := llmtest.New(t), llmtest.New(t)
	a.Always(llmtest.Fail(503))
	b.Always(llmtest.Unauthorized())
	opts := fastOpts()
	opts.Retries = 1
	r, _ := NewRouter(Config{Providers: []Provider{prov("a", a, true), prov("b", b, true)}}, opts)
	res, err := ask(t, r)
	if !errors.Is(err, ErrAllProvidersFailed) || !strings.Contains(err.Error(), "a: llm provider a: server error") || !strings.Contains(err.Error(), "LLM_TEST_KEY") {
		t.Fatalf("err = %v", err)
	}
	// a is retried once (503 is retryable), b is not (401 is not).
	if len(res.Attempts) != 3 || len(a.Requests()) != 2 || len(b.Requests()) != 1 {
		t.Fatalf("attempts %+v", res.Attempts)
	}
}

func TestRouterHonoursRetryAfter(t *testing.T) {
	a := llmtest.New(t)
	a.Script(llmtest.TooMany("1"))
	opts := fastOpts()
	opts.Retries = 1
	opts.BackoffMax = 2 * time.Second
	r, _ := NewRouter(Config{Providers: []Provider{prov("a", a, true)}}, opts)
	start := time.Now()
	res, err := ask(t, r)
	if err != nil || len(res.Attempts) != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %s, want >= 1s", d)
	}
}

func TestRouterCallsOnRestartWhenAStreamIsCut(t *testing.T) {
	a, b := llmtest.New(t), llmtest.New(t)
	a.SetAnswer("partial answer that breaks")
	a.Always(llmtest.CutAfter(2))
	b.SetAnswer("complete answer")
	var out strings.Builder
	var restarts []string
	opts := fastOpts()
	opts.OnRestart = func(p string) { restarts = append(restarts, p); out.Reset() }
	r, _ := NewRouter(Config{Providers: []Provider{prov("a", a, true), prov("b", b, false)}}, opts)
	res, err := r.Stream(context.Background(), Request{Role: RoleFast}, func(s string) error { out.WriteString(s); return nil })
	if err != nil || out.String() != "complete answer" || len(restarts) != 1 || restarts[0] != "a" || !res.Attempts[0].Restarted {
		t.Fatalf("out %q restarts %v res %+v err %v", out.String(), restarts, res, err)
	}

	// Without the hook nothing is retried once tokens were delivered.
	opts.OnRestart = nil
	r2, _ := NewRouter(Config{Providers: []Provider{prov("a", a, true), prov("b", b, false)}}, opts)
	_, err = ask(t, r2)
	if !errors.Is(err, ErrAllProvidersFailed) || !strings.Contains(err.Error(), "stream cut after 2 tokens") || len(b.Requests()) != 1 {
		t.Fatalf("err %v, b requests %d", err, len(b.Requests()))
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestRouterNeverLeaksTheKey(t *testing.T) {
	t.Setenv("LLM_TEST_KEY", testKey)
	a, b := llmtest.New(t), llmtest.New(t)
	a.Always(llmtest.Fail(500))
	b.Always(llmtest.Unauthorized())
	var logs syncBuf
	logger := zerolog.New(&logs)
	opts := fastOpts()
	opts.BreakerThreshold = 1
	r, _ := NewRouter(Config{Providers: []Provider{prov("a", a, true), prov("b", b, true)}}, opts)
	ctx := logger.WithContext(context.Background())
	res, err := r.Stream(ctx, Request{Role: RoleFast}, nil)
	if err == nil {
		t.Fatal("want error")
	}
	if got := b.Requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", got)
	}
	all := err.Error() + logs.String()
	for _, a := range res.Attempts {
		all += a.Err
	}
	if strings.Contains(all, testKey) {
		t.Fatal("key leaked")
	}
	if !strings.Contains(logs.String(), `"provider":"a"`) || !strings.Contains(logs.String(), `"status":500`) || !strings.Contains(logs.String(), `"to":"open"`) {
		t.Fatalf("logs lack fields: %s", logs.String())
	}
}

func TestRouterMasksPIIOnlyForRemoteProviders(t *testing.T) {
	local, remote := llmtest.New(t), llmtest.New(t)
	local.Always(llmtest.Fail(500))
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, to string) (net.Conn, error) {
		if to == "llm.example.com:80" {
			to = remote.Addr()
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}}}
	rp := prov("remote", remote, false)
	rp.BaseURL = "http://llm.example.com/v1"
	opts := fastOpts()
	opts.HTTP = hc
	r, _ := NewRouter(Config{MaskPII: true, Providers: []Provider{prov("local", local, true), rp}}, opts)
	text := "mail me at a.b@example.org or call +7 912 345-67-89"
	res, err := r.Stream(context.Background(), Request{Role: RoleFast, Messages: []Message{{Role: "user", Content: text}}}, nil)
	if err != nil || res.Provider != "remote" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if got := local.Requests()[0].Body.Messages[0].Content; got != text {
		t.Fatalf("local got %q", got)
	}
	if got := remote.Requests()[0].Body.Messages[0].Content; got != "mail me at [email] or call [phone]" {
		t.Fatalf("remote got %q", got)
	}
}
