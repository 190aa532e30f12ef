package siyuan_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// syncLog is a log the test reads while the bridge writes it.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *syncLog) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// start runs src until the test ends.
func start(t *testing.T, src *siyuan.Source) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// eventually waits up to d for ok.
func eventually(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}

func edit(t *testing.T, k *siyuantest.Kernel, doc, id, text string) {
	t.Helper()
	must(t, k.EditDoc(doc, func(bs []siyuantest.Block) []siyuantest.Block {
		return append(bs, siyuantest.Block{ID: id, Type: "p", Content: text, Markdown: text})
	}))
}

func postEvent(t *testing.T, url, secret, origin, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(siyuan.PluginHeader, secret)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestWithoutWSTheBridgeSyncsAtStartAppliesPluginEventsAndPolls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{
		{"a proxy that refuses /ws with 403", http.StatusForbidden},
		{"a proxy that answers /ws with 502", http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := kernel(t)
			k.SetWSRefused(tc.status)
			var out sent
			var logged syncLog
			src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour,
				Poll: 700 * time.Millisecond, PluginSecret: "shh"}, bus.NewMemKV(), out.publish, zerolog.New(&logged))
			must(t, k.Flush())
			start(t, src)
			out.waitFor(t, 0, "the initial sync without /ws", func(evs []*schemas.DocChanged) bool { return len(evs) >= 4 })
			st := src.Status()
			if st.Connected || !st.Polling || !strings.Contains(st.Notice, "/ws refused (HTTP") || !strings.Contains(st.Notice, "plugin") {
				t.Errorf("status without /ws: %+v", st)
			}
			if !strings.Contains(logged.String(), "/ws refused") {
				t.Errorf("the log does not say /ws was refused: %s", logged.String())
			}
			// A plugin's event is applied at once.
			srv := httptest.NewServer(src.PluginHandler())
			defer srv.Close()
			n := out.len()
			edit(t, k, probe, "20261121101300-viaplg1", "Written where /ws cannot reach: через плагин.")
			if resp := postEvent(t, srv.URL, "shh", "", `{"cmd":"savedoc","data":{"rootID":"`+probe+`"}}`); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("plugin post: %d", resp.StatusCode)
			}
			out.waitFor(t, n, "the plugin's event applied without /ws", func(evs []*schemas.DocChanged) bool {
				return has(evs, probe, false, hasBlock("20261121101300-viaplg1"))
			})
			// An edit no one reports is found by the poll.
			n = out.len()
			edit(t, k, parent, "20261121101300-polled1", "Found by the timer.")
			out.waitFor(t, n, "the poll's reconciliation", func(evs []*schemas.DocChanged) bool {
				return has(evs, parent, false, hasBlock("20261121101300-polled1"))
			})
		})
	}
}

func TestAKernelWithAnAccessCode(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		ws         bool   // /ws follows the kernel
		notice     string // in the status and the log when not
	}{
		{"without the code the bridge says /ws needs it, polls and does not loop", "", false, "EXOCORTEX_SIYUAN_ACCESS_CODE"},
		{"with a wrong code the bridge says the code was refused and polls", "0000", false, "refused the access authorization code"},
		{"with the code the bridge logs in and follows /ws", "1234", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := kernel(t)
			k.SetAccessCode("1234")
			var out sent
			var logged syncLog
			src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour,
				Poll: time.Hour, AccessCode: tc.code}, bus.NewMemKV(), out.publish, zerolog.New(&logged))
			must(t, k.Flush())
			start(t, src)
			out.waitFor(t, 0, "the initial sync", func(evs []*schemas.DocChanged) bool { return len(evs) >= 4 })
			if tc.ws {
				eventually(t, 5*time.Second, "/ws open", func() bool { return k.Connected() > 0 && src.Status().Connected })
				n := out.len()
				edit(t, k, probe, "20261121101400-livews1", "Live over /ws behind an access code.")
				out.waitFor(t, n, "the /ws event", func(evs []*schemas.DocChanged) bool {
					return has(evs, probe, false, hasBlock("20261121101400-livews1"))
				})
				return
			}
			eventually(t, 5*time.Second, "the notice", func() bool { return src.Status().Notice != "" })
			flushes := k.Calls("/api/sqlite/flushTransaction")
			time.Sleep(2 * time.Second)
			st := src.Status()
			if st.Connected || !st.Polling || !strings.Contains(st.Notice, tc.notice) || !strings.Contains(st.Notice, "plugin") ||
				strings.Contains(st.Error+st.Notice, "8224") {
				t.Errorf("status: %+v", st)
			}
			if !strings.Contains(logged.String(), tc.notice) || strings.Contains(logged.String(), "StatusCode(8224)") {
				t.Errorf("log: %s", logged.String())
			}
			// No reconnect loop: one /ws try, no reconciliation since.
			if n := k.Calls("/ws"); n > 1 {
				t.Errorf("/ws tried %d times in 2 s", n)
			}
			if n := k.Calls("/api/sqlite/flushTransaction") - flushes; n != 0 {
				t.Errorf("%d reconciliations in 2 s idle", n)
			}
		})
	}
}

