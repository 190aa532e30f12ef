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
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
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
	// Attempts per file for transient failures (default 3): a refused
	// connection or a 5xx waits Backoff times the failures so far (default
	// 2s) and counts; a download that broke after bytes arrived is resumed
	// at once from where it stopped (a Range request) and does not count.
	Attempts int
	Backoff  time.Duration
	// Progress, when set, is called as bytes arrive, at most once per
	// ProgressEvery (default 500ms), and once more when a file's download
	// ends (Progress.Final).
	Progress      func(Progress)
	ProgressEvery time.Duration
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
	if opts.Backoff <= 0 {
		opts.Backoff = 2 * time.Second
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 500 * time.Millisecond
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
	repo, rev := s.Source(f)
	u.Path = path.Join(u.Path, repo, "resolve", rev, f.Path)
	return u.String(), nil
}

// PartFile is where a file's download accumulates until its digest checks:
// hidden, next to the file's destination. It is kept when a download
// breaks, so that the next attempt (or the next models fetch) resumes it
// with a Range request; it is deleted when the digest does not match.
func PartFile(dst string) string {
	return filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".part")
}

// maxResumes bounds the attempts of one file that each broke after bytes
// arrived: those resume at once and do not count against Attempts.
const maxResumes = 1000

// download fetches u into dst through its part file, hashing as it writes;
// the file is renamed into place only when its digest (and size, when
// known) match. An attempt that broke after bytes arrived is resumed at
// once from where it stopped; one that failed before (a refused
// connection, a 5xx) waits and counts against opts.Attempts.
func download(ctx context.Context, opts FetchOptions, u, dst, want string, size int64, model, file string) (string, int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", 0, fmt.Errorf("%s/%s: %w", model, file, err)
	}
	var lastErr error
	failures, resumes := 0, 0
	for {
		got, n, progressed, err, transient := downloadOnce(ctx, opts, u, dst, want, size, model, file)
		if err == nil {
			return got, n, nil
		}
		lastErr = err
		if !transient || ctx.Err() != nil {
			break
		}
		if progressed && resumes < maxResumes {
			resumes++
			continue
		}
		failures++
		if failures >= opts.Attempts {
			break
		}
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(time.Duration(failures) * opts.Backoff):
		}
	}
	return "", 0, lastErr
}

// downloadOnce makes one request for u, resuming the part file when there
// is one. progressed says whether any byte arrived.
func downloadOnce(ctx context.Context, opts FetchOptions, u, dst, want string, size int64, model, file string) (sum string, n int64, progressed bool, err error, transient bool) {
	j := downloadJob{opts: opts, url: u, dst: dst, part: PartFile(dst), want: want, size: size, model: model, file: file}
	offset := j.resumeAt()
	resp, err, transient := j.get(ctx, offset)
	if err != nil {
		return "", 0, false, err, transient
	}
	defer resp.Body.Close()
	offset, total, err, transient := j.accept(resp, offset)
	if err != nil {
		return "", 0, false, err, transient
	}
	h := sha256.New()
	if offset > 0 {
		if err := hashPrefix(h, j.part, offset); err != nil {
			_ = os.Remove(j.part)
			return "", 0, false, fmt.Errorf("%s: reading the partial download %s: %w; starting over", j.name(), j.part, err), true
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if offset > 0 {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(j.part, flags, 0o644)
	if err != nil {
		return "", 0, false, fmt.Errorf("%s: %w", j.name(), err), false
	}
	written, err := j.write(f, resp.Body, h, offset, total)
	n, progressed = offset+written, written > 0
	if err != nil {
		// The part file stays: the next attempt resumes it.
		return "", n, progressed, fmt.Errorf("%s: download %s: broke after %d bytes: %w", j.name(), j.url, n, err), true
	}
	sum = hex.EncodeToString(h.Sum(nil))
	return j.finish(sum, n, offset, progressed)
}

// downloadJob is one file to download: from url into dst through its part
// file, with its expected digest (want) and size (0: unknown).
type downloadJob struct {
	opts           FetchOptions
	url, dst, part string
	want           string
	size           int64
	model, file    string
}

// name is the file as reports name it: model/file.
func (j downloadJob) name() string { return j.model + "/" + j.file }

// resumeAt is the byte to resume at: the part file's size, or 0 to start
// over when there is none or it is not shorter than the file.
func (j downloadJob) resumeAt() int64 {
	st, err := os.Stat(j.part)
	if err != nil {
		return 0
	}
	if offset := st.Size(); j.size <= 0 || offset < j.size {
		return offset
	}
	return 0 // nothing left to ask for, or more than the file: start over
}

// get sends the request, asking for the bytes from offset on when it is
// not 0. A request that could not be sent may succeed later (transient).
func (j downloadJob) get(ctx context.Context, offset int64) (resp *http.Response, err error, transient bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", j.name(), err), false
	}
	req.Header.Set("User-Agent", "exocortex-models-fetch")
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err = j.opts.Client.Do(req) // follows the hub's redirects to its file storage, Range included
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named once, below
		}
		return nil, fmt.Errorf("%s: download %s: %w (models fetch needs to reach that host; without it, copy the files into place and run exocortex models verify)", j.name(), j.url, err), true
	}
	return resp, nil, false
}

