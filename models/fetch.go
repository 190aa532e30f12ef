package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// ErrDigest is returned (wrapped) when a file's sha256 is not the pinned one.
var ErrDigest = errors.New("sha256 mismatch")

// ErrUnpinned is returned (wrapped) for a file without a pinned digest when
// FetchOptions.TrustNew is not set.
var ErrUnpinned = errors.New("no pinned sha256")

// FetchOptions tune Fetch.
type FetchOptions struct {
	// Roles limits the fetch to these roles (all but the optional ones when
	// empty). An optional model named here is fetched.
	Roles []string
	// With adds these optional roles (e.g. "nli") to the models fetched.
	With []string
	// TrustNew accepts a file without a pinned digest and records the digest
	// of what was downloaded in the model's lock file.
	TrustNew bool
	// Client is the HTTP client (a 30-minute timeout per file by default).
	Client *http.Client
	// Attempts per file for transient failures (default 3).
	Attempts int
	// Progress, when set, is called as bytes arrive.
	Progress func(model, file string, done, total int64)
}

// FileResult is what Fetch did with one file.
type FileResult struct {
	Model  string
	Path   string
	SHA256 string
	Bytes  int64
	// Action is "downloaded", "present" (already there with the right digest)
	// or "failed".
	Action string
	Err    error
}

// LockFile records, per model directory, the digests of files fetched without
// a pinned digest, so a later fetch or verify holds them to it.
const LockFile = "lock.json"

type lock struct {
	Repo     string            `json:"repo"`
	Revision string            `json:"revision"`
	Files    map[string]string `json:"files"`
}

// Fetch downloads every file of the manifest's models (the optional ones
// only when opts.Roles or opts.With name their role) into dir/<model>/,
// verifying each one's sha256 before it is moved into place: a corrupted or
// tampered download is deleted and reported, never installed. Files already
// present with the right digest are not downloaded again. It returns one
// result per file and an error joining every failure.
func Fetch(ctx context.Context, dir string, m Manifest, opts FetchOptions) ([]FileResult, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 30 * time.Minute}
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	var results []FileResult
	var errs []error
	for _, s := range m.Models {
		if !opts.Wants(s) {
			continue
		}
		mdir := filepath.Join(dir, s.Name)
		lk := readLock(mdir)
		changed := false
		for _, f := range s.Files {
			want := f.SHA256
			if want == "" {
				want = lk.Files[f.Path]
			}
			res := FileResult{Model: s.Name, Path: f.Path}
			dst := filepath.Join(mdir, filepath.FromSlash(f.Path))
			if want != "" {
				if got, n, err := fileDigest(dst); err == nil && got == want {
					res.SHA256, res.Bytes, res.Action = got, n, "present"
					results = append(results, res)
					continue
				}
			} else if !opts.TrustNew {
				res.Action = "failed"
				res.Err = fmt.Errorf("%s/%s: %w in the manifest; run with --trust-new to accept the download and record its digest, or pin one in %s",
					s.Name, f.Path, ErrUnpinned, filepath.Join(dir, ManifestFile))
				results, errs = append(results, res), append(errs, res.Err)
				continue
			}
			u, err := fileURL(m.BaseURL, s, f)
			if err == nil {
				res.SHA256, res.Bytes, err = download(ctx, opts, u, dst, want, f.Size, s.Name, f.Path)
			}
			if err != nil {
				res.Action, res.Err = "failed", err
				results, errs = append(results, res), append(errs, err)
				continue
			}
			res.Action = "downloaded"
			results = append(results, res)
			if f.SHA256 == "" && lk.Files[f.Path] != res.SHA256 {
				lk.Files[f.Path] = res.SHA256
				changed = true
			}
		}
		if changed {
			lk.Repo, lk.Revision = s.Repo, s.Revision
			if err := writeLock(mdir, lk); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return results, errors.Join(errs...)
}

// Wants reports whether Fetch fetches s under these options.
func (o FetchOptions) Wants(s Spec) bool {
	if len(o.Roles) > 0 {
		return contains(o.Roles, s.Role) || contains(o.With, s.Role)
	}
	return !s.Optional || contains(o.With, s.Role)
}

// Verify checks the installed files of every model against their pinned (or
// locked) digests without downloading anything. A missing file is reported
// with os.ErrNotExist. An optional model none of whose files is present is
// not installed, which is no fault: it is left out of the results.
func Verify(dir string, m Manifest) ([]FileResult, error) {
	var results []FileResult
	var errs []error
	for _, s := range m.Models {
		if s.Optional && !anyPresent(dir, s) {
			continue
		}
		lk := readLock(filepath.Join(dir, s.Name))
		for _, f := range s.Files {
			res := FileResult{Model: s.Name, Path: f.Path, Action: "present"}
			want := f.SHA256
			if want == "" {
				want = lk.Files[f.Path]
			}
			got, n, err := fileDigest(filepath.Join(dir, s.Name, filepath.FromSlash(f.Path)))
			switch {
			case err != nil:
				res.Action, res.Err = "failed", fmt.Errorf("%s/%s: %w", s.Name, f.Path, err)
			case want == "":
				res.Action, res.Err = "failed", fmt.Errorf("%s/%s: %w and none recorded in %s", s.Name, f.Path, ErrUnpinned, LockFile)
			case got != want:
				res.Action, res.Err = "failed", fmt.Errorf("%s/%s: %w: the file has %s, the manifest pins %s", s.Name, f.Path, ErrDigest, got, want)
			}
			res.SHA256, res.Bytes = got, n
			if res.Err != nil {
				errs = append(errs, res.Err)
			}
			results = append(results, res)
		}
	}
	return results, errors.Join(errs...)
}

// anyPresent reports whether any file of s is in dir.
func anyPresent(dir string, s Spec) bool {
	for _, f := range s.Files {
		if _, err := os.Stat(filepath.Join(dir, s.Name, filepath.FromSlash(f.Path))); err == nil {
			return true
		}
	}
	return false
}

// Installed reports whether every file of s is in dir (present, not
// verified: exocortex models verify checks their digests).
func Installed(dir string, s Spec) bool {
	for _, f := range s.Files {
		if _, err := os.Stat(filepath.Join(dir, s.Name, filepath.FromSlash(f.Path))); err != nil {
			return false
		}
	}
	return len(s.Files) > 0
}

func fileURL(base string, s Spec, f File) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("models: base url %q is not an absolute URL", base)
	}
	u.Path = path.Join(u.Path, s.Repo, "resolve", s.Revision, f.Path)
	return u.String(), nil
}

