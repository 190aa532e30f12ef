package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models/modeltest"
)

// TestStatusReadsTheRunningSystemsModelsNotItsOwnFlags: up runs with
// models of its own (--models DIR); status, run without --models, used to
// look in its default models folder and report "0 with vectors" and
// lexical search. It reports the running system's models and search mode.
func TestStatusReadsTheRunningSystemsModelsNotItsOwnFlags(t *testing.T) {
	t.Parallel()
	data, notes := t.TempDir(), t.TempDir()
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true})
	startUpLogged(t, data, "--models", modelsDir, "--http", "off")
	write(t, notes+"/cats.md", "# Кошки\n\nКошки спят большую часть дня. Cats hunt at dusk.\n")
	mustExo(t, "ingest", "--data", data, "--quiet", notes)
	var st struct {
		Search   string `json:"search"`
		Embedded int    `json:"embedded"`
		Models   []struct {
			Role      string `json:"role"`
			Installed bool   `json:"installed"`
		} `json:"models"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := mustExo(t, "status", "--data", data, "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		if st.Embedded > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.HasPrefix(st.Search, "lexical") {
		t.Errorf("status reports %q search while up runs with an embedding model", st.Search)
	}
	if st.Embedded == 0 {
		t.Errorf("status reports 0 chunks with vectors while up embedded them")
	}
	embed := false
	for _, m := range st.Models {
		embed = embed || (m.Role == "embed" && m.Installed)
	}
	if !embed {
		t.Errorf("status does not show up's embedding model as installed: %+v", st.Models)
	}
}

// TestAPluginFlagWithoutTheBridgeIsAnError: --siyuan-plugin-listen without
// --siyuan URL used to be silently ignored; it is an error naming the flag
// that is missing.
func TestAPluginFlagWithoutTheBridgeIsAnError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"up with the plugin's address and no kernel", []string{"up", "--no-models", "--http", "off", "--listen", "127.0.0.1:-1"}},
		{"a bridge worker with the plugin's address and no kernel", []string{"worker", "--stage", "siyuan", "--nats", "nats://127.0.0.1:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--data", t.TempDir(), "--siyuan-plugin-listen", "127.0.0.1:0")
			cmd := exec.Command(binary, args...)
			cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=", "EXOCORTEX_SIYUAN_URL=", "EXOCORTEX_SIYUAN_CONFIG=")
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("still running 20 s later (the flag was ignored):\n%s", out)
			}
			if err == nil || !strings.Contains(string(out), "--siyuan-plugin-listen") || !strings.Contains(string(out), "--siyuan URL") {
				t.Errorf("exit %v, want an error naming --siyuan URL:\n%s", err, out)
			}
		})
	}
}

// TestStatusShowsAWorkerOnlyCluster: workers on an external NATS server,
// no up anywhere: status used to say "not running". It names the stages
// workers serve.
func TestStatusShowsAWorkerOnlyCluster(t *testing.T) {
	t.Parallel()
	url, _ := natsServer(t)
	data := t.TempDir()
	w := startProc(t, "chunk worker", []string{"EXOCORTEX_DATA=", "EXOCORTEX_MODELS="}, binary, "worker", "--stage", "chunk", "--nats", url, "--data", data, "--no-models", "--log-level", "warn")
	_ = w
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, err := exo(t, "status", "--nats", url, "--data", data)
		if err == nil && strings.Contains(out, "workers serve 1 of") {
			if !strings.Contains(out, "chunk") {
				t.Errorf("status does not list the chunk stage:\n%s", out)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status does not show the chunk worker (err %v):\n%s\n%s", err, out, errOut)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
