package main_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models/modeltest"
)

func TestRerankSettingsAreCheckedAndEvalScoresWithThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rerank-candidates", "5"}, `invalid value "5" for flag --rerank-candidates: at least 20 (the fused top 20 are always reranked)`},
		{[]string{"--rerank-tokens", "8"}, `invalid value "8" for flag --rerank-tokens: want 32 to 512`},
	} {
		args := append([]string{"search", "--data", t.TempDir(), "--no-models"}, append(tc.args, "crows")...)
		_, errOut, err := exo(t, args...)
		if code := exitCode(err); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("search %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}

	mdir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	set := filepath.Join(t.TempDir(), "tiny.json")
	write(t, set, `{"version":"v2.0","data":[{"title":"Cats","paragraphs":[
	 {"context":"Cats sleep for most of the day and hunt at dusk.","qas":[
	   {"id":"q1","question":"When do cats hunt?","answers":[{"text":"at dusk","answer_start":38}]}]},
	 {"context":"Dogs bark at strangers and guard the house.","qas":[
	   {"id":"q3","question":"What do dogs guard?","answers":[{"text":"the house","answer_start":33}]}]}]}]}`)
	out, errOut, err := exo(t, "eval", "--set", set, "--models", mdir, "--mode", "rerank", "--json",
		"--rerank-candidates", "20", "--rerank-tokens", "48", "--rerank-window=false")
	if err != nil {
		t.Fatalf("eval with rerank settings: %v\n%s\n%s", err, out, errOut)
	}
	var ev struct {
		Mode   string  `json:"mode"`
		Recall float64 `json:"recall_at_5"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.Mode != "rerank" || ev.Recall == 0 {
		t.Errorf("eval --mode rerank with rerank settings: %v\n%s\n%s", err, out, errOut)
	}
}