// download fetches u into dst through a temporary file in the same
// directory, hashing as it writes; the file is renamed into place only when
// its digest (and size, when known) match.
func download(ctx context.Context, opts FetchOptions, u, dst, want string, size int64, model, file string) (string, int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", 0, fmt.Errorf("%s/%s: %w", model, file, err)
	}
	var lastErr error
	for attempt := 1; attempt <= opts.Attempts; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return "", 0, ctx.Err()
			case <-time.After(time.Duration(attempt-1) * 2 * time.Second):
			}
		}
		got, n, err, transient := downloadOnce(ctx, opts, u, dst, want, size, model, file)
		if err == nil {
			return got, n, nil
		}
		lastErr = err
		if !transient {
			break
		}
	}
	return "", 0, lastErr
}

func downloadOnce(ctx context.Context, opts FetchOptions, u, dst, want string, size int64, model, file string) (sum string, n int64, err error, transient bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, fmt.Errorf("%s/%s: %w", model, file, err), false
	}
	req.Header.Set("User-Agent", "exocortex-models-fetch")
	resp, err := opts.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named once, below
		}
		return "", 0, fmt.Errorf("%s/%s: download %s: %w (models fetch needs to reach that host; without it, copy the files into place and run exocortex models verify)", model, file, u, err), true
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("%s/%s: download %s: HTTP %s", model, file, u, resp.Status),
			resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
	}
	total := resp.ContentLength
	if size > 0 {
		total = size
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.part")
	if err != nil {
		return "", 0, fmt.Errorf("%s/%s: %w", model, file, err), false
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	h := sha256.New()
	w := io.MultiWriter(tmp, h)
	var body io.Reader = resp.Body
	if opts.Progress != nil {
		body = &progressReader{r: resp.Body, fn: func(done int64) { opts.Progress(model, file, done, total) }}
	}
	n, err = io.Copy(w, body)
	if cerr := tmp.Sync(); err == nil {
		err = cerr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", n, fmt.Errorf("%s/%s: download %s: after %d bytes: %w", model, file, u, n, err), true
	}
	sum = hex.EncodeToString(h.Sum(nil))
	if size > 0 && n != size {
		return sum, n, fmt.Errorf("%s/%s: %w: got %d bytes, the manifest says %d; the download was discarded", model, file, ErrDigest, n, size), true
	}
	if want != "" && sum != want {
		return sum, n, fmt.Errorf("%s/%s: %w: got %s, want %s; the download was discarded", model, file, ErrDigest, sum, want), false
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", n, fmt.Errorf("%s/%s: %w", model, file, err), false
	}
	return sum, n, nil, false
}

type progressReader struct {
	r    io.Reader
	n    int64
	last time.Time
	fn   func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if now := time.Now(); err != nil || now.Sub(p.last) > 500*time.Millisecond {
		p.last = now
		p.fn(p.n)
	}
	return n, err
}

func fileDigest(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func readLock(mdir string) lock {
	lk := lock{Files: map[string]string{}}
	raw, err := os.ReadFile(filepath.Join(mdir, LockFile))
	if err == nil {
		_ = json.Unmarshal(raw, &lk)
	}
	if lk.Files == nil {
		lk.Files = map[string]string{}
	}
	return lk
}

func writeLock(mdir string, lk lock) error {
	raw, _ := json.MarshalIndent(lk, "", "  ")
	tmp := filepath.Join(mdir, "."+LockFile+".tmp")
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("models lock %s: %w", mdir, err)
	}
	if err := os.Rename(tmp, filepath.Join(mdir, LockFile)); err != nil {
		return fmt.Errorf("models lock %s: %w", mdir, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
