package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// countingBackend answers at once and counts what reached it.
type countingBackend struct{ search, ask, block atomic.Int64 }

func (b *countingBackend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	b.search.Add(1)
	return &gateway.SearchResult{Mode: "lexical", Results: []gateway.SearchHit{{Rank: 1, Title: "Crows", BlockID: "b-1", Snippet: "crows use **tools**"}}}, nil
}

func (b *countingBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	b.ask.Add(1)
	onToken(&schemas.AnswerToken{QueryID: q.QueryID, Seq: 1, Text: "Crows use tools."})
	return &schemas.AnswerDone{QueryID: q.QueryID, Question: q.Question, Answer: "Crows use tools.", Mode: schemas.AnswerSearchOnly}, nil
}

func (b *countingBackend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	return nil, fmt.Errorf("no research in this test")
}

func (b *countingBackend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	b.block.Add(1)
	return &gateway.Block{ID: id, Title: "Crows", Text: "The user's private note about crows."}, nil
}

// probe is what a page runs against the gateway at G: the three POSTs
// (ingest the folder vault, ask, search) as a page on another origin can
// send them without a preflight (mode no-cors, text/plain) or, json, as
// the gateway's own page sends them; then it tries to read the status and
// a block. It returns what the page could see of each.
const probe = `async (G, vault, block, json) => {
  const out = {};
  const posts = [["ingest", "/v1/ingest", {paths: [vault]}], ["ask", "/v1/ask", {question: "What do crows use?"}], ["search", "/v1/search", {query: "crows"}]];
  for (const [name, path, body] of posts) {
    try {
      const r = await fetch(G + path, json
        ? {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)}
        : {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: JSON.stringify(body)});
      out[name] = r.type === "opaque" ? "opaque" : r.status + " " + (await r.text()).slice(0, 300);
    } catch (e) { out[name] = "blocked: " + e.message; }
  }
  for (const [name, path] of [["status", "/v1/status"], ["block", "/v1/blocks/" + encodeURIComponent(block)]]) {
    try {
      const r = await fetch(G + path);
      out[name] = r.status + " " + (await r.text()).slice(0, 300);
    } catch (e) { out[name] = "blocked: " + e.message; }
  }
  return out;
}`

// A page on another origin, in a real Chromium, cannot ingest, ask,
// search or read; a page reached through a foreign name (DNS rebinding,
// simulated with Chromium's host resolver rules) gets nothing; the
// gateway's own page still does all of it.
func TestAPageOnAnotherOriginCannotIngestAskOrReadInChromium(t *testing.T) {
	browser, err := findChromium()
	if err != nil && os.Getenv("EXOCORTEX_CHROMIUM") != "" {
		t.Fatalf("the browser EXOCORTEX_CHROMIUM names: %v", err)
	}
	if err != nil {
		t.Skipf("no Chromium for the cross-origin browser test: %v (run `task setup` as root to install Debian's chromium, or set EXOCORTEX_CHROMIUM)", err)
	}
	b := stagetest.New(t)
	gatewaytest.AnswerIngests(t, b)
	be := &countingBackend{}
	srv, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0",
		Mounts: map[string]http.Handler{"/": web.Handler()}, Public: []string{"/", "/index.html", "/static/"},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}, be,
		gateway.Deps{Bus: b, Status: func(context.Context) (any, error) { return map[string]any{"running": true, "documents": 42}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv.Handler()) // http://127.0.0.1:P1
	defer gw.Close()
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>attacker</title><p>a page on another origin</p>")
	}))
	defer attacker.Close()
	gwURL, _ := url.Parse(gw.URL)
	attackerURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1) // another host and port: another origin

	ingested := func() uint64 {
		t.Helper()
		ctx := context.Background()
		name, err := b.JS.StreamNameBySubject(ctx, schemas.SubjectDocChanged)
		if err != nil {
			t.Fatal(err)
		}
		st, err := b.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq // not Msgs: the stream keeps nothing without consumers
	}
	newVault := func(name string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte("# "+name+"\n\nA note the page chose.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true),
		// attacker.test is the attacker's name, rebound to this machine.
		chromedp.Flag("host-resolver-rules", "MAP attacker.test 127.0.0.1"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	run := func(pageURL, gatewayURL, vault string, asJSON bool) map[string]string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
			t.Fatalf("open %s: %v", pageURL, err)
		}
		args, _ := json.Marshal([]any{gatewayURL, vault, "20261121100831-para001", asJSON})
		out, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](
			"("+probe+")(..."+string(args)+")", chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("the probe on %s: %v", pageURL, err)
		}
		t.Logf("what %s saw: %q", pageURL, out)
		return out
	}
	touched := func(what string) {
		t.Helper()
		if n := be.search.Load() + be.ask.Load() + be.block.Load(); n != 0 {
			t.Errorf("%s: %d calls reached the backend (search %d, ask %d, block %d), want none",
				what, n, be.search.Load(), be.ask.Load(), be.block.Load())
		}
		if n := ingested(); n != 0 {
			t.Errorf("%s: %d documents were ingested, want none", what, n)
		}
	}

	// A page on another origin: the simple POSTs go out, but the gateway
	// refuses them; the reads are refused, and the browser shows nothing.
	seen := run(attackerURL+"/", gw.URL, newVault("crossorigin"), false)
	touched("a page on another origin")
	for _, name := range []string{"status", "block"} {
		if !strings.HasPrefix(seen[name], "blocked:") {
			t.Errorf("a page on another origin read %s: %q", name, seen[name])
		}
	}

	// DNS rebinding: the attacker's name now points at the gateway, so the
	// browser takes the gateway for the attacker's own origin. The gateway
	// answers that name with nothing but its refusal.
	rebound := "http://attacker.test:" + gwURL.Port()
	if err := chromedp.Do(ctx, chromedp.Navigate(rebound+"/")); err != nil {
		t.Fatalf("open %s: %v", rebound, err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text("body"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"forbidden"`) || !strings.Contains(body, gateway.EnvHosts) {
		t.Errorf("the page under the rebound name shows %q, want the gateway's refusal naming %s", body, gateway.EnvHosts)
	}
	seen = run(rebound+"/", rebound, newVault("rebound"), true)
	for name, got := range seen {
		if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "forbidden") {
			t.Errorf("under the rebound name, %s saw %q, want only 403 forbidden", name, got)
		}
	}
	touched("a page under a rebound name")

	// The gateway's own page, same origin, does all of it.
	ownVault := newVault("own")
	seen = run(gw.URL+"/", "", ownVault, true)
	for name, want := range map[string]string{"ingest": "202 ", "ask": "200 ", "search": "200 ", "status": "200 ", "block": "200 "} {
		if !strings.HasPrefix(seen[name], want) {
			t.Errorf("the gateway's own page: %s saw %q, want %s", name, seen[name], want)
		}
	}
	if !strings.Contains(seen["block"], "private note") || !strings.Contains(seen["status"], `"documents":42`) || !strings.Contains(seen["ask"], "event: done") {
		t.Errorf("the gateway's own page read %q", seen)
	}
	if be.search.Load() != 1 || be.ask.Load() != 1 || be.block.Load() != 1 || ingested() != 1 {
		t.Errorf("the own page's calls: search %d, ask %d, block %d, ingested %d; want 1 each",
			be.search.Load(), be.ask.Load(), be.block.Load(), ingested())
	}
}
