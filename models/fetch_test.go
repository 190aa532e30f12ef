package models_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/exocortex/exocortex/models"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hub serves files under /<repo>/resolve/<rev>/<path> and counts requests.
type hub struct {
	mu    sync.Mutex
	files map[string][]byte
	fail  map[string]int // path -> number of 503s still to send
	hits  atomic.Int64
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.hits.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail[r.URL.Path] > 0 {
		h.fail[r.URL.Path]--
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	b, ok := h.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(b)
}

func (h *hub) set(p string, b []byte) {
	h.mu.Lock()
	h.files[p] = b
	h.mu.Unlock()
}

var (
	onnxBytes = []byte("pretend this is an ONNX graph")
	tokBytes  = []byte(`{"model":{"type":"Unigram"}}`)
)

func testManifest(base string) models.Manifest {
	return models.Manifest{BaseURL: base, Models: []models.Spec{{
		Name: "tiny-e5", Role: models.RoleEmbed, Repo: "org/tiny-e5", Revision: "abc123", Dim: 8,
		ONNX: "onnx/model.onnx", Tokenizer: "tokenizer.json",
		Files: []models.File{
			{Path: "onnx/model.onnx", SHA256: digest(onnxBytes), Size: int64(len(onnxBytes))},
			{Path: "tokenizer.json", SHA256: digest(tokBytes)},
		},
	}}}
}

func newHub(t *testing.T) (*hub, *httptest.Server) {
	h := &hub{files: map[string][]byte{
		"/org/tiny-e5/resolve/abc123/onnx/model.onnx": onnxBytes,
		"/org/tiny-e5/resolve/abc123/tokenizer.json":  tokBytes,
	}, fail: map[string]int{}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func TestFetchVerifiesAndDoesNotDownloadTwice(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	m := testManifest(srv.URL)
	res, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Action != "downloaded" || res[1].Action != "downloaded" {
		t.Fatalf("results = %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(dir, "tiny-e5", "onnx", "model.onnx"))
	if err != nil || string(got) != string(onnxBytes) {
		t.Fatalf("installed model = %q, %v", got, err)
	}
	before := h.hits.Load()
	res, err = models.Fetch(context.Background(), dir, m, models.FetchOptions{})
	if err != nil || res[0].Action != "present" || h.hits.Load() != before {
		t.Fatalf("second fetch = %+v, %v; %d new requests", res, err, h.hits.Load()-before)
	}
	if _, err := models.Verify(dir, m); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

func TestFetchRefusesACorruptedDownloadAndInstallsNothing(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	h.set("/org/tiny-e5/resolve/abc123/tokenizer.json", []byte(`{"model":{"type":"Evil"}}`))
	res, err := models.Fetch(context.Background(), dir, testManifest(srv.URL), models.FetchOptions{})
	if !errors.Is(err, models.ErrDigest) || !strings.Contains(err.Error(), "tiny-e5/tokenizer.json") {
		t.Fatalf("err = %v, want a sha256 mismatch naming the file", err)
	}
	if res[1].Action != "failed" {
		t.Fatalf("results = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "tiny-e5", "tokenizer.json")); !os.IsNotExist(err) {
		t.Fatalf("the corrupted tokenizer was installed (stat: %v)", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "tiny-e5", ".*part"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
	// The good file of the same model was still installed.
	if _, err := os.Stat(filepath.Join(dir, "tiny-e5", "onnx", "model.onnx")); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyFindsAFileCorruptedOnDiskAndFetchRepairsIt(t *testing.T) {
	_, srv := newHub(t)
	dir := t.TempDir()
	m := testManifest(srv.URL)
	if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "tiny-e5", "onnx", "model.onnx")
	if err := os.WriteFile(p, []byte("pretend this is an ONNX graph!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := models.Verify(dir, m); !errors.Is(err, models.ErrDigest) {
		t.Fatalf("verify of a corrupted file = %v, want ErrDigest", err)
	}
	res, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{})
	if err != nil || res[0].Action != "downloaded" {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if _, err := models.Verify(dir, m); err != nil {
		t.Fatal(err)
	}
}

func TestUnpinnedFilesNeedTrustAndAreThenHeldToTheirFirstDigest(t *testing.T) {
	h, srv := newHub(t)
	dir := t.TempDir()
	m := testManifest(srv.URL)
	m.Models[0].Files[1].SHA256 = ""
	_, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{})
	if !errors.Is(err, models.ErrUnpinned) || !strings.Contains(err.Error(), "--trust-new") {
		t.Fatalf("err = %v, want ErrUnpinned with advice", err)
	}
	if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{TrustNew: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := models.Verify(dir, m); err != nil {
		t.Fatalf("verify after a trusted fetch: %v", err)
	}
	// The hub now serves something else for the same revision: refused.
	if err := os.Remove(filepath.Join(dir, "tiny-e5", "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	h.set("/org/tiny-e5/resolve/abc123/tokenizer.json", []byte(`{"swapped":true}`))
	if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{TrustNew: true}); !errors.Is(err, models.ErrDigest) {
		t.Fatalf("a changed unpinned file = %v, want ErrDigest against the lock", err)
	}
}

func TestFetchRetriesTransientErrorsAndNamesAnUnreachableHost(t *testing.T) {
	h, srv := newHub(t)
	h.fail["/org/tiny-e5/resolve/abc123/onnx/model.onnx"] = 1
	dir := t.TempDir()
	if _, err := models.Fetch(context.Background(), dir, testManifest(srv.URL), models.FetchOptions{}); err != nil {
		t.Fatalf("a 503 then success: %v", err)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	_, err := models.Fetch(context.Background(), t.TempDir(), testManifest(url), models.FetchOptions{Attempts: 1})
	if err == nil || !strings.Contains(err.Error(), "models fetch needs to reach") || !strings.Contains(err.Error(), url) {
		t.Fatalf("unreachable hub: %v", err)
	}
}

func TestManifestValidationAndUserManifests(t *testing.T) {
	if err := models.DefaultManifest().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, role := range []string{models.RoleEmbed, models.RoleRerank, models.RoleQA} {
		if _, ok := models.DefaultManifest().Spec(role); !ok {
			t.Errorf("no default for %s", role)
		}
	}
	bad := testManifest("https://example.org")
	bad.Models[0].Files[0].SHA256 = "XYZ"
	bad.Models[0].Files[1].Path = "../escape.json"
	bad.Models = append(bad.Models, bad.Models[0])
	bad.Models[1].Files = []models.File{{Path: "onnx/model.onnx", Repo: "other/repo"}, {Path: "tokenizer.json"}}
	err := bad.Validate()
	for _, want := range []string{"not 64 lower-case hex", "without '..'", "already filled", "onnx/model.onnx: a file fetched from another repository needs both repo and revision"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want it to mention %q", err, want)
		}
	}
	dir := t.TempDir()
	if m, err := models.ManifestFor(dir); err != nil || m.Models[0].Name != "multilingual-e5-small" {
		t.Fatalf("no manifest.json: %v, %v", m.Models, err)
	}
	if err := os.WriteFile(filepath.Join(dir, models.ManifestFile), []byte(`{"models":[{"name":"x","role":"embed","repo":"a/b","revision":"r","dim":4,"onnx":"m.onnx","tokenizer":"t.json","files":[{"path":"m.onnx"},{"path":"t.json"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := models.ManifestFor(dir)
	if err != nil || m.Models[0].Name != "x" || m.BaseURL != models.DefaultBaseURL {
		t.Fatalf("user manifest: %+v, %v", m, err)
	}
	if err := os.WriteFile(filepath.Join(dir, models.ManifestFile), []byte(`{"modles":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := models.ManifestFor(dir); err == nil || !strings.Contains(err.Error(), "modles") {
		t.Fatalf("a typo in manifest.json: %v", err)
	}
}

// withNLI adds an optional nli model to the test manifest and its files to
// the hub.
func withNLI(h *hub, m models.Manifest) models.Manifest {
	cfg := []byte(`{"id2label":{"0":"entailment","1":"neutral","2":"contradiction"}}`)
	h.set("/org/tiny-nli/resolve/def456/model.onnx", onnxBytes)
	h.set("/org/tiny-nli/resolve/def456/tokenizer.json", tokBytes)
	h.set("/org/tiny-nli/resolve/def456/config.json", cfg)
	m.Models = append(m.Models, models.Spec{
		Name: "tiny-nli", Role: models.RoleNLI, Repo: "org/tiny-nli", Revision: "def456", Optional: true,
		ONNX: "model.onnx", Tokenizer: "tokenizer.json", Config: "config.json",
		Files: []models.File{
			{Path: "model.onnx", SHA256: digest(onnxBytes)},
			{Path: "tokenizer.json", SHA256: digest(tokBytes)},
			{Path: "config.json", SHA256: digest(cfg), Size: int64(len(cfg))},
		},
	})
	return m
}

func TestAnOptionalModelIsFetchedOnlyWhenAskedAndIsNoFaultWhileAbsent(t *testing.T) {
	fetched := func(res []models.FileResult) map[string]int {
		n := map[string]int{}
		for _, r := range res {
			n[r.Model]++
		}
		return n
	}
	tests := []struct {
		name string
		opts models.FetchOptions
		want map[string]int // files per model
	}{
		{"by default the optional model is left out", models.FetchOptions{}, map[string]int{"tiny-e5": 2}},
		{"--with nli adds it to the defaults", models.FetchOptions{With: []string{models.RoleNLI}}, map[string]int{"tiny-e5": 2, "tiny-nli": 3}},
		{"--role nli fetches it alone", models.FetchOptions{Roles: []string{models.RoleNLI}}, map[string]int{"tiny-nli": 3}},
		{"--role embed --with nli fetches both", models.FetchOptions{Roles: []string{models.RoleEmbed}, With: []string{"NLI"}}, map[string]int{"tiny-e5": 2, "tiny-nli": 3}},
		{"--with names a role, not every optional model", models.FetchOptions{With: []string{models.RoleQA}}, map[string]int{"tiny-e5": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, srv := newHub(t)
			m := withNLI(h, testManifest(srv.URL))
			dir := t.TempDir()
			res, err := models.Fetch(context.Background(), dir, m, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := fetched(res)
			if len(got) != len(tt.want) || got["tiny-e5"] != tt.want["tiny-e5"] || got["tiny-nli"] != tt.want["tiny-nli"] {
				t.Fatalf("fetched %v, want %v", got, tt.want)
			}
			_, nliThere := tt.want["tiny-nli"]
			if models.Installed(dir, m.Models[1]) != nliThere {
				t.Errorf("Installed(nli) = %v, want %v", !nliThere, nliThere)
			}
			// Verify passes whether or not the optional model was fetched,
			// and checks it when it was.
			res, err = models.Verify(dir, m)
			if tt.want["tiny-e5"] == 0 {
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("verify without the required model: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if got := fetched(res); got["tiny-nli"] != tt.want["tiny-nli"] {
				t.Errorf("verify checked %v", got)
			}
		})
	}
}

func TestAPartlyInstalledOptionalModelFailsVerify(t *testing.T) {
	h, srv := newHub(t)
	m := withNLI(h, testManifest(srv.URL))
	dir := t.TempDir()
	if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{With: []string{models.RoleNLI}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "tiny-nli", "config.json")); err != nil {
		t.Fatal(err)
	}
	_, err := models.Verify(dir, m)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "tiny-nli/config.json") {
		t.Fatalf("verify = %v, want the missing config.json named", err)
	}
	if models.Installed(dir, m.Models[1]) {
		t.Error("a model without its config.json is seen as installed")
	}
}

func TestTheDefaultNLIModelIsOptionalAndPinned(t *testing.T) {
	spec, ok := models.DefaultManifest().Spec(models.RoleNLI)
	if !ok {
		t.Fatal("no default nli model")
	}
	if !spec.Optional || spec.Config == "" || len(spec.Revision) != 40 || spec.License == "" {
		t.Errorf("nli spec %+v: want optional, a config.json, a commit revision and a licence", spec)
	}
	for _, f := range spec.Files {
		if len(f.SHA256) != 64 || f.Size <= 0 {
			t.Errorf("%s: not pinned by digest and size: %+v", spec.Name, f)
		}
	}
	bad := models.Manifest{BaseURL: "https://example.org", Models: []models.Spec{spec}}
	bad.Models[0].Config = ""
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "an nli model needs config") {
		t.Errorf("an nli model without config.json: %v", err)
	}
	bad.Models[0].Config = "elsewhere/config.json"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `config "elsewhere/config.json" is not among its files`) {
		t.Errorf("a config.json that is not fetched: %v", err)
	}
}

func TestTheHubURLIsTheFlagElseTheEnvironmentElseTheManifests(t *testing.T) {
	m := testManifest("https://mirror.example/hf")
	tests := []struct {
		name, flag, env, want string
	}{
		{"the manifest's base_url by default", "", "", "https://mirror.example/hf"},
		{"EXOCORTEX_HUB_URL over the manifest", "", "http://127.0.0.1:9", "http://127.0.0.1:9"},
		{"--hub-url over both", "http://hub.local", "http://127.0.0.1:9", "http://hub.local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(models.EnvHubURL, tt.env)
			if got := models.HubURL(tt.flag, m); got != tt.want {
				t.Errorf("HubURL = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFetchAsksForAFileOfAnotherRepositoryThere(t *testing.T) {
	h, srv := newHub(t)
	m := testManifest(srv.URL)
	m.Models[0].Files[1].Repo, m.Models[0].Files[1].Revision = "org/shared-tokenizer", "fed987"
	h.set("/org/shared-tokenizer/resolve/fed987/tokenizer.json", tokBytes)
	h.set("/org/tiny-e5/resolve/abc123/tokenizer.json", []byte(`{"not":"this one"}`))
	dir := t.TempDir()
	if _, err := models.Fetch(context.Background(), dir, m, models.FetchOptions{}); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "tiny-e5", "tokenizer.json")); string(got) != string(tokBytes) {
		t.Errorf("installed tokenizer %q, want the other repository's", got)
	}
}
