package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/exocortex/exocortex/models/modeltest"
)

// drillWords are the generated notes' vocabulary: a topic word per note and
// common words around it, so lexical and vector search both find things.
var drillTopics = []string{"honey", "volcano", "orbit", "tomato", "glacier", "violin", "harbor", "compiler", "falcon", "lantern",
	"пчела", "вулкан", "орбита", "ледник", "скрипка"}

var drillCommon = strings.Fields("the a of and in to with from over under near garden river mountain city night morning " +
	"light water stone wind road house field forest market bridge tower letter story music engine signal")

// writeDrillVault writes notes (a few sections each, long enough for several
// chunks per note) into dir.
func writeDrillVault(t *testing.T, dir string, notes int) {
	t.Helper()
	r := rand.New(rand.NewPCG(16, 7))
	for i := range notes {
		topic := drillTopics[i%len(drillTopics)]
		var b strings.Builder
		fmt.Fprintf(&b, "# %s notes %d\n\n", topic, i)
		for s := range 4 {
			fmt.Fprintf(&b, "## Part %d about %s\n\n", s, topic)
			for range 3 {
				for w := range 40 {
					if w%9 == 0 {
						b.WriteString(topic)
					} else {
						b.WriteString(drillCommon[r.IntN(len(drillCommon))])
					}
					b.WriteByte(' ')
				}
				b.WriteString(".\n\n")
			}
		}
		write(t, filepath.Join(dir, fmt.Sprintf("%s-%03d.md", topic, i)), b.String())
	}
}

