package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/models/ort"
)

// exoEnv runs the binary with extra environment variables (after clearing
// EXOCORTEX_DATA and EXOCORTEX_NATS, which env may set again).
func exoEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS="), env...)
	err = cmd.Run()
	return o.String(), e.String(), err
}

func TestEvalLeavesTheUsersDataAloneAndFindsTheInstalledModels(t *testing.T) {
	// The user's knowledge base, with the models where 'models fetch' puts
	// them by default (<data>/models).
	userData := t.TempDir()
	modeltest.Dir(t, modeltest.Options{NoQA: true, Into: filepath.Join(userData, "models")})
	set := filepath.Join(t.TempDir(), "tiny.json")
	write(t, set, `{"version":"v2.0","data":[{"title":"Cats","paragraphs":[
	 {"context":"Cats sleep for most of the day and hunt at dusk.","qas":[
	   {"id":"q1","question":"When do cats hunt?","answers":[{"text":"at dusk","answer_start":38}]}]},
	 {"context":"Dogs bark at strangers and guard the house.","qas":[
	   {"id":"q3","question":"What do dogs guard?","answers":[{"text":"the house","answer_start":33}]}]}]}]}`)
	out, errOut, err := exoEnv(t, []string{"EXOCORTEX_DATA=" + userData}, "eval", "--set", set, "--json")
	if err != nil {
		t.Fatalf("eval with EXOCORTEX_DATA set: %v\n%s\n%s", err, out, errOut)
	}
	entries, _ := os.ReadDir(userData)
	for _, e := range entries {
		if e.Name() != "models" {
			t.Errorf("eval wrote %s into the user's data directory %s", e.Name(), userData)
		}
	}
	var ev struct {
		Runs []struct {
			Mode     string `json:"mode"`
			Embedded int    `json:"embedded"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil || len(ev.Runs) != 4 || ev.Runs[1].Mode != "vector" || ev.Runs[1].Embedded == 0 {
		t.Errorf("eval did not use the models installed in %s/models: %v\n%s\n%s", userData, err, out, errOut)
	}

	// Without EXOCORTEX_DATA, the default data directory is ./data: its
	// models are found, and nothing else is written there.
	cwd := t.TempDir()
	modeltest.Dir(t, modeltest.Options{NoQA: true, Into: filepath.Join(cwd, "data", "models")})
	cmd := exec.Command(binary, "eval", "--set", set, "--json")
	cmd.Dir = cwd
	lib, err := ort.Find() // the library is found from the repository, not from cwd
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=", ort.EnvLib+"="+lib)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("eval in %s: %v\n%s", cwd, err, raw)
	}
	ev.Runs = nil
	if err := json.Unmarshal(raw, &ev); err != nil || len(ev.Runs) != 4 {
		t.Errorf("eval did not use the models in ./data/models: %v\n%s", err, raw)
	}
	if entries, _ := os.ReadDir(filepath.Join(cwd, "data")); len(entries) != 1 {
		t.Errorf("eval wrote into ./data: %v", entries)
	}
}

// startUp runs 'exocortex up' on data and waits until it is ready; the
// process is killed at the end of the test.
func startUp(t *testing.T, data string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	up := exec.Command(binary, append([]string{"up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "warn"}, args...)...)
	up.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS="), env...)
	var upErr bytes.Buffer
	up.Stderr = &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = up.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = up.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = up.Process.Kill()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
			return up, &upErr
		}
		if time.Now().After(deadline) {
			t.Fatalf("up did not start: %s", upErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCLIDeadLettersAreReplayedOnceAndPurged(t *testing.T) {
	data := t.TempDir()
	// With an embedding model, so that the embed stage reads chunk events.
	startUp(t, data, nil, "--models", modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true}))
	nc := connectUp(t, data)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A malformed chunk event: the index and the embed stage both read
	// kb.chunk.created, and both dead-letter it.
	for i, subj := range []string{"kb.chunk.created", "kb.chunk.created", "kb.doc.changed"} {
		if _, err := js.Publish(context.Background(), subj, []byte(`{not json`), jetstream.WithMsgID(fmt.Sprint("bad", i))); err != nil {
			t.Fatal(err)
		}
	}
	type letter struct {
		Seq   uint64 `json:"seq"`
		Stage string `json:"stage"`
	}
	list := func() []letter {
		var out []letter
		s := mustExo(t, "dlq", "list", "--data", data, "--json")
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("dlq list --json: %v\n%s", err, s)
		}
		return out
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(list()) < 5 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := list(); len(got) != 5 {
		t.Fatalf("dead letters = %+v, want 5 (two chunk events in index and embed, one document in chunk)", got)
	}
	out := mustExo(t, "dlq", "replay", "--stage", "index", "--data", data)
	if !strings.Contains(out, "replayed 2 dead letters") {
		t.Errorf("dlq replay: %s", out)
	}
	time.Sleep(time.Second) // the replays fail again
	byStage := map[string]int{}
	got := list()
	for _, l := range got {
		byStage[l.Stage]++
	}
	if len(got) != 5 || byStage["index"] != 2 || byStage["embed"] != 2 || byStage["chunk"] != 1 {
		t.Errorf("after a replay that failed again: %+v (want index 2, embed 2, chunk 1)", got)
	}
	out = mustExo(t, "dlq", "purge", fmt.Sprint(got[0].Seq), "--data", data)
	if !strings.Contains(out, "purged 1 dead letter\n") {
		t.Errorf("dlq purge SEQ: %q", out)
	}
	if _, errOut, err := exo(t, "dlq", "purge", fmt.Sprint(got[0].Seq), "--data", data); err == nil || !strings.Contains(errOut, fmt.Sprint(got[0].Seq)) {
		t.Errorf("purging a gone dead letter: %v %s", err, errOut)
	}
	out = mustExo(t, "dlq", "purge", "--data", data)
	if !strings.Contains(out, "purged 4 dead letters") || len(list()) != 0 {
		t.Errorf("dlq purge: %s, left %+v", out, list())
	}
	var st struct {
		Stages []struct {
			Stage        string `json:"stage"`
			DeadLettered int    `json:"dead_lettered"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(mustExo(t, "status", "--data", data, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Stages {
		if s.DeadLettered != 0 {
			t.Errorf("status still counts dead letters after purge: %+v", st)
		}
	}
}

func TestUpOnATakenPortFailsAtOnceNamingThePortAndTheFlag(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	start := time.Now()
	cmd := exec.Command(binary, "up", "--data", t.TempDir(), "--listen", "127.0.0.1:"+port, "--no-models", "--log-level", "error")
	cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=")
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("up on a taken port still running after 10s: %s", e.String())
	}
	if err == nil || !strings.Contains(e.String(), port) || !strings.Contains(e.String(), "--listen") {
		t.Errorf("up on taken port %s: %v after %s\n%s", port, err, time.Since(start), e.String())
	}
}

func TestStatusOnAMistypedDataDirectoryCreatesNothing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "dtaa")
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"dlq", "list"}} {
		_, errOut, err := exo(t, append(args, "--data", missing)...)
		if err == nil || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "does not exist") {
			t.Errorf("%s on a missing data directory: %v %s", strings.Join(args, " "), err, errOut)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("%s --data %s created it", strings.Join(args, " "), missing)
		}
	}
}