func TestThePluginEndpointAnswersCORSPreflightsForItsOrigins(t *testing.T) {
	const kernelURL = "http://127.0.0.1:6806"
	for _, tc := range []struct {
		name    string
		origins []string
		origin  string
		allowed bool
	}{
		{"the desktop app's window at the kernel's origin is allowed by default", nil, "http://127.0.0.1:6806", true},
		{"its localhost twin is allowed by default", nil, "http://localhost:6806", true},
		{"another site is refused by default", nil, "https://evil.example", false},
		{"a configured origin (SiYuan in Docker behind a proxy) is allowed", []string{"https://notes.example.com/"}, "https://notes.example.com", true},
		{"with origins configured the kernel's own is not added", []string{"https://notes.example.com"}, "http://127.0.0.1:6806", false},
		{"a star allows any origin", []string{"*"}, "https://заметки.example", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out sent
			src := siyuan.New(siyuan.Config{URL: kernelURL, Token: "tok", PluginSecret: "shh", PluginOrigins: tc.origins},
				bus.NewMemKV(), out.publish, zerolog.Nop())
			srv := httptest.NewServer(src.PluginHandler())
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodOptions, srv.URL, nil)
			req.Header.Set("Origin", tc.origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "content-type, x-exocortex-secret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			acao := resp.Header.Get("Access-Control-Allow-Origin")
			if tc.allowed {
				if resp.StatusCode != http.StatusNoContent || acao != tc.origin ||
					!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), siyuan.PluginHeader) ||
					!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
					t.Errorf("preflight: %d, headers %v", resp.StatusCode, resp.Header)
				}
				// The secret is still required, and the answer readable.
				if r := postEvent(t, srv.URL, "", tc.origin, `{"cmd":"savedoc","data":{"rootID":"x"}}`); r.StatusCode != http.StatusUnauthorized ||
					r.Header.Get("Access-Control-Allow-Origin") != tc.origin {
					t.Errorf("post without the secret: %d, %v", r.StatusCode, r.Header)
				}
				if r := postEvent(t, srv.URL, "shh", tc.origin, `{"cmd":"statusbar","data":{}}`); r.StatusCode != http.StatusAccepted ||
					r.Header.Get("Access-Control-Allow-Origin") != tc.origin {
					t.Errorf("post with the secret: %d, %v", r.StatusCode, r.Header)
				}
				return
			}
			if resp.StatusCode != http.StatusForbidden || acao != "" {
				t.Errorf("preflight from a foreign origin: %d, allow-origin %q", resp.StatusCode, acao)
			}
			if r := postEvent(t, srv.URL, "shh", tc.origin, `{"cmd":"statusbar","data":{}}`); r.StatusCode != http.StatusForbidden {
				t.Errorf("post from a foreign origin: %d", r.StatusCode)
			}
		})
	}
}

func TestTheNotebooksOwnDocumentIsIndexedWhenItHoldsContent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		boxDoc  bool
		content bool
		indexed bool
	}{
		{"notes written in the notebook's document are indexed", true, true, true},
		{"an empty notebook document is not", true, false, false},
		{"with boxDocEnabled off it stays hidden", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := kernel(t)
			k.SetBoxDocEnabled(tc.boxDoc)
			if tc.content {
				edit(t, k, box, "20261121101500-boxdoc1", "Заметка прямо в документе блокнота: notes in the notebook itself.")
			}
			must(t, k.Flush())
			var out sent
			state := bus.NewMemKV()
			src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok"}, state, out.publish, zerolog.Nop())
			// check notices it before it is indexed.
			kdocs, err := src.Compare(ctx)
			if err != nil {
				t.Fatal(err)
			}
			noticed := slices.ContainsFunc(kdocs, func(d siyuan.KernelDoc) bool { return d.DocID == box && d.Drift == "in SiYuan, not indexed" })
			if noticed != tc.indexed {
				t.Errorf("check noticed the notebook's document: %v, want %v", noticed, tc.indexed)
			}
			st, err := src.Reconcile(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := has(out.since(0), box, false, func(e *schemas.DocChanged) bool {
				return slices.Equal(e.TitlePath, []string{"RAG Probe"}) && hasBlock("20261121101500-boxdoc1")(e)
			})
			if got != tc.indexed || has(out.since(0), box2, false, nil) {
				t.Errorf("notebook document sent: %v, want %v (%+v)", got, tc.indexed, st)
			}
			if !tc.indexed {
				return
			}
			// Written to again: a savedoc sends it.
			n := out.len()
			edit(t, k, box, "20261121101500-boxdoc2", "Second note.")
			must(t, src.Handle(ctx, siyuan.Event{Cmd: "savedoc", Data: []byte(`{"rootID":"` + box + `"}`)}))
			if _, err := src.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if !has(out.since(n), box, false, hasBlock("20261121101500-boxdoc2")) {
				t.Error("an edit of the notebook's document was not sent")
			}
			kdocs, _ = src.Compare(ctx)
			for _, d := range kdocs {
				if d.Drift != "" {
					t.Errorf("after the sync check still sees %s: %s", d.DocID, d.Drift)
				}
			}
		})
	}
}

