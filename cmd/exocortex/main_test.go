package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "exocortex-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "exocortex")
	// Every up the tests start serves its gateway on a free port (the
	// default, 7600, would collide between tests).
	os.Setenv("EXOCORTEX_HTTP", "127.0.0.1:0")
	os.Unsetenv("EXOCORTEX_HTTP_TOKEN")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func exo(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=")
	err = cmd.Run()
	return o.String(), e.String(), err
}

func mustExo(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := exo(t, args...)
	if err != nil {
		t.Fatalf("exocortex %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func write(t *testing.T, path, text string) {
	t.Helper()
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type hit struct {
	Title       string   `json:"title"`
	SectionPath []string `json:"section_path"`
	BlockID     string   `json:"block_id"`
	Snippet     string   `json:"snippet"`
	Score       float64  `json:"score"`
}

func TestCLIIngestThenSearchOnItsOwn(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "garden.md"), "---\ntitle: Garden notes\n---\n# Tomatoes\n\nTomatoes need full sun and deep watering.\n\n## Pests\n\nAphids hide under the leaves.\n")
	write(t, filepath.Join(vault, "ru.md"), "# Столица\n\nМосква является столицей России.\n")
	// A file over --max-file-mb is one that genuinely fails (a broken front
	// matter is read with a repair).
	write(t, filepath.Join(vault, "huge.md"), "# Huge\n\n"+strings.Repeat("All work and no play. ", 100000))

	var rep struct {
		Files     struct{ Sent, Failed int } `json:"files"`
		Chunks    int                        `json:"chunks"`
		Documents int                        `json:"documents"`
	}
	out, errOut, err := exo(t, "ingest", vault, "--data", data, "--json", "--max-file-mb", "1")
	if code := exitCode(err); code != 3 {
		t.Errorf("ingest with a broken file: exit code %d (%v), want 3\n%s", code, err, errOut)
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("ingest --json: %v\n%s", err, out)
	}
	if rep.Files.Sent != 2 || rep.Files.Failed != 1 || rep.Documents != 2 || rep.Chunks < 2 {
		t.Fatalf("ingest report = %+v (a bad file is skipped, the rest indexed)", rep)
	}

	var res struct {
		Mode    string   `json:"mode"`
		Reasons []string `json:"reasons"`
		Results []hit    `json:"results"`
	}
	out = mustExo(t, "search", "aphids leaves", "--data", data, "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) == 0 {
		t.Fatalf("search: %v %s", err, out)
	}
	hits := res.Results
	if res.Mode != "lexical" || len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], "no_embedding_model") {
		t.Errorf("without models search is lexical and says why: mode %q, reasons %q", res.Mode, res.Reasons)
	}
	if hits[0].Title != "Garden notes" || strings.Join(hits[0].SectionPath, " > ") != "Garden notes > Tomatoes" ||
		!strings.Contains(hits[0].Snippet, "[Aphids]") || hits[0].BlockID == "" {
		t.Errorf("top hit = %+v", hits[0])
	}

	for _, q := range []string{`"unbalanced`, `a AND`, `NOT NEAR(`, `title:*`, `(()`, `^-+`, `москва OR`} {
		if _, errOut, err := exo(t, "search", q, "--data", data, "--json"); err != nil {
			t.Errorf("search %q failed: %v %s", q, err, errOut)
		}
	}
}

func TestCLIEvalReadsSQuADv2WithEmptyAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := `{"version":"v2.0","data":[{"title":"Cats","paragraphs":[
	 {"context":"Cats sleep for most of the day and hunt at dusk.","qas":[
	   {"id":"q1","question":"When do cats hunt?","answers":[{"text":"at dusk","answer_start":38}],"is_impossible":false},
	   {"id":"q2","question":"What colour are the eggs cats lay?","answers":[],"is_impossible":true}]},
	 {"context":"Dogs bark at strangers and guard the house.","qas":[
	   {"id":"q3","question":"What do dogs guard?","answers":[{"text":"the house","answer_start":33}]}]}]}]}`
	write(t, filepath.Join(dir, "tiny.json"), set)
	out := mustExo(t, "eval", "--set", filepath.Join(dir, "tiny.json"), "--json")
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("eval --json: %v\n%s", err, out)
	}
	for _, k := range []string{"n", "recall_at_1", "recall_at_5", "recall_at_15", "mrr_at_15", "latency_ms_p50", "latency_ms_p95"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("eval --json lacks %s: %s", k, out)
		}
	}
	if rep["n"].(float64) != 3 || rep["recall_at_1"].(float64) != 1 {
		t.Errorf("eval = %s, want 3 questions (the unanswerable one scored on its paragraph), all found first", out)
	}
}

// TestCLICommandsWorkWhileUpIsRunning starts exocortex up, feeds it with
// ingest, reads it with search and status, and stops it with SIGTERM.
func TestCLICommandsWorkWhileUpIsRunning(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar.\n")
	up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "warn")
	var upErr bytes.Buffer
	up.Stderr = &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Process.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("up did not start: %s", upErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	_, errOut, err := exo(t, "ingest", vault, "--data", data)
	if err != nil || !strings.Contains(errOut, "feeding the running system") {
		t.Fatalf("ingest against up: %v\n%s", err, errOut)
	}
	out := mustExo(t, "search", "honey", "--data", data, "--json")
	if !strings.Contains(out, "[honey]") {
		t.Errorf("search while up runs: %s", out)
	}
	var st struct {
		Running bool `json:"running"`
		Stages  []struct {
			Stage   string `json:"stage"`
			Pending uint64 `json:"pending"`
			Acked   int64  `json:"acked"`
		} `json:"stages"`
		Documents, Chunks int
	}
	// Counters are flushed every 2s; wait for the index stage's acks to show.
	for i := 0; ; i++ {
		out = mustExo(t, "status", "--data", data, "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		if len(st.Stages) >= 2 && st.Stages[1].Acked >= 2 || i > 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !st.Running || st.Documents != 1 || st.Chunks != 1 || len(st.Stages) != 10 || st.Stages[0].Acked != 1 || st.Stages[1].Acked < 2 {
		t.Errorf("status = %+v\n%s", st, out)
	}
	if out := mustExo(t, "dlq", "list", "--data", data); !strings.Contains(out, "no dead letters") {
		t.Errorf("dlq list = %s", out)
	}

	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Errorf("up exited with %v: %s", err, upErr.String())
	}
	if _, err := os.Stat(filepath.Join(data, "nats.url")); !os.IsNotExist(err) {
		t.Errorf("nats.url left behind after shutdown")
	}
}