func TestEveryCommandsHelpNamesItsArgumentsAndDoubleDashFlags(t *testing.T) {
	cmds := map[string][]string{
		"up": {"--listen", "--data"}, "worker": {"--stage", "--nats"}, "ingest": {"PATH", "--data"},
		"search": {"QUERY", "--k", "--lang", "--mode"}, "status": {"--json"}, "dlq": {"list", "replay", "purge", "SEQ", "--stage"},
		"eval": {"--set", "--mode"}, "ask": {"QUESTION", "--history", "--llm-config"}, "models": {"fetch", "verify", "list", "--models"},
		"check":    {"DIR", "--repair", "--forget", "--siyuan", "--json", "--timeout"},
		"research": {"QUESTION", "status ID", "list", "--json", "--out", "--save", "--notebook", "--sub-questions", "--docs", "--max-calls", "--max-time", "--no-llm"},
	}
	for name, want := range cmds {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			out, errOut, err := exo(t, args...)
			text := out + errOut
			if err != nil {
				t.Errorf("exocortex %s: %v\n%s", strings.Join(args, " "), err, text)
				continue
			}
			if !strings.Contains(text, "usage: exocortex "+name) {
				t.Errorf("exocortex %s does not show the usage line:\n%s", strings.Join(args, " "), text)
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("exocortex %s does not describe %s:\n%s", strings.Join(args, " "), w, text)
				}
			}
			for _, line := range strings.Split(text, "\n") {
				if f := strings.TrimSpace(line); strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") {
					t.Errorf("exocortex %s spells a flag with one dash: %q", strings.Join(args, " "), line)
				}
			}
		}
	}
}

func TestVersionIsPrinted(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out := mustExo(t, args...)
		f := strings.Fields(out)
		if len(f) < 2 || f[0] != "exocortex" || f[1] == "" {
			t.Errorf("exocortex %s = %q, want 'exocortex VERSION ...'", args[0], out)
		}
	}
}

func TestInvalidKAndLangAreErrorsNamingTheFlag(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"search", "bees", "--k", "0"}, []string{"--k", "positive"}},
		{[]string{"search", "bees", "--k", "-3"}, []string{"--k", "positive"}},
		{[]string{"search", "bees", "--k", "ten"}, []string{"--k", "ten"}},
		{[]string{"search", "bees", "--lang", "xx"}, []string{"--lang", "xx", "ru", "en"}},
		{[]string{"ask", "bees?", "--lang", "de"}, []string{"--lang", "de", "ru", "en"}},
		{[]string{"search", "bees", "--nope"}, []string{"--nope"}},
	}
	for _, c := range cases {
		out, errOut, err := exo(t, append(c.args, "--data", data, "--no-models")...)
		if err == nil {
			t.Errorf("exocortex %s succeeded: %s", strings.Join(c.args, " "), out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("exocortex %s: error does not name %q:\n%s", strings.Join(c.args, " "), w, errOut)
			}
		}
		if strings.Contains(errOut, " -k") || strings.Contains(errOut, " -nope") {
			t.Errorf("exocortex %s: error spells a flag with one dash:\n%s", strings.Join(c.args, " "), errOut)
		}
	}
}