func TestAClosedNotebooksDocumentsStayIndexedMarkedClosedAndComeBackWithoutReindexing(t *testing.T) {
	k := kernel(t)
	var out sent
	state := bus.NewMemKV()
	ctx := context.Background()
	src := siyuan.New(siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour},
		state, out.publish, zerolog.Nop())
	running(t, k, src, &out, 4)
	n := out.len()
	// Closed live: the "unmount" event, then a reconciliation.
	must(t, k.CloseNotebook(box))
	must(t, k.Flush())
	eventually(t, 5*time.Second, "the documents marked closed", func() bool {
		rem, _ := siyuan.RememberedDocs(ctx, state)
		return rem[parent].Closed && rem[child].Closed && rem[probe].Closed
	})
	st, err := src.Reconcile(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Deleted != 0 || st.Closed != 3 || src.Status().DocsSynced != 4 {
		t.Errorf("a reconciliation with a closed notebook: %+v, status %+v", st, src.Status())
	}
	for _, e := range out.since(n) {
		t.Errorf("closing a notebook sent %s (deleted %v)", e.DocID, e.Deleted)
	}
	// check does not call them gone: they are listed as closed, unchanged.
	kdocs, err := src.Compare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{parent, child, probe} {
		if !slices.ContainsFunc(kdocs, func(d siyuan.KernelDoc) bool { return d.DocID == id && d.Closed && d.Drift == "" }) {
			t.Errorf("check does not list %s as closed and unchanged: %+v", id, kdocs)
		}
	}
	// Opened again: nothing is sent again and the mark goes.
	must(t, k.OpenNotebook(box))
	eventually(t, 5*time.Second, "the closed marks cleared", func() bool {
		rem, _ := siyuan.RememberedDocs(ctx, state)
		return !rem[parent].Closed && !rem[child].Closed && !rem[probe].Closed
	})
	if _, err := src.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range out.since(n) {
		t.Errorf("reopening a notebook sent %s again (deleted %v)", e.DocID, e.Deleted)
	}
	// And it is live again.
	edit(t, k, probe, "20261121101600-reopen1", "After reopening.")
	out.waitFor(t, n, "an edit after reopening", func(evs []*schemas.DocChanged) bool {
		return has(evs, probe, false, hasBlock("20261121101600-reopen1"))
	})
}

// flaky fronts a kernel and can go away (every connection closed unanswered).
type flaky struct {
	down atomic.Bool
	next http.Handler
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.down.Load() {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
		return
	}
	f.next.ServeHTTP(w, r)
}

func TestAKernelThatComesBackIsNoticedWithin5Seconds(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the backoff to grow")
	}
	k := kernel(t)
	target, _ := url.Parse(k.URL())
	f := &flaky{next: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var out sent
	src := siyuan.New(siyuan.Config{URL: srv.URL, Token: "tok", Coalesce: 20 * time.Millisecond, Reconcile: time.Hour},
		bus.NewMemKV(), out.publish, zerolog.Nop())
	must(t, k.Flush())
	start(t, src)
	out.waitFor(t, 0, "the initial sync", func(evs []*schemas.DocChanged) bool { return len(evs) >= 4 })
	eventually(t, 5*time.Second, "/ws open", func() bool { return src.Status().Connected })
	// Away long enough for a doubling backoff to pass 5 s (0.5+1+2+4 s).
	f.down.Store(true)
	srv.CloseClientConnections()
	k.Disconnect()
	time.Sleep(9 * time.Second)
	// Back, with a document written meanwhile.
	must(t, k.PutDoc(box, "20261121101700-back001", "", "/Back", siyuantest.Block{ID: "20261121101700-bpara01", Type: "p", Content: "Back.", Markdown: "Back."}))
	must(t, k.Flush())
	n := out.len()
	back := time.Now()
	f.down.Store(false)
	out.waitFor(t, n, "the document written while away", func(evs []*schemas.DocChanged) bool {
		return has(evs, "20261121101700-back001", false, nil)
	})
	if took := time.Since(back); took > 6*time.Second {
		t.Errorf("the returning kernel was noticed after %s", took)
	} else {
		t.Logf("the returning kernel was noticed after %s", took.Round(10*time.Millisecond))
	}
}
