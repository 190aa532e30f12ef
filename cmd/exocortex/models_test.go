package main_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/models/modeltest"
)

func TestModelsFetchInstallsVerifiedFilesAndRefusesACorruptedOne(t *testing.T) {
	t.Parallel()
	good := []byte("onnx bytes")
	sum := sha256.Sum256(good)
	served := map[string][]byte{
		"/org/m/resolve/rev1/model.onnx":     good,
		"/org/m/resolve/rev1/tokenizer.json": []byte(`{"tampered":true}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := served[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	manifest := `{"base_url":"` + srv.URL + `","models":[{"name":"m","role":"embed","repo":"org/m","revision":"rev1","dim":4,
	  "onnx":"model.onnx","tokenizer":"tokenizer.json","files":[
	    {"path":"model.onnx","sha256":"` + hex.EncodeToString(sum[:]) + `"},
	    {"path":"tokenizer.json","sha256":"` + strings.Repeat("ab", 32) + `"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := exo(t, "models", "fetch", "--models", dir)
	if err == nil {
		t.Fatalf("a corrupted file was accepted:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "sha256 mismatch") || !strings.Contains(errOut, "1 of 2 files failed") {
		t.Errorf("fetch output does not say what failed:\n%s\n%s", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "m", "tokenizer.json")); !os.IsNotExist(err) {
		t.Errorf("the corrupted tokenizer was installed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "m", "model.onnx")); err != nil {
		t.Errorf("the good file was not installed: %v", err)
	}
	if out, _, err := exo(t, "models", "verify", "--models", dir); err == nil || !strings.Contains(out, "tokenizer.json") {
		t.Errorf("verify of an incomplete directory passed: %s", out)
	}
	if out := mustExo(t, "models", "list", "--models", dir); !strings.Contains(out, "installed") || !strings.Contains(out, "onnx runtime:") {
		t.Errorf("models list = %s", out)
	}
}

func TestModelsFetchLeavesTheOptionalNLIModelOutUntilAskedWithWith(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"/org/m/resolve/rev1/model.onnx":       []byte("embed onnx"),
		"/org/m/resolve/rev1/tokenizer.json":   []byte(`{"t":1}`),
		"/org/nli/resolve/rev2/model.onnx":     []byte("nli onnx"),
		"/org/nli/resolve/rev2/tokenizer.json": []byte(`{"t":2}`),
		"/org/nli/resolve/rev2/config.json":    []byte(`{"id2label":{"0":"entailment","1":"neutral","2":"contradiction"}}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := files[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	pin := func(p string) string {
		sum := sha256.Sum256(files[p])
		return hex.EncodeToString(sum[:])
	}
	dir := t.TempDir()
	manifest := `{"base_url":"` + srv.URL + `","models":[
	  {"name":"m","role":"embed","repo":"org/m","revision":"rev1","dim":4,"onnx":"model.onnx","tokenizer":"tokenizer.json","files":[
	    {"path":"model.onnx","sha256":"` + pin("/org/m/resolve/rev1/model.onnx") + `"},
	    {"path":"tokenizer.json","sha256":"` + pin("/org/m/resolve/rev1/tokenizer.json") + `"}]},
	  {"name":"nli","role":"nli","optional":true,"repo":"org/nli","revision":"rev2","onnx":"model.onnx","tokenizer":"tokenizer.json","config":"config.json","files":[
	    {"path":"model.onnx","sha256":"` + pin("/org/nli/resolve/rev2/model.onnx") + `"},
	    {"path":"tokenizer.json","sha256":"` + pin("/org/nli/resolve/rev2/tokenizer.json") + `"},
	    {"path":"config.json","sha256":"` + pin("/org/nli/resolve/rev2/config.json") + `"}]}]}`
	write(t, filepath.Join(dir, "manifest.json"), manifest)
	if out, errOut, err := exo(t, "models", "fetch", "--models", dir); err != nil || strings.Contains(out, "nli/") || !strings.Contains(errOut, "fetching 1 model ") {
		t.Fatalf("fetch without --with: %v\n%s\n%s", err, out, errOut)
	}
	if out, _, err := exo(t, "models", "verify", "--models", dir); err != nil {
		t.Errorf("verify without the optional model failed: %v\n%s", err, out)
	}
	if out := mustExo(t, "models", "list", "--models", dir); !strings.Contains(out, "missing") || !strings.Contains(out, "exocortex models fetch --with nli") {
		t.Errorf("models list does not say how to get the optional model:\n%s", out)
	}
	out, errOut, err := exo(t, "models", "fetch", "--models", dir, "--with", "nli")
	if err != nil || !strings.Contains(out, "downloaded nli/config.json") || !strings.Contains(out, "present    m/model.onnx") {
		t.Fatalf("fetch --with nli: %v\n%s\n%s", err, out, errOut)
	}
	if out := mustExo(t, "models", "verify", "--models", dir); !strings.Contains(out, "nli/config.json") {
		t.Errorf("verify does not check the fetched optional model:\n%s", out)
	}
}

func TestSearchRunsEachModeWithModelsAndEvalReportsThem(t *testing.T) {
	t.Parallel()
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	data := t.TempDir()
	vault := t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n\n## Owls\n\nOwls hunt at night.\n")
	write(t, filepath.Join(vault, "garden.md"), "# Garden\n\nTomatoes need sun and water.\n")
	mustExo(t, "ingest", vault, "--data", data, "--models", modelsDir, "--quiet")
	type result struct {
		Source  string          `json:"source"`
		Lexical json.RawMessage `json:"lexical"`
		Vector  json.RawMessage `json:"vector"`
	}
	for _, mode := range []string{"lexical", "vector", "hybrid", "rerank"} {
		var res struct {
			Mode    string   `json:"mode"`
			Results []result `json:"results"`
		}
		out := mustExo(t, "search", "crows tools", "--mode", mode, "--data", data, "--models", modelsDir, "--json")
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("search --mode %s: %v\n%s", mode, err, out)
		}
		if res.Mode != mode || len(res.Results) == 0 {
			t.Fatalf("search --mode %s ran %s with %d results", mode, res.Mode, len(res.Results))
		}
		r := res.Results[0]
		switch mode {
		case "lexical":
			if r.Lexical == nil || r.Vector != nil {
				t.Errorf("lexical result %+v", r)
			}
		case "vector":
			if r.Vector == nil || r.Lexical != nil {
				t.Errorf("vector result %+v", r)
			}
		case "rerank":
			if r.Source != "rerank" {
				t.Errorf("rerank result %+v", r)
			}
		}
	}
	var ev struct {
		Runs []struct {
			Mode     string `json:"mode"`
			N        int    `json:"n"`
			Embedded int    `json:"embedded"`
		} `json:"runs"`
		FusionGain []json.RawMessage `json:"fusion_gain"`
	}
	set := filepath.Join(t.TempDir(), "gold.jsonl")
	write(t, set, `{"question":"who uses tools","gold":["`+docID(t, data, "crows")+`"]}`+"\n")
	out := mustExo(t, "eval", "--set", set, "--ingest", vault, "--models", modelsDir, "--mode", "lexical,vector,hybrid,rerank", "--json")
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	if len(ev.Runs) != 4 || len(ev.FusionGain) != 1 || ev.Runs[1].Mode != "vector" || ev.Runs[1].Embedded == 0 {
		t.Errorf("eval runs = %+v, gain %d\n%s", ev.Runs, len(ev.FusionGain), out)
	}
}

// docID finds the document holding a word through lexical search.
func docID(t *testing.T, data, word string) string {
	var res struct {
		Results []struct {
			DocID string `json:"doc_id"`
		} `json:"results"`
	}
	out := mustExo(t, "search", word, "--mode", "lexical", "--data", data, "--no-models", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Results) == 0 {
		t.Fatalf("search %s: %v %s", word, err, out)
	}
	return res.Results[0].DocID
}

func TestAskWithoutAProviderAnswersFromThePassagesAndSaysSo(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	vault := t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	var done struct {
		Mode      string   `json:"mode"`
		Answer    string   `json:"answer"`
		Reasons   []string `json:"reasons"`
		Citations []struct {
			BlockID string `json:"block_id"`
		} `json:"citations"`
		Confidence float64 `json:"confidence"`
	}
	out := mustExo(t, "ask", "what do crows use?", "--data", data, "--no-models", "--json")
	if err := json.Unmarshal([]byte(out), &done); err != nil {
		t.Fatalf("ask --json: %v\n%s", err, out)
	}
	if done.Mode != "search_only" || len(done.Citations) == 0 || done.Citations[0].BlockID == "" ||
		!strings.Contains(strings.Join(done.Reasons, " "), "no_llm_provider") {
		t.Errorf("ask without a provider = %+v", done)
	}
	out = mustExo(t, "ask", "what do crows use?", "--data", data, "--no-models")
	if !strings.Contains(out, "mode: search_only") || !strings.Contains(out, "**Crows**") {
		t.Errorf("ask output:\n%s", out)
	}
}

func TestAskingTwiceAnswersFromTheCacheAndStatusShowsTheHitRate(t *testing.T) {
	t.Parallel()
	modelsDir := modeltest.Dir(t, modeltest.Options{NoQA: true})
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--models", modelsDir, "--quiet")
	srv := llmtest.New(t)
	srv.SetAnswer("Crows use tools to get food [1].")
	ask := func() string {
		cmd := exec.Command(binary, "ask", "What do crows use?", "--data", data, "--models", modelsDir, "--json")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_LLM_BASE_URL="+srv.URL(), "EXOCORTEX_LLM_MODEL=m")
		if err := cmd.Run(); err != nil {
			t.Fatalf("ask: %v\n%s", err, e.String())
		}
		var done struct {
			Mode string `json:"mode"`
		}
		if err := json.Unmarshal(o.Bytes(), &done); err != nil {
			t.Fatalf("ask --json: %v\n%s", err, o.String())
		}
		return done.Mode
	}
	if m := ask(); m != "llm" {
		t.Fatalf("first ask: mode %s", m)
	}
	if m := ask(); m != "cache" {
		t.Fatalf("the same question again: mode %s", m)
	}
	var st struct {
		Cache *struct {
			Entries int     `json:"entries"`
			Hits    int64   `json:"hits"`
			HitRate float64 `json:"hit_rate"`
		} `json:"answer_cache"`
	}
	out := mustExo(t, "status", "--data", data, "--models", modelsDir, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Cache == nil || st.Cache.Entries != 1 || st.Cache.Hits != 1 || st.Cache.HitRate != 0.5 {
		t.Errorf("status: %v\n%s", err, out)
	}
	if out := mustExo(t, "status", "--data", data, "--models", modelsDir); !strings.Contains(out, "answer cache: 1 answer, hit rate 50.0% (1 hit, 1 miss)") {
		t.Errorf("status:\n%s", out)
	}
}
