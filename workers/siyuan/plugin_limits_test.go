package siyuan_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
)

// limitedPlugin serves a source's plugin endpoint with small limits (the
// kernel is never called: the source does not run).
func limitedPlugin(t *testing.T, cfg siyuan.Config, log zerolog.Logger) *httptest.Server {
	t.Helper()
	cfg.URL, cfg.Token, cfg.PluginSecret = "http://127.0.0.1:1", "tok", "shh"
	src := siyuan.New(cfg, bus.NewMemKV(), func(context.Context, *schemas.DocChanged) error { return nil }, log)
	srv := httptest.NewServer(src.PluginHandler())
	t.Cleanup(srv.Close)
	return srv
}

// slowPost sends a request that announces size bytes of body and sends only
// the first few, then waits for the answer (up to wait).
func slowPost(t *testing.T, addr string, size int, wait time.Duration) (status int, err error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\n%s: shh\r\nContent-Length: %d\r\n\r\n{\"cmd\":", siyuan.PluginHeader, size)
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func post(t *testing.T, url string, body []byte, chunked bool) int {
	t.Helper()
	r := bytes.NewReader(body)
	req, err := http.NewRequest(http.MethodPost, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if chunked {
		req.ContentLength = -1 // no length: the limit must hold while reading
		req.Body = io.NopCloser(struct{ io.Reader }{r})
	}
	req.Header.Set(siyuan.PluginHeader, "shh")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestThePluginEndpointRefusesAnOversizedBodyWith413(t *testing.T) {
	srv := limitedPlugin(t, siyuan.Config{PluginMaxBody: 1024}, zerolog.Nop())
	small := []byte(`{"cmd":"savedoc","data":{"rootID":"20261121101200-aaaaaaa"}}`)
	big := []byte(`{"cmd":"savedoc","data":{"pad":"` + strings.Repeat("x", 2048) + `"}}`)
	if got := post(t, srv.URL, small, false); got != http.StatusAccepted {
		t.Fatalf("a small event: status %d, want 202", got)
	}
	if got := post(t, srv.URL, big, false); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit with its length: status %d, want 413", got)
	}
	if got := post(t, srv.URL, big, true); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit without a length: status %d, want 413", got)
	}
}

func TestThePluginEndpointDropsASlowBodyAfterItsTimeout(t *testing.T) {
	srv := limitedPlugin(t, siyuan.Config{PluginBodyTimeout: 300 * time.Millisecond}, zerolog.Nop())
	start := time.Now()
	status, err := slowPost(t, srv.Listener.Addr().String(), 100, 5*time.Second)
	if err != nil {
		t.Fatalf("a slow body still open after %s: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if status != http.StatusRequestTimeout {
		t.Fatalf("a slow body: status %d, want 408", status)
	}
}

// syncBuf is a log sink safe for the handler's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestThePluginEndpointCapsTheBodiesInFlightAndRateLimitsItsWarnings(t *testing.T) {
	var logs syncBuf
	srv := limitedPlugin(t, siyuan.Config{PluginMaxBody: 1500, PluginMaxInFlight: 2000, PluginBodyTimeout: 3 * time.Second},
		zerolog.New(&logs))
	// A slow request holds 1500 bytes of the 2000 while it lasts.
	held := make(chan int, 1)
	go func() { s, _ := slowPost(t, srv.Listener.Addr().String(), 1500, 10*time.Second); held <- s }()
	time.Sleep(200 * time.Millisecond)
	body := []byte(`{"cmd":"savedoc","data":{"pad":"` + strings.Repeat("x", 900) + `"}}`)
	for i := range 5 {
		if got := post(t, srv.URL, body, false); got != http.StatusServiceUnavailable {
			t.Fatalf("request %d beyond the bytes in flight: status %d, want 503", i, got)
		}
	}
	if n := strings.Count(logs.String(), "bodies in flight"); n != 1 {
		t.Fatalf("%d warnings for 5 refusals within a second, want 1:\n%s", n, logs.String())
	}
	if s := <-held; s != http.StatusRequestTimeout {
		t.Fatalf("the slow request: status %d, want 408", s)
	}
	// Its bytes are given back.
	if got := post(t, srv.URL, body, false); got != http.StatusAccepted {
		t.Fatalf("after the slow request ended: status %d, want 202", got)
	}
}
