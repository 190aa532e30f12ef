package modeltest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/models"
)

// Hub is a fake of the Hugging Face hub for tests. It serves the files of
// its directory, laid out as <Dir>/<owner>/<name>/<revision>/<path>, at
// /<owner>/<name>/resolve/<revision>/<path> the way the hub does: a file
// stored in LFS there (an .onnx graph, a tokenizer.json) is answered with a
// 302 to its content-addressed storage (/cdn/<sha256>?...), which serves it
// with Range support; any other file is served at once; a path it does not
// hold is a 404 with the hub's "Entry not found". CutOnce makes the next
// download of a file break halfway, as a dropped connection does.
type Hub struct {
	URL string
	Dir string

	mu       sync.Mutex
	cut      map[string]int64 // sha256 -> break after this many bytes, once
	requests []HubRequest
}

// HubRequest is one request the hub answered.
type HubRequest struct {
	Path   string // the URL path
	Range  string // the Range header, if any
	Status int
	// Bytes is what the response body carried (cut short by CutOnce).
	Bytes int64
}

// NewHub starts a fake hub serving dir (a fresh one when dir is ""); it
// stops at the end of the test.
func NewHub(tb testing.TB, dir string) *Hub {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	h := &Hub{Dir: dir, cut: map[string]int64{}}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// Put stores data as path of repo at revision.
func (h *Hub) Put(tb testing.TB, repo, revision, p string, data []byte) {
	tb.Helper()
	dst := filepath.Join(h.Dir, filepath.FromSlash(repo), revision, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Remove deletes path of repo at revision, so that the hub answers 404.
func (h *Hub) Remove(tb testing.TB, repo, revision, p string) {
	tb.Helper()
	if err := os.Remove(filepath.Join(h.Dir, filepath.FromSlash(repo), revision, filepath.FromSlash(p))); err != nil {
		tb.Fatal(err)
	}
}

// CutOnce makes the next response carrying the file with this content
// break after `after` bytes (the connection is dropped mid-body).
func (h *Hub) CutOnce(content []byte, after int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut[digestOf(content)] = after
}

// Requests returns what the hub answered so far.
func (h *Hub) Requests() []HubRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HubRequest(nil), h.requests...)
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// lfs says whether the hub keeps a file in LFS (and so redirects to it).
func lfs(p string) bool {
	return strings.HasSuffix(p, ".onnx") || path.Base(p) == "tokenizer.json"
}

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		h.mu.Lock()
		h.requests = append(h.requests, HubRequest{Path: r.URL.Path, Range: r.Header.Get("Range"), Status: rec.status, Bytes: rec.n})
		h.mu.Unlock()
	}()
	if sum, ok := strings.CutPrefix(r.URL.Path, "/cdn/"); ok {
		h.serveBlob(rec, r, sum)
		return
	}
	// /<owner>/<name>/resolve/<revision>/<path>
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(rec, r)
		return
	}
	repo, rev, p := parts[0]+"/"+parts[1], parts[3], parts[4]
	data, err := os.ReadFile(filepath.Join(h.Dir, filepath.FromSlash(repo), rev, filepath.FromSlash(p)))
	if err != nil {
		rec.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(rec, "Entry not found", http.StatusNotFound)
		return
	}
	sum := digestOf(data)
	if lfs(p) {
		rec.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		rec.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		http.Redirect(rec, r, "/cdn/"+sum+"?X-Amz-Expires=3600&response-content-disposition=attachment", http.StatusFound)
		return
	}
	rec.Header().Set("ETag", `"`+sum+`"`)
	h.serve(rec, r, p, data)
}

// serveBlob answers the storage URL the hub redirects to.
func (h *Hub) serveBlob(w *recorder, r *http.Request, sum string) {
	var found []byte
	_ = filepath.WalkDir(h.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != nil {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && digestOf(b) == sum {
			found = b
		}
		return nil
	})
	if found == nil {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	h.serve(w, r, sum, found)
}

// serve writes data with Range support, breaking it off where CutOnce says.
func (h *Hub) serve(w *recorder, r *http.Request, name string, data []byte) {
	h.mu.Lock()
	after, cut := h.cut[digestOf(data)]
	delete(h.cut, digestOf(data))
	h.mu.Unlock()
	if cut {
		w.cutAfter = after
	}
	http.ServeContent(w, r, path.Base(name), time.Time{}, bytes.NewReader(data))
}

// recorder notes the status and body bytes of a response, and drops the
// connection after cutAfter body bytes when it is set.
type recorder struct {
	http.ResponseWriter
	status   int
	n        int64
	cutAfter int64
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.cutAfter > 0 && r.n+int64(len(b)) > r.cutAfter {
		keep := r.cutAfter - r.n
		n, _ := r.ResponseWriter.Write(b[:keep])
		r.n += int64(n)
		if f, ok := r.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the server drops the connection mid-body
	}
	n, err := r.ResponseWriter.Write(b)
	r.n += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// DefaultsOnHub puts the generated models of dir (Dir's output) on a fake
// hub at the repositories, revisions and paths of models.DefaultManifest,
// and returns the hub with a manifest that is the default one but for the
// digests and sizes (the generated files') and the embedding size: the
// shape of what models fetch downloads, with files that run here. Roles
// the generated directory lacks are left out of the manifest.
func DefaultsOnHub(tb testing.TB, dir string) (*Hub, models.Manifest) {
	tb.Helper()
	gen, err := models.ManifestFor(dir)
	if err != nil {
		tb.Fatal(err)
	}
	hub := NewHub(tb, "")
	def := models.DefaultManifest()
	m := models.Manifest{BaseURL: models.DefaultBaseURL}
	for _, s := range def.Models {
		g, ok := gen.Spec(s.Role)
		if !ok {
			continue
		}
		from := map[string]string{s.ONNX: g.ONNX, s.Tokenizer: g.Tokenizer}
		if s.Config != "" {
			from[s.Config] = g.Config
		}
		files := make([]models.File, 0, len(s.Files))
		for _, f := range s.Files {
			src, ok := from[f.Path]
			if !ok {
				tb.Fatalf("default %s: no generated file stands for %s", s.Name, f.Path)
			}
			data, err := os.ReadFile(filepath.Join(dir, g.Name, filepath.FromSlash(src)))
			if err != nil {
				tb.Fatal(err)
			}
			repo, rev := s.Source(f)
			hub.Put(tb, repo, rev, f.Path, data)
			f.SHA256, f.Size = digestOf(data), int64(len(data))
			files = append(files, f)
		}
		s.Files = files
		if s.Role == models.RoleEmbed {
			s.Dim = g.Dim
		}
		m.Models = append(m.Models, s)
	}
	if err := m.Validate(); err != nil {
		tb.Fatal(err)
	}
	return hub, m
}

// WriteManifest writes m as the models directory's manifest.json.
func WriteManifest(tb testing.TB, modelsDir string, m models.Manifest) {
	tb.Helper()
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(modelsDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modelsDir, models.ManifestFile), raw, 0o644); err != nil {
		tb.Fatal(err)
	}
}
