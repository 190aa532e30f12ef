package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
)

// TestModelsFetchFromTheHubThenVerifyThenUpGivesAnExtractiveAnswer is a
// user's first day: a fresh data directory, models fetch from the hub (a
// fake one serving generated models of the real signatures at the default
// manifest's repositories, commits and paths), models verify, up without a
// language model, and ask, answered by the extractive model. The hub first
// misbehaves as the real one can: a file is missing (404), one is not what
// was pinned (sha256 mismatch), and the connection drops in the middle of
// the QA graph, which the hub serves through a redirect to its storage;
// nothing unverified is installed, the broken download is resumed, and a
// second fetch completes what failed.
func TestModelsFetchFromTheHubThenVerifyThenUpGivesAnExtractiveAnswer(t *testing.T) {
	t.Parallel()
	gen := modeltest.Dir(t, modeltest.Options{})
	hub, m := modeltest.DefaultsOnHub(t, gen)
	data := t.TempDir()
	// The manifest is the defaults' but for the digests, which are the
	// generated files' (the real ones are checked against the hub's
	// listings in the models package).
	modeltest.WriteManifest(t, filepath.Join(data, "models"), m)
	cal := filepath.Join(t.TempDir(), "calibration.json")
	// The generated QA model has random weights: its span scores are
	// trusted whatever they are, as a calibration can say.
	write(t, cal, `{"qa":{"method":"platt","a":0,"b":-3,"threshold":0.5}}`)
	env := []string{"EXOCORTEX_HUB_URL=" + hub.URL, "EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_MODEL=", "EXOCORTEX_LLM_CONFIG=",
		"EXOCORTEX_CALIBRATION=" + cal}

	embed, _ := m.Spec(models.RoleEmbed)
	rerank, _ := m.Spec(models.RoleRerank)
	qa, _ := m.Spec(models.RoleQA)
	file := func(s models.Spec, p string) (repo, rev string, data []byte) {
		for _, f := range s.Files {
			if f.Path == p {
				repo, rev = s.Source(f)
				b, err := os.ReadFile(filepath.Join(hub.Dir, filepath.FromSlash(repo), rev, filepath.FromSlash(p)))
				if err != nil {
					t.Fatal(err)
				}
				return repo, rev, b
			}
		}
		t.Fatalf("%s has no %s", s.Name, p)
		return
	}
	// The reranker's graph is missing: 404.
	rrRepo, rrRev, rrGraph := file(rerank, rerank.ONNX)
	hub.Remove(t, rrRepo, rrRev, rerank.ONNX)
	// The embedding model's tokenizer has one byte changed: sha256 mismatch.
	emRepo, emRev, emTok := file(embed, embed.Tokenizer)
	bad := append([]byte(nil), emTok...)
	bad[len(bad)/2] ^= 1
	hub.Put(t, emRepo, emRev, embed.Tokenizer, bad)
	// The connection drops halfway through the QA graph.
	_, _, qaGraph := file(qa, qa.ONNX)
	hub.CutOnce(qaGraph, int64(len(qaGraph)/2))

	out, errOut, err := exoEnv(t, env, "models", "fetch", "--data", data)
	if err == nil {
		t.Fatalf("a fetch with a missing and a tampered file succeeded:\n%s\n%s", out, errOut)
	}
	for _, want := range []string{
		"failed     mmarco-mMiniLMv2-L12-H384-v1/onnx/model_quint8_avx2.onnx",
		"/cross-encoder/mmarco-mMiniLMv2-L12-H384-v1/resolve/1427fd652930e4ba29e8149678df786c240d8825/onnx/model_quint8_avx2.onnx: HTTP 404",
		"failed     multilingual-e5-small/tokenizer.json",
		"multilingual-e5-small/tokenizer.json: sha256 mismatch",
		"downloaded xlm-roberta-base-squad2/model_optimized.onnx",
		"downloaded xlm-roberta-base-squad2/tokenizer.json",
		"downloaded multilingual-e5-small/onnx/model_qint8_avx512_vnni.onnx",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the first fetch does not say %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "fetching 3 models into "+filepath.Join(data, "models")+" from "+hub.URL) ||
		!strings.Contains(errOut, "2 of 6 files failed") || !strings.Contains(errOut, "run exocortex models fetch again") {
		t.Errorf("the first fetch's summary:\n%s", errOut)
	}
	// Progress: each file's last line gives its bytes, time and rate; the
	// QA graph's says where it resumed.
	if !regexp.MustCompile(`xlm-roberta-base-squad2/model_optimized\.onnx  [0-9.]+ [kM]B of [0-9.]+ [kM]B \(100%\), resumed at [0-9.]+ [kM]B in [0-9.]+m?s  [0-9.]+ [kMG]?B/s`).MatchString(errOut) {
		t.Errorf("no progress line for the resumed QA graph:\n%s", errOut)
	}
	var redirected, resumed bool
	for _, q := range hub.Requests() {
		redirected = redirected || strings.HasSuffix(q.Path, "/model_optimized.onnx") && q.Status == http.StatusFound
		resumed = resumed || q.Range != "" && q.Status == http.StatusPartialContent
	}
	if !redirected || !resumed {
		t.Errorf("the QA graph was redirected %v, resumed with Range %v: %+v", redirected, resumed, hub.Requests())
	}
	if _, err := os.Stat(filepath.Join(data, "models", "multilingual-e5-small", "tokenizer.json")); !os.IsNotExist(err) {
		t.Errorf("the tampered tokenizer was installed (%v)", err)
	}
	if out, _, err := exoEnv(t, env, "models", "verify", "--data", data); err == nil {
		t.Errorf("verify passed with two files missing:\n%s", out)
	}

	// The hub is right again: a second fetch gets what failed, and only that.
	hub.Put(t, rrRepo, rrRev, rerank.ONNX, rrGraph)
	hub.Put(t, emRepo, emRev, embed.Tokenizer, emTok)
	before := len(hub.Requests())
	out, errOut, err = exoEnv(t, env, "models", "fetch", "--data", data)
	if err != nil {
		t.Fatalf("the second fetch: %v\n%s\n%s", err, out, errOut)
	}
	if strings.Count(out, "downloaded ") != 2 || strings.Count(out, "present    ") != 4 || len(hub.Requests())-before != 4 {
		t.Errorf("the second fetch downloaded more than what failed (%d requests):\n%s", len(hub.Requests())-before, out)
	}
	if out, errOut, err := exoEnv(t, env, "models", "verify", "--data", data); err != nil || strings.Count(out, "present ") != 6 {
		t.Fatalf("verify: %v\n%s\n%s", err, out, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "models", "*", ".*.part")); len(left) != 0 {
		t.Errorf("part files left: %v", left)
	}

	vault := t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use sticks as tools to get food.\n")
	write(t, filepath.Join(vault, "ptitsy.md"), "# Птицы\n\nВороны используют палки как орудия, чтобы добыть еду.\n")
	if _, errOut, err := exoEnv(t, env, "ingest", vault, "--data", data, "--quiet"); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errOut)
	}
	startUp(t, data, env)
	for _, q := range []string{"What do crows use?", "Что используют вороны?"} {
		out, errOut, err := exoEnv(t, env, "ask", q, "--data", data, "--json")
		if err != nil {
			t.Fatalf("ask %q: %v\n%s", q, err, errOut)
		}
		var done struct {
			Mode      string   `json:"mode"`
			Answer    string   `json:"answer"`
			Reasons   []string `json:"reasons"`
			Citations []struct {
				BlockID string `json:"block_id"`
				Quote   string `json:"quote"`
			} `json:"citations"`
		}
		if err := json.Unmarshal([]byte(out), &done); err != nil {
			t.Fatalf("ask --json: %v\n%s", err, out)
		}
		if done.Mode != "extractive" || done.Answer == "" || len(done.Citations) != 1 || !strings.Contains(done.Citations[0].Quote, done.Answer) ||
			!strings.Contains(strings.Join(done.Reasons, " "), "no_llm_provider") {
			t.Errorf("ask %q without a provider = %+v, want an extractive span cited to its block", q, done)
		}
	}
}
