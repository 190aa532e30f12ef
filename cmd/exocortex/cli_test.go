package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