func TestMessagesCountOneThingInTheSingular(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey.\n")
	out := mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	if !strings.Contains(out, "ingested 1 document (") || !strings.Contains(out, "index holds 1 document, 1 chunk\n") {
		t.Errorf("ingest of one document: %q", out)
	}
	if out := mustExo(t, "status", "--data", data, "--no-models"); !strings.Contains(out, "indexed: 1 document, 1 chunk,") {
		t.Errorf("status of one document: %q", out)
	}
}

// TestTheClientsSettingsApplyOrTheClientSaysWhichAreUsed asks and searches
// with settings of their own while 'up' runs with other ones: a language-model
// provider of its own answers the client's question (over the contexts the
// running system retrieves); --no-models applies to the query (lexical
// retrieval); a models directory the running system does not use is named,
// with the running system's own, on stderr and in --json reasons.
func TestTheClientsSettingsApplyOrTheClientSaysWhichAreUsed(t *testing.T) {
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true, NoReranker: true})
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--models", modelsDir, "--quiet")
	startUp(t, data, []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}, "--models", modelsDir)

	srv := llmtest.New(t)
	srv.SetAnswer("Crows use tools to get food [1].")
	llmEnv := []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m"}
	out, errOut, err := exoEnv(t, llmEnv, "ask", "what do crows use?", "--data", data, "--json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, errOut)
	}
	var done struct {
		Mode      string   `json:"mode"`
		Reasons   []string `json:"reasons"`
		Citations []struct {
			BlockID string `json:"block_id"`
		} `json:"citations"`
	}
	if err := json.Unmarshal([]byte(out), &done); err != nil {
		t.Fatalf("ask --json: %v\n%s", err, out)
	}
	if done.Mode != "llm" || len(done.Citations) == 0 || len(srv.Requests()) == 0 {
		t.Errorf("ask with its own provider while up runs without one: mode %q, %d citations, %d requests to the provider; reasons %q",
			done.Mode, len(done.Citations), len(srv.Requests()), done.Reasons)
	}
	for _, want := range []string{"EXOCORTEX_LLM_BASE_URL", srv.URL(), "answered in this process", data} {
		if !strings.Contains(errOut, want) {
			t.Errorf("ask with its own provider: stderr does not say %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(strings.Join(done.Reasons, " "), "client_llm_providers") {
		t.Errorf("ask --json reasons do not say whose providers answered: %q", done.Reasons)
	}

	// --no-models applies to the client's own query: lexical retrieval.
	var res struct {
		Mode    string   `json:"mode"`
		Reasons []string `json:"reasons"`
	}
	out = mustExo(t, "search", "crows tools", "--data", data, "--no-models", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Mode != "lexical" {
		t.Errorf("search --no-models while up runs with models: mode %q (%v)\n%s", res.Mode, err, out)
	}

	// Another models directory: named, with the running system's.
	other := t.TempDir()
	out, errOut, err = exoEnv(t, nil, "search", "crows tools", "--data", data, "--models", other, "--json")
	if err != nil {
		t.Fatalf("search --models: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "--models "+other) || !strings.Contains(errOut, modelsDir) {
		t.Errorf("search --models %s while up runs with %s: stderr does not name both:\n%s", other, modelsDir, errOut)
	}
	res.Reasons = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil || !strings.Contains(strings.Join(res.Reasons, " "), "running_system_settings") {
		t.Errorf("search --json reasons: %v %q", err, res.Reasons)
	}
}

// TestASearchWhileUpRunsDoesNotMakeItAnswer: a search wants contexts only, so
// the running system's answer stage does not call its language model for it;
// a question without a provider of its own is answered by the running
// system's provider, with no notice.
func TestASearchWhileUpRunsDoesNotMakeItAnswer(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	srv := llmtest.New(t)
	srv.SetAnswer("Crows use tools to get food [1].")
	startUp(t, data, []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m"}, "--no-models")
	mustExo(t, "search", "crows", "--data", data, "--json")
	time.Sleep(time.Second)
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("a search made the running system ask its language model %d times", n)
	}
	out, errOut, err := exoEnv(t, []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}, "ask", "what do crows use?", "--data", data, "--json")
	if err != nil || !strings.Contains(out, `"mode": "llm"`) || strings.Contains(errOut, "note:") || len(srv.Requests()) == 0 {
		t.Errorf("ask answered by the running system's provider: %v, %d requests\n%s\n%s", err, len(srv.Requests()), out, errOut)
	}
}

// connectUp connects to the NATS server of the up running on data, with the
// credentials up keeps there; the connection closes when the test ends.
func connectUp(t *testing.T, data string) *nats.Conn {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(data, "nats.url"))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := nats.NkeyOptionFromSeed(filepath.Join(data, "nats.nk"))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(strings.TrimSpace(string(raw)), seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