// accept checks the response's status against the asked offset and
// returns the offset its body starts at (0 when the server sent the whole
// file) and the file's total size (-1 or 0: unknown).
func (j downloadJob) accept(resp *http.Response, offset int64) (start, total int64, err error, transient bool) {
	total = j.size
	switch {
	case resp.StatusCode == http.StatusPartialContent && offset > 0:
		from, whole, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || from != offset {
			_ = os.Remove(j.part)
			return 0, 0, fmt.Errorf("%s: download %s: asked to resume at byte %d, the server sent %q; starting over", j.name(), j.url, offset, resp.Header.Get("Content-Range")), true
		}
		if total <= 0 {
			total = whole
		}
		return offset, total, nil, false
	case resp.StatusCode == http.StatusOK:
		if total <= 0 {
			total = resp.ContentLength
		}
		return 0, total, nil, false // the whole file (a server that does not resume): start over
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && offset > 0:
		_ = os.Remove(j.part)
		return 0, 0, fmt.Errorf("%s: download %s: the server would not resume at byte %d (HTTP %s); starting over", j.name(), j.url, offset, resp.Status), true
	default:
		return 0, 0, fmt.Errorf("%s: download %s: HTTP %s", j.name(), j.url, resp.Status),
			resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
	}
}

// write copies body to the part file f (at offset: its bytes so far),
// feeding h too and reporting progress, then syncs and closes f.
func (j downloadJob) write(f *os.File, body io.Reader, h io.Writer, offset, total int64) (int64, error) {
	var m *meter
	if j.opts.Progress != nil {
		m = newMeter(j.opts, Progress{Model: j.model, File: j.file, Done: offset, Total: total, Resumed: offset})
		body = &meteredReader{r: body, m: m}
	}
	written, err := io.Copy(io.MultiWriter(f, h), body)
	if cerr := f.Sync(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if m != nil {
		m.finish(err)
	}
	return written, err
}

// finish checks the whole download (n bytes, digest sum) against the
// manifest and renames the part file into place, or discards it.
func (j downloadJob) finish(sum string, n, offset int64, progressed bool) (string, int64, bool, error, bool) {
	name := j.name()
	if j.size > 0 && n != j.size {
		// The whole response arrived (a body cut short is an error above):
		// the hub holds a file of another size.
		_ = os.Remove(j.part)
		return sum, n, progressed, fmt.Errorf("%s: %w: got %d bytes, the manifest says %d; the download was discarded", name, ErrDigest, n, j.size), false
	}
	if j.want != "" && sum != j.want {
		_ = os.Remove(j.part)
		if offset > 0 {
			// The part may be another version's: once more from the start.
			return sum, n, true, fmt.Errorf("%s: %w: got %s after resuming at byte %d, want %s; starting over", name, ErrDigest, sum, offset, j.want), true
		}
		return sum, n, progressed, fmt.Errorf("%s: %w: got %s, want %s; the download was discarded", name, ErrDigest, sum, j.want), false
	}
	if err := os.Rename(j.part, j.dst); err != nil {
		return "", n, progressed, fmt.Errorf("%s: %w", name, err), false
	}
	return sum, n, progressed, nil, false
}

// contentRange parses "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func contentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, false
	}
	span, whole, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	from, _, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(from, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	total = -1
	if whole != "*" {
		if total, err = strconv.ParseInt(whole, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// hashPrefix feeds the first n bytes of the file at p to h.
func hashPrefix(h io.Writer, p string, n int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyN(h, f, n)
	return err
}

// Progress is one report of a file's download (FetchOptions.Progress).
type Progress struct {
	Model, File string
	// Done is the bytes on disk, Total the file's size (-1: unknown).
	Done, Total int64
	// Resumed is the byte the download resumed at (0: from the start).
	Resumed int64
	// Rate is bytes per second over this download so far (what arrived
	// since it began or resumed), Elapsed the time since then.
	Rate    float64
	Elapsed time.Duration
	// Left is the estimated time to the end (-1: unknown).
	Left time.Duration
	// Final marks the last report of the download (whole or broken).
	Final bool
}

// String reads, for example, "qa-model/model.onnx  412.3 MB of 1.11 GB
// (37%)  11.2 MB/s  1m2s left".
func (p Progress) String() string {
	var b strings.Builder
	b.WriteString(p.Model + "/" + p.File + "  " + formatBytes(p.Done))
	if p.Total > 0 {
		fmt.Fprintf(&b, " of %s (%d%%)", formatBytes(p.Total), p.Done*100/p.Total)
	}
	if p.Resumed > 0 {
		fmt.Fprintf(&b, ", resumed at %s", formatBytes(p.Resumed))
	}
	if p.Final {
		round := 100 * time.Millisecond
		if p.Elapsed < time.Second {
			round = time.Millisecond
		}
		fmt.Fprintf(&b, " in %s", p.Elapsed.Round(round))
	}
	if p.Rate > 0 {
		fmt.Fprintf(&b, "  %s/s", formatBytes(int64(p.Rate)))
	}
	if !p.Final {
		if p.Left >= 0 {
			fmt.Fprintf(&b, "  %s left", p.Left.Round(time.Second))
		} else {
			b.WriteString("  time left unknown")
		}
	}
	return b.String()
}

// formatBytes writes n in decimal units, as the hub shows sizes: the unit
// is go-humanize's (ComputeSI), the precision fixed (one decimal, two from
// GB on) so that a progress line does not change width as it counts.
func formatBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v, prefix := humanize.ComputeSI(float64(n))
	digits := 1
	if prefix != "k" && prefix != "M" {
		digits = 2
	}
	return fmt.Sprintf("%.*f %sB", digits, v, prefix)
}

// meter turns the bytes of one download into Progress reports, at most one
// per opts.ProgressEvery, and a final one.
type meter struct {
	fn    func(Progress)
	every time.Duration
	p     Progress
	start time.Time
	last  time.Time
}

func newMeter(opts FetchOptions, p Progress) *meter {
	now := time.Now()
	return &meter{fn: opts.Progress, every: opts.ProgressEvery, p: p, start: now, last: now}
}

func (m *meter) add(n int) {
	m.p.Done += int64(n)
	if now := time.Now(); now.Sub(m.last) >= m.every {
		m.last = now
		m.report(now)
	}
}

func (m *meter) report(now time.Time) {
	p := m.p
	p.Elapsed = now.Sub(m.start)
	p.Left = -1
	if s := p.Elapsed.Seconds(); s > 0 {
		p.Rate = float64(p.Done-p.Resumed) / s
	}
	if p.Total > 0 && p.Rate > 0 {
		p.Left = time.Duration(float64(max(p.Total-p.Done, 0)) / p.Rate * float64(time.Second))
	}
	m.fn(p)
}

func (m *meter) finish(error) {
	m.p.Final = true
	m.report(time.Now())
}

type meteredReader struct {
	r io.Reader
	m *meter
}

func (x *meteredReader) Read(b []byte) (int, error) {
	n, err := x.r.Read(b)
	x.m.add(n)
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
