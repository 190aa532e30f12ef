package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

func TestUpWithSiYuanIndexesTheKernelAndStatusShowsTheBridge(t *testing.T) {
	t.Parallel()
	k := siyuantest.New(t, "kernel-token-123")
	k.AddNotebook("20261121100831-kt25p1g", "Notes")
	if err := k.PutDoc("20261121100831-kt25p1g", "20261121100831-xs0m89b", "", "/Birds",
		siyuantest.Block{ID: "20261121100831-para001", Type: "p", Content: "Crows use tools to get food.", Markdown: "Crows use tools to get food."},
	); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "info", "--no-models", "--siyuan", k.URL())
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_TOKEN=kernel-token-123")
	var upErr bytes.Buffer
	up.Stderr = &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Process.Kill()
	var st struct {
		Chunks int
		SiYuan *struct {
			Connected  bool `json:"connected"`
			DocsSynced int  `json:"docs_synced"`
		} `json:"siyuan"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
			out, _, _ := exo(t, "status", "--data", data, "--json")
			if json.Unmarshal([]byte(out), &st) == nil && st.SiYuan != nil && st.SiYuan.Connected && st.SiYuan.DocsSynced == 1 && st.Chunks == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not sync: %+v\n%s", st, upErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Right after the sync the stage counters say what was done.
	var counted struct {
		Stages []struct {
			Stage string `json:"stage"`
			Acked int64  `json:"acked"`
		} `json:"stages"`
	}
	out, _, _ := exo(t, "status", "--data", data, "--json")
	if err := json.Unmarshal([]byte(out), &counted); err != nil {
		t.Fatal(err)
	}
	for _, s := range counted.Stages {
		if (s.Stage == "chunk" || s.Stage == "index") && s.Acked == 0 {
			t.Errorf("stage %s: 0 acked right after the sync: %s", s.Stage, out)
		}
	}
	if out := mustExo(t, "status", "--data", data); !strings.Contains(out, "siyuan "+k.URL()+": connected") ||
		!strings.Contains(out, "; 1 document synced, ") {
		t.Errorf("status (one document synced, in the singular):\n%s", out)
	}
	// A document added live counts at once, not at the next reconciliation.
	if err := k.PutDoc("20261121100831-kt25p1g", "20261121100900-second1", "", "/Ravens",
		siyuantest.Block{ID: "20261121100900-para002", Type: "p", Content: "Ravens play in the snow.", Markdown: "Ravens play in the snow."},
	); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _, _ := exo(t, "status", "--data", data, "--json")
		if json.Unmarshal([]byte(out), &st) == nil && st.SiYuan != nil && st.SiYuan.DocsSynced == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("documents synced after a live create: %+v", st.SiYuan)
		}
	}
	if out := mustExo(t, "search", "tools", "--data", data, "--json"); !strings.Contains(out, "siyuan://blocks/20261121100831-para001") {
		t.Errorf("search: %s", out)
	}
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Errorf("up exited with %v", err)
	}
	if out := mustExo(t, "status", "--data", data); !strings.Contains(out, "siyuan "+k.URL()+": stopped; ") ||
		!strings.Contains(out, "2 documents synced") {
		t.Errorf("status after up stopped:\n%s", out)
	}
	if strings.Contains(upErr.String(), "kernel-token-123") {
		t.Error("the token was logged")
	}
}

func TestASiYuanWorkerWithAWrongTokenStopsWithAClearError(t *testing.T) {
	t.Parallel()
	k := siyuantest.New(t, "right")
	data := t.TempDir()
	up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "warn", "--no-models")
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_URL=")
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("up did not start")
		}
	}
	w := exec.Command(binary, "worker", "--stage", "siyuan", "--data", data, "--siyuan", k.URL(), "--log-level", "error")
	w.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_TOKEN=wrong-token-456")
	var o bytes.Buffer
	w.Stdout, w.Stderr = &o, &o
	done := make(chan error, 1)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- w.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(o.String(), "API token") || strings.Contains(o.String(), "wrong-token-456") {
			t.Errorf("worker: %v\n%s", err, o.String())
		}
	case <-time.After(20 * time.Second):
		_ = w.Process.Kill()
		t.Fatalf("the worker kept retrying a refused token:\n%s", o.String())
	}
}

func TestUpWithARefusedSiYuanTokenSaysSoInTheLogAndStatusAndExits(t *testing.T) {
	t.Parallel()
	k := siyuantest.New(t, "right-token")
	k.AddNotebook("20261121100831-kt25p1g", "Notes")
	data := t.TempDir()
	up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "info", "--no-models", "--siyuan", k.URL())
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_TOKEN=wrong-token-789")
	var o bytes.Buffer
	up.Stdout, up.Stderr = &o, &o
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("up exited with %v, want exit code 1", err)
		}
	case <-time.After(30 * time.Second):
		_ = up.Process.Kill()
		<-done
		t.Fatalf("up kept running with a refused token:\n%s", o.String())
	}
	log := o.String()
	if !strings.Contains(log, `"level":"error"`) || !strings.Contains(log, "refused the API token") || strings.Contains(log, "wrong-token-789") {
		t.Errorf("up's output:\n%s", log)
	}
	out := mustExo(t, "status", "--data", data)
	if !strings.Contains(out, "siyuan "+k.URL()+": stopped") || !strings.Contains(out, "refused the API token") {
		t.Errorf("status after up stopped:\n%s", out)
	}
}

// TestUpWithAnAccessCodeKernelPollsSaysWhatToDoAndTakesThePlugin runs up
// against a kernel with an access code (none given to the bridge): the
// notes sync over the HTTP API, status says /ws needs the code and the
// plugin works instead (never "StatusCode(8224)"), and the plugin endpoint
// answers a browser's preflight from the configured origin.
func TestUpWithAnAccessCodeKernelPollsSaysWhatToDoAndTakesThePlugin(t *testing.T) {
	t.Parallel()
	k := siyuantest.New(t, "kernel-token-123")
	k.SetAccessCode("4321")
	k.AddNotebook("20261121100831-kt25p1g", "Заметки")
	if err := k.PutDoc("20261121100831-kt25p1g", "20261121100831-xs0m89b", "", "/Вороны",
		siyuantest.Block{ID: "20261121100831-para001", Type: "p", Content: "Вороны используют орудия.", Markdown: "Вороны используют орудия."},
	); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plugin := ln.Addr().String()
	ln.Close()
	data := t.TempDir()
	up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "info", "--no-models",
		"--siyuan", k.URL(), "--siyuan-plugin-listen", plugin)
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_SIYUAN_TOKEN=kernel-token-123",
		"EXOCORTEX_SIYUAN_PLUGIN_SECRET=shh", "EXOCORTEX_SIYUAN_PLUGIN_ORIGINS=https://notes.example.com", "EXOCORTEX_SIYUAN_ACCESS_CODE=")
	var upErr bytes.Buffer
	up.Stderr = &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Process.Kill()
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
			out, _, _ = exo(t, "status", "--data", data)
			if strings.Contains(out, "1 document synced") && strings.Contains(out, "access authorization code") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never said the bridge polls for want of the access code:\n%s\n%s", out, upErr.String())
		}
	}
	if !strings.Contains(out, "following over the HTTP API every 30s") || !strings.Contains(out, "EXOCORTEX_SIYUAN_ACCESS_CODE") ||
		!strings.Contains(out, "plugin") || strings.Contains(out, "8224") {
		t.Errorf("status:\n%s", out)
	}
	if strings.Contains(upErr.String(), "StatusCode(8224)") || !strings.Contains(upErr.String(), "access authorization code") {
		t.Errorf("log:\n%s", upErr.String())
	}
	req, _ := http.NewRequest(http.MethodOptions, "http://"+plugin+"/siyuan/events", nil)
	req.Header.Set("Origin", "https://notes.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://notes.example.com" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if n := k.Calls("/ws"); n > 2 {
		t.Errorf("/ws tried %d times", n)
	}
}
