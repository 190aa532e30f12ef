package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var httpLine = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`)

// waitHTTP waits for a process's stderr to name its gateway's address.
func waitHTTP(t *testing.T, stderr *bytes.Buffer) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := httpLine.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no gateway address in: %s", stderr.String())
	return ""
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, raw)
		}
	}
	return resp.StatusCode
}

func TestUpServesTheGatewayAndAGatewayWorkerServesTheSameSystem(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	vault := t.TempDir()
	if err := os.WriteFile(filepath.Join(vault, "birds.md"), []byte("# Birds\n\nRavens and crows use tools to get food.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, upErr := startUp(t, data, []string{"EXOCORTEX_HTTP_HOSTS=kb.example.com, notes.example.org"}, "--no-models")
	addr := waitHTTP(t, upErr)
	mustExo(t, "ingest", vault, "--data", data, "--quiet")
	// The names of EXOCORTEX_HTTP_HOSTS get in; a foreign one (DNS
	// rebinding) gets 403 naming what to set.
	for host, want := range map[string]int{"kb.example.com": 200, "notes.example.org:7600": 200, "attacker.example": 403} {
		if code, body := statusAs(t, "http://"+addr+"/v1/status", host); code != want || (want == 403 && !strings.Contains(body, "EXOCORTEX_HTTP_HOSTS")) {
			t.Errorf("up: GET /v1/status with Host %s: %d %s, want %d", host, code, body, want)
		}
	}

	var st struct {
		Running   bool  `json:"running"`
		Documents int   `json:"documents"`
		Stages    []any `json:"stages"`
	}
	if code := getJSON(t, "http://"+addr+"/v1/status", &st); code != 200 || !st.Running || st.Documents != 1 || len(st.Stages) == 0 {
		t.Fatalf("GET /v1/status: %d %+v", code, st)
	}
	// /v1/search answers what search --json prints.
	resp, err := http.Post("http://"+addr+"/v1/search", "application/json", strings.NewReader(`{"query":"crows tools","k":3}`))
	if err != nil {
		t.Fatal(err)
	}
	httpRaw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cliRaw := mustExo(t, "search", "crows tools", "--k", "3", "--json", "--data", data)
	var viaHTTP, viaCLI struct {
		Mode    string `json:"mode"`
		Results []struct {
			ChunkID string `json:"chunk_id"`
			Snippet string `json:"snippet"`
		} `json:"results"`
	}
	_ = json.Unmarshal(httpRaw, &viaHTTP)
	_ = json.Unmarshal([]byte(cliRaw), &viaCLI)
	// The API marks matches **so**, the terminal [so]; otherwise the same.
	for i := range viaHTTP.Results {
		viaHTTP.Results[i].Snippet = regexp.MustCompile(`\*\*(.+?)\*\*`).ReplaceAllString(viaHTTP.Results[i].Snippet, "[$1]")
	}
	if len(viaHTTP.Results) == 0 || fmt.Sprint(viaHTTP) != fmt.Sprint(viaCLI) {
		t.Errorf("HTTP %s\nCLI %s", httpRaw, cliRaw)
	}

	// The gateway alone, against the running system's NATS.
	natsURL, err := os.ReadFile(filepath.Join(data, "nats.url"))
	if err != nil {
		t.Fatal(err)
	}
	w := exec.Command(binary, "worker", "--stage", "gateway", "--nats", strings.TrimSpace(string(natsURL)), "--data", data, "--http", "127.0.0.1:0",
		"--http-host", "gw.example.org", "--http-host", "gw2.example.org,gw3.example.org", "--log-level", "warn")
	w.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_HTTP_HOSTS=kb.example.com")
	var wErr bytes.Buffer
	w.Stderr = &wErr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		_ = w.Wait()
	}()
	waddr := waitHTTP(t, &wErr)
	var ready struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	if code := getJSON(t, "http://"+waddr+"/readyz", &ready); code != 200 || !ready.Ready {
		t.Errorf("the gateway worker's /readyz: %d %+v\n%s", code, ready, wErr.String())
	}
	if code := getJSON(t, "http://"+waddr+"/v1/status", &st); code != 200 || st.Documents != 1 {
		t.Errorf("the gateway worker's /v1/status: %d %+v", code, st)
	}
	// --http-host, repeated or comma-separated, replaces EXOCORTEX_HTTP_HOSTS.
	for host, want := range map[string]int{"gw.example.org": 200, "gw2.example.org": 200, "gw3.example.org": 200, "kb.example.com": 403, "localhost": 200} {
		if code, body := statusAs(t, "http://"+waddr+"/v1/status", host); code != want {
			t.Errorf("the gateway worker: GET /v1/status with Host %s: %d %s, want %d", host, code, body, want)
		}
	}
}

// statusAs GETs url with the Host header host and returns the status and
// the body.
func statusAs(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func TestUpOnATakenHTTPPortOrOffLoopbackWithoutATokenFailsAtOnce(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	for _, c := range []struct {
		http string
		want []string
	}{
		{"127.0.0.1:" + port, []string{port, "--http", "already in use"}},
		{"0.0.0.0:0", []string{"EXOCORTEX_HTTP_TOKEN", "--http 0.0.0.0:0"}},
	} {
		start := time.Now()
		_, errOut, err := exo(t, "up", "--data", t.TempDir(), "--listen", "127.0.0.1:-1", "--no-models", "--http", c.http, "--log-level", "error")
		if err == nil || time.Since(start) > 10*time.Second {
			t.Fatalf("up --http %s: %v after %s", c.http, err, time.Since(start))
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("up --http %s: %q does not say %q", c.http, errOut, w)
			}
		}
	}
}