// writeEvalSlice writes the first articles of the shared XQuAD set as a
// small SQuAD file.
func writeEvalSlice(t *testing.T, path string, articles int) {
	t.Helper()
	raw, err := os.ReadFile("../../../shared/eval/xquad.en.json")
	if err != nil {
		t.Skipf("the shared eval data is not beside the repository (../shared/eval/xquad.en.json): %v", err)
	}
	var set struct {
		Version string            `json:"version"`
		Data    []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	set.Data = set.Data[:articles]
	out, _ := json.Marshal(set)
	write(t, path, string(out))
}

// drillView is what a knowledge base answers, compared before a backup and
// after its restore. Extend it (and observe) to compare more.
type drillView struct {
	Documents, Chunks, Embedded int
	// Searches maps "mode: query" to the result chunk ids, in order.
	Searches map[string][]string
	// Scores holds the same results' scores.
	Scores map[string][]float64
}

var drillQueries = []string{"honey garden", "volcano night", "glacier water stone", "вулкан", "compiler signal"}

// observe reads counts and search results from data (with up running or not).
func observe(t *testing.T, data string, env []string) drillView {
	t.Helper()
	v := drillView{Searches: map[string][]string{}, Scores: map[string][]float64{}}
	out, errOut, err := exoEnv(t, env, "status", "--data", data, "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, errOut)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, mode := range []string{"lexical", "vector", "hybrid", "rerank"} {
		for _, q := range drillQueries {
			out, errOut, err := exoEnv(t, env, "search", q, "--data", data, "--json", "--mode", mode, "--k", "10")
			if err != nil {
				t.Fatalf("search %q --mode %s: %v\n%s", q, mode, err, errOut)
			}
			var res struct {
				Mode    string      `json:"mode"`
				Results []searchHit `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("search --json: %v\n%s", err, out)
			}
			if res.Mode != mode || len(res.Results) == 0 {
				t.Fatalf("search %q --mode %s ran as %q with %d results", q, mode, res.Mode, len(res.Results))
			}
			key := mode + ": " + q
			for _, h := range res.Results {
				v.Searches[key] = append(v.Searches[key], h.ChunkID)
				v.Scores[key] = append(v.Scores[key], h.Score)
			}
		}
	}
	return v
}

// evalFigures runs eval on data (nothing may run on it) and keeps every
// figure but the timings.
func evalFigures(t *testing.T, data, set string, env []string) []map[string]any {
	t.Helper()
	out, errOut, err := exoEnv(t, env, "eval", "--set", set, "--data", data, "--json")
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, errOut)
	}
	var rep struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) == 0 {
		t.Fatalf("eval --json: %v\n%s", err, out)
	}
	for _, r := range rep.Runs {
		for k := range r {
			if strings.Contains(k, "latency") || strings.Contains(k, "seconds") || strings.HasSuffix(k, "_ms") || k == "stages" {
				delete(r, k)
			}
		}
	}
	return rep.Runs
}

func stopUp(t *testing.T, up interface {
	Signal(os.Signal) error
}, wait func() error) {
	t.Helper()
	if err := up.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("up exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("up did not stop within 60s of SIGTERM")
	}
}

// TestBackupRestoreDrill: ingest, eval, back up while up runs, destroy the
// data directory, restore into a fresh one, start again: the same search
// results and eval figures, and a re-ingest sends nothing.
func TestBackupRestoreDrill(t *testing.T) {
	root := t.TempDir()
	data, vault, backup := filepath.Join(root, "data"), filepath.Join(root, "vault"), filepath.Join(root, "backup")
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	env := []string{"EXOCORTEX_MODELS=" + modelsDir}
	writeDrillVault(t, vault, 90)
	set := filepath.Join(root, "set.json")
	writeEvalSlice(t, set, 2)

	var ing struct {
		Files             struct{ Sent, Unchanged int } `json:"files"`
		Documents, Chunks int
	}
	out, errOut, err := exoEnv(t, env, "ingest", vault, "--data", data, "--json")
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	if err := json.Unmarshal([]byte(out), &ing); err != nil || ing.Files.Sent != 90 || ing.Chunks < 200 {
		t.Fatalf("ingest = %+v (%v), want 90 notes sent and a few hundred chunks\n%s", ing, err, out)
	}
	evalBefore := evalFigures(t, data, set, env)

	up, upErr := startUp(t, data, env)
	before := observe(t, data, env)
	if before.Embedded != before.Chunks || before.Chunks < 200 {
		t.Fatalf("before the backup: %d chunks, %d embedded; want every chunk embedded", before.Chunks, before.Embedded)
	}
	out, errOut, err = exoEnv(t, env, "backup", backup, "--data", data)
	if err != nil {
		t.Fatalf("backup while up runs: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf("%d chunks", before.Chunks)) || !strings.Contains(errOut, "backup: copying exocortex.db") {
		t.Errorf("backup's summary or progress:\n%s\n%s", out, errOut)
	}
	stopUp(t, up.Process, up.Wait)
	_ = upErr

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(root, "restored")
	out, errOut, err = exoEnv(t, env, "restore", backup, "--data", restored)
	if err != nil {
		t.Fatalf("restore: %v\n%s\n%s", err, out, errOut)
	}
	if fi, err := os.Stat(restored); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("restored data directory: %v %v, want mode 0700", fi.Mode(), err)
	}

	// eval indexes its set again: with the chunk manifests restored,
	// nothing changes, and the figures are the same.
	if evalAfter := evalFigures(t, restored, set, env); !reflect.DeepEqual(evalBefore, evalAfter) {
		t.Errorf("eval figures differ after restore:\nbefore %v\nafter  %v", evalBefore, evalAfter)
	}
	startUp(t, restored, env)
	after := observe(t, restored, env)
	compareDrill(t, before, after)
	// check compares the restored index with the notes folder ingest
	// recorded (restored with the KV state) and finds nothing missing.
	if out, errOut, err := exoEnv(t, env, "check", "--data", restored); err != nil || !strings.Contains(out, "no differences") {
		t.Errorf("check after restore: exit %d\n%s\n%s", exitCode(err), out, errOut)
	}

	seqBefore := ingestSeq(t, restored)
	out, errOut, err = exoEnv(t, env, "ingest", vault, "--data", restored, "--json")
	if err != nil {
		t.Fatalf("ingest after restore: %v\n%s", err, errOut)
	}
	if seqAfter := ingestSeq(t, restored); seqAfter != seqBefore {
		t.Errorf("the re-ingest published %d messages on KB_INGEST", seqAfter-seqBefore)
	}
	ing.Files.Sent, ing.Files.Unchanged = -1, -1
	if err := json.Unmarshal([]byte(out), &ing); err != nil || ing.Files.Sent != 0 || ing.Files.Unchanged != 90 || ing.Chunks != before.Chunks {
		t.Errorf("re-ingest after restore = %+v (%v), want nothing sent, 90 unchanged, %d chunks", ing, err, before.Chunks)
	}
	if again := observe(t, restored, env); !reflect.DeepEqual(after, again) {
		t.Errorf("the index changed after the re-ingest")
	}
}

// ingestSeq is the last sequence of the KB_INGEST stream of the system
// running on data.
func ingestSeq(t *testing.T, data string) uint64 {
	t.Helper()
	nc := connectUp(t, data)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KB_INGEST")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// compareDrill fails for every difference between what the knowledge base
// answered before the backup and after the restore.
func compareDrill(t *testing.T, before, after drillView) {
	t.Helper()
	if before.Documents != after.Documents || before.Chunks != after.Chunks || before.Embedded != after.Embedded {
		t.Errorf("counts: before %d documents, %d chunks, %d embedded; after %d, %d, %d",
			before.Documents, before.Chunks, before.Embedded, after.Documents, after.Chunks, after.Embedded)
	}
	for key, ids := range before.Searches {
		if !reflect.DeepEqual(ids, after.Searches[key]) {
			t.Errorf("search %s:\nbefore %v\nafter  %v", key, ids, after.Searches[key])
		} else if !reflect.DeepEqual(before.Scores[key], after.Scores[key]) {
			t.Errorf("search %s scores:\nbefore %v\nafter  %v", key, before.Scores[key], after.Scores[key])
		}
	}
}

// copyDir copies a backup so that each case can damage its own.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRefusesADamagedOrPartialBackupAndAFullDataDirectory(t *testing.T) {
	root := t.TempDir()
	data, vault, backup := filepath.Join(root, "data"), filepath.Join(root, "vault"), filepath.Join(root, "backup")
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar.\n")
	write(t, filepath.Join(vault, "b.md"), "# Ants\n\nAnts carry leaves home.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models")

	if _, errOut, err := exo(t, "backup", "--data", data); exitCode(err) != 2 || !strings.Contains(errOut, "give one backup directory") {
		t.Errorf("backup without DIR: exit %d, %s", exitCode(err), errOut)
	}
	full := filepath.Join(root, "full")
	write(t, filepath.Join(full, "keep.txt"), "mine")
	if _, errOut, err := exo(t, "backup", full, "--data", data); exitCode(err) != 1 || !strings.Contains(errOut, full+" is not empty") {
		t.Errorf("backup into a directory with a file: exit %d, %s", exitCode(err), errOut)
	}
	mustExo(t, "backup", backup, "--data", data, "--quiet")

	// Each case damages a copy of the good backup; restore names the file
	// and writes nothing.
	cases := []struct {
		name, want string
		damage     func(dir string)
	}{
		{"a flipped byte in the index", "exocortex.db is damaged", func(dir string) {
			p := filepath.Join(dir, "exocortex.db")
			raw, _ := os.ReadFile(p)
			raw[len(raw)/2] ^= 0xff
			_ = os.WriteFile(p, raw, 0o600)
		}},
		{"a truncated KV bucket", "KB_SOURCES.jsonl is damaged", func(dir string) {
			p := filepath.Join(dir, "kv", "KB_SOURCES.jsonl")
			raw, _ := os.ReadFile(p)
			_ = os.WriteFile(p, raw[:len(raw)/2], 0o600)
		}},
		{"a missing file", "KB_CHUNKS.jsonl is missing", func(dir string) {
			_ = os.Remove(filepath.Join(dir, "kv", "KB_CHUNKS.jsonl"))
		}},
		{"no manifest (an unfinished backup)", "has no manifest.json", func(dir string) {
			_ = os.Remove(filepath.Join(dir, "manifest.json"))
		}},
		{"a manifest cut short", "manifest.json", func(dir string) {
			p := filepath.Join(dir, "manifest.json")
			raw, _ := os.ReadFile(p)
			_ = os.WriteFile(p, raw[:len(raw)/3], 0o600)
		}},
	}
	for i, c := range cases {
		bad := filepath.Join(root, fmt.Sprintf("bad%d", i))
		copyDir(t, backup, bad)
		c.damage(bad)
		target := filepath.Join(root, fmt.Sprintf("target%d", i))
		_, errOut, err := exo(t, "restore", bad, "--data", target)
		if exitCode(err) != 1 || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: restore exit %d, want 1 with %q:\n%s", c.name, exitCode(err), c.want, errOut)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("%s: restore left %s behind", c.name, target)
		}
		if matches, _ := filepath.Glob(filepath.Join(root, ".target*")); len(matches) > 0 {
			t.Errorf("%s: restore left %v behind", c.name, matches)
		}
	}

	// A data directory that holds anything is refused, and left as it was.
	_, errOut, err := exo(t, "restore", backup, "--data", full)
	if exitCode(err) != 1 || !strings.Contains(errOut, "data directory "+full+" is not empty") {
		t.Errorf("restore into a directory with a file: exit %d, %s", exitCode(err), errOut)
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("restore wrote into the full directory: %v", entries)
	}
	// An existing empty directory is fine.
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	out := mustExo(t, "restore", backup, "--data", empty, "--quiet")
	if !strings.Contains(out, "2 documents, 2 chunks") {
		t.Errorf("restore = %s", out)
	}
	if out := mustExo(t, "search", "honey", "--data", empty, "--json"); !strings.Contains(out, "[honey]") {
		t.Errorf("search after restore: %s", out)
	}
}
