// Package watch keeps the index in step with Markdown folders (Obsidian and
// Logseq vaults, plain folders of notes) while exocortex up runs: a source,
// like the SiYuan bridge, that publishes kb.doc.changed through the files
// source's own path (workers/files), so a watched folder and an ingested one
// are indexed alike.
//
// At start it reconciles every folder with the index (files.Sync: what
// changed while up was down); then it follows the folder's changes through
// inotify (github.com/fsnotify/fsnotify, one watch per folder, new folders
// added as they appear), or, where the inotify watch limit is reached (or
// Config.Poll asks), by scanning modification times every PollEvery. Changes
// are debounced per path. A rename is a move: the document under its new
// path is sent before the old one is deleted, and its chunks' vectors come
// from the embedding cache (keyed by content), so nothing is embedded again
// and nothing stale stays.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/files"
)

// Modes of a watched folder.
const (
	ModeInotify = "inotify"
	ModePolling = "polling"
)

// Config is what to watch and how.
type Config struct {
	// Folders to follow (made absolute, symlinks resolved).
	Folders []string
	// Debounce is how long a path must stay quiet before it is read
	// (default 250ms); a path written without pause is read after MaxDelay
	// (default 1s) all the same.
	Debounce time.Duration
	MaxDelay time.Duration
	// Poll scans every folder instead of using inotify.
	Poll bool
	// PollEvery is the polling scan's period (default 1s).
	PollEvery time.Duration
	// MaxFileBytes is the largest file read (default notes.DefaultMaxFileBytes).
	MaxFileBytes int64
}

func (c *Config) defaults() {
	if c.Debounce <= 0 {
		c.Debounce = 250 * time.Millisecond
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = time.Second
	}
	if c.PollEvery <= 0 {
		c.PollEvery = time.Second
	}
}

// Validate joins every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if len(c.Folders) == 0 {
		errs = append(errs, errors.New("watch: no folder given"))
	}
	for _, f := range c.Folders {
		fi, err := os.Stat(f)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("watch %s: %w (give an existing folder, or drop it from the watch list)", f, err))
		case !fi.IsDir():
			errs = append(errs, fmt.Errorf("watch %s: not a folder (ingest a single file with exocortex ingest)", f))
		}
	}
	return errors.Join(errs...)
}

// Folder is one watched folder's state.
type Folder struct {
	Path string `json:"path"`
	Mode string `json:"mode"` // inotify or polling
	// Why polls (the inotify limit reached, or asked for).
	Why       string    `json:"why,omitempty"`
	LastEvent time.Time `json:"last_event,omitzero"`
	LastPath  string    `json:"last_path,omitempty"`
	Documents int       `json:"documents"`
}

// Status is the source's state for exocortex status.
type Status struct {
	Folders       []Folder  `json:"folders"`
	Started       time.Time `json:"started"`
	LastReconcile time.Time `json:"last_reconcile,omitzero"`
	Sent          int       `json:"sent"`
	Deleted       int       `json:"deleted"`
	Failed        int       `json:"failed"`
	Error         string    `json:"error,omitempty"`
	Stopped       bool      `json:"stopped,omitempty"`
	ReportedAt    time.Time `json:"reported_at,omitzero"`
}

// Source follows folders and publishes their changes.
type Source struct {
	cfg     Config
	state   bus.KV
	publish files.Publish
	log     zerolog.Logger

	roots []*root

	mu     sync.Mutex
	status Status
	known  map[string]files.Remembered // by canonical path: the documents sent
	// synced hears every batch flushed (tests, the benchmark).
	synced func(paths []string)
	// addWatch puts an inotify watch on a folder (a test makes it run out).
	addWatch func(w *fsnotify.Watcher, dir string) error
}

// root is one watched folder.
type root struct {
	path   string
	ignore *notes.Ignore
	poll   bool
	why    string
	idx    int // in status.Folders
	// dirs are its folders under an inotify watch.
	dirs map[string]bool
	// snap is the last polling scan: document path -> size and mtime.
	snap map[string]fileStamp
}

type fileStamp struct {
	size  int64
	mtime time.Time
}

// New returns a source for cfg's folders; state is the files source's state
// (the KB_SOURCES bucket), publish sends one event.
func New(cfg Config, state bus.KV, publish files.Publish, log zerolog.Logger) (*Source, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, state: state, publish: publish, log: log.With().Str("source", "watch").Logger(), known: map[string]files.Remembered{}}
	seen := map[string]bool{}
	for _, f := range cfg.Folders {
		c := notes.Canonical(f)
		if seen[c] {
			continue
		}
		seen[c] = true
		r := &root{path: c, ignore: notes.NewIgnore(c), dirs: map[string]bool{}, idx: len(s.roots)}
		s.roots = append(s.roots, r)
		s.status.Folders = append(s.status.Folders, Folder{Path: c, Mode: ModeInotify})
	}
	return s, nil
}

// OnSynced sets a function told the paths of every batch once it is
// published (for tests and benchmarks); call it before Run.
func (s *Source) OnSynced(fn func(paths []string)) { s.synced = fn }

// Status returns the source's state.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Folders = append([]Folder(nil), s.status.Folders...)
	for i, r := range s.roots {
		n := 0
		for p := range s.known {
			if strings.HasPrefix(p, r.path+string(filepath.Separator)) {
				n++
			}
		}
		st.Folders[i].Documents = n
	}
	return st
}

// Run watches until ctx ends. It returns an error only when it cannot start
// at all (no inotify and no polling possible, the state unreadable).
func (s *Source) Run(ctx context.Context) error {
	s.mu.Lock()
	s.status.Started = time.Now()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.status.Stopped = true
		s.mu.Unlock()
	}()
	if err := s.loadKnown(ctx); err != nil {
		s.setError(err)
		return err
	}
	w := s.openWatcher()
	if w != nil {
		defer w.Close()
	}
	// Watches first, then the reconciliation: a change made while it runs
	// is seen by one or the other.
	s.watchRoots(w)
	for _, r := range s.roots {
		if r.poll {
			r.snap = s.scan(r)
		}
	}
	s.reconcile(ctx)
	s.follow(ctx, w)
	return nil
}

// openWatcher opens the inotify watcher, or returns nil with every folder
// polled (polling asked for, or inotify unavailable).
func (s *Source) openWatcher() *fsnotify.Watcher {
	if s.cfg.Poll {
		for _, r := range s.roots {
			s.toPolling(r, "polling asked for")
		}
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Warn().Err(err).Msg("inotify unavailable: every watched folder is polled")
		for _, r := range s.roots {
			s.toPolling(r, fmt.Sprintf("inotify unavailable (%v)", err))
		}
		return nil
	}
	return w
}

// watchRoots puts inotify watches on the folders not polled; a folder
// whose tree cannot be watched whole (the inotify limit) is polled.
func (s *Source) watchRoots(w *fsnotify.Watcher) {
	for _, r := range s.roots {
		if r.poll {
			continue
		}
		if err := s.addTree(w, r, r.path); err != nil {
			s.toPolling(r, err.Error())
			s.dropWatches(w, r, r.path)
		} else {
			s.log.Info().Str("folder", r.path).Int("folders_watched", len(r.dirs)).Msg("watching folder (inotify)")
		}
	}
}

// follow applies inotify events and polls the polled folders until ctx
// ends, publishing each changed path once its debounce has passed.
func (s *Source) follow(ctx context.Context, w *fsnotify.Watcher) {
	pending := map[string]*due{}
	tick := time.NewTicker(s.cfg.Debounce / 4)
	defer tick.Stop()
	// Always ticking: a folder can fall back to polling later (a new
	// folder over the inotify limit).
	pt := time.NewTicker(s.cfg.PollEvery)
	defer pt.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			s.event(w, ev, pending)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// The kernel's queue overflowed: what changed is unknown, so
			// every inotify folder is read again (unchanged documents cost a
			// hash each).
			s.log.Warn().Err(err).Msg("inotify reported an error; reconciling the watched folders")
			s.reconcile(ctx)
		case <-pt.C:
			for _, r := range s.roots {
				if r.poll {
					s.pollOnce(r, pending)
				}
			}
		case now := <-tick.C:
			s.flush(ctx, pending, now)
		}
	}
}

// due is a path waiting for its debounce to pass.
type due struct {
	first, last time.Time
}

// loadKnown reads what the files source remembers under the watched folders.
func (s *Source) loadKnown(ctx context.Context) error {
	docs, err := files.RememberedDocs(ctx, s.state)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range docs {
		if s.rootOf(d.Path) != nil {
			s.known[d.Path] = d
		}
	}
	return nil
}

// rootOf is the watched folder path lies in (nil: none).
func (s *Source) rootOf(p string) *root {
	for _, r := range s.roots {
		if p == r.path || strings.HasPrefix(p, r.path+string(filepath.Separator)) {
			return r
		}
	}
	return nil
}

// reconcile runs files.Sync over every folder: what changed while nothing
// watched (up was down, an inotify overflow) reaches the index.
func (s *Source) reconcile(ctx context.Context) {
	var paths []string
	for _, r := range s.roots {
		paths = append(paths, r.path)
	}
	t := time.Now()
	st, ferrs, err := files.Sync(ctx, paths, s.state, s.publish, files.SyncOptions{MaxFileBytes: s.cfg.MaxFileBytes, OnSent: s.sent})
	for _, fe := range ferrs {
		s.log.Warn().Str("path", fe.Path).Str("error", fe.Err).Msg("file skipped")
	}
	s.mu.Lock()
	s.status.LastReconcile = time.Now()
	s.status.Failed += st.Failed
	s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.setError(fmt.Errorf("reconcile the watched folders: %w", err))
			s.log.Error().Err(err).Msg("reconciliation failed; it runs again at the next start")
		}
		return
	}
	s.log.Info().Int("seen", st.Seen).Int("sent", st.Sent).Int("deleted", st.Deleted).Int("failed", st.Failed).
		Dur("took", time.Since(t)).Msg("watched folders reconciled")
}

// sent keeps what was published in known and the counts.
func (s *Source) sent(ev *schemas.DocChanged) {
	p := notes.Canonical(ev.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Deleted {
		delete(s.known, p)
		if prev, ok := s.known[ev.Path]; ok && prev.DocID == ev.DocID {
			delete(s.known, ev.Path)
		}
		s.status.Deleted++
		return
	}
	s.known[p] = files.Remembered{DocID: ev.DocID, Path: ev.Path, Source: ev.Source, Hash: ev.Hash, Version: ev.Version}
	s.status.Sent++
}

func (s *Source) setError(err error) {
	s.mu.Lock()
	s.status.Error = err.Error()
	s.mu.Unlock()
}

// toPolling switches a folder to polling and says so.
func (s *Source) toPolling(r *root, why string) {
	r.poll, r.why = true, why
	s.mu.Lock()
	s.status.Folders[r.idx].Mode = ModePolling
	s.status.Folders[r.idx].Why = why
	s.mu.Unlock()
	s.log.Warn().Str("folder", r.path).Str("why", why).Dur("every", s.cfg.PollEvery).Msg("watching folder by polling")
}

// addTree puts an inotify watch on dir and every folder below it that is
// not left out. The inotify limit reached is an error that names it.
func (s *Source) addTree(w *fsnotify.Watcher, r *root, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: not watched, its parent's events still come
		}
		if !d.IsDir() {
			return nil
		}
		if p != r.path && r.ignore.Skip(p, true) {
			return filepath.SkipDir
		}
		if r.dirs[p] {
			return nil
		}
		add := s.addWatch
		if add == nil {
			add = (*fsnotify.Watcher).Add
		}
		if err := add(w, p); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("the inotify watch limit is reached at %d folders (raise fs.inotify.max_user_watches to watch it live)", len(r.dirs))
			}
			if errors.Is(err, syscall.EMFILE) {
				return fmt.Errorf("too many inotify instances (raise fs.inotify.max_user_instances to watch it live)")
			}
			s.log.Warn().Err(err).Str("folder", p).Msg("folder not watched")
			return nil
		}
		r.dirs[p] = true
		return nil
	})
}

// dropWatches removes the watches on dir and below.
func (s *Source) dropWatches(w *fsnotify.Watcher, r *root, dir string) {
	for p := range r.dirs {
		if p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) {
			if w != nil {
				_ = w.Remove(p)
			}
			delete(r.dirs, p)
		}
	}
}

// event takes one inotify event: a document or folder touched waits for
// its debounce; a new folder is watched at once (and read, for what was
// written in it before its watch).
func (s *Source) event(w *fsnotify.Watcher, ev fsnotify.Event, pending map[string]*due) {
	p := filepath.Clean(ev.Name)
	r := s.rootOf(p)
	if r == nil || r.poll {
		return
	}
	if ev.Op == fsnotify.Chmod {
		return
	}
	base := filepath.Base(p)
	if base == ".gitignore" {
		dir := filepath.Dir(p)
		r.ignore.Forget(dir)
		s.touch(r, dir, pending)
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := os.Lstat(p)
		if err == nil && fi.IsDir() {
			if r.ignore.Skip(p, true) {
				return
			}
			if err := s.addTree(w, r, p); err != nil {
				s.dropWatches(w, r, r.path)
				s.toPolling(r, err.Error())
				r.snap = s.scan(r)
				s.touch(r, r.path, pending)
				return
			}
			s.touch(r, p, pending)
			return
		}
		if notes.IsDocument(p) && !r.ignore.Skip(p, false) {
			s.touch(r, p, pending)
		}
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		if r.dirs[p] {
			// A folder gone or moved away: its watches go (a folder moved
			// in elsewhere is watched afresh by its Create) and its
			// documents are deleted after the debounce.
			s.dropWatches(w, r, p)
			s.touch(r, p, pending)
			return
		}
		if notes.IsDocument(p) || s.knownUnder(p) {
			s.touch(r, p, pending)
		}
	case ev.Has(fsnotify.Write):
		if notes.IsDocument(p) && !r.ignore.Skip(p, false) {
			s.touch(r, p, pending)
		}
	}
}

// knownUnder reports whether a document was sent at p or below it.
func (s *Source) knownUnder(p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[p]; ok {
		return true
	}
	for k := range s.known {
		if strings.HasPrefix(k, p+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// touch puts p on the pending list and notes the folder's last event.
func (s *Source) touch(r *root, p string, pending map[string]*due) {
	now := time.Now()
	if d, ok := pending[p]; ok {
		d.last = now
	} else {
		pending[p] = &due{first: now, last: now}
	}
	s.mu.Lock()
	s.status.Folders[r.idx].LastEvent = now
	s.status.Folders[r.idx].LastPath = p
	s.mu.Unlock()
}

// flush reads the paths whose debounce has passed: the ones there are sent
// (new or changed), then the ones gone are deleted, so that a rename never
// leaves the note unfindable in between.
func (s *Source) flush(ctx context.Context, pending map[string]*due, now time.Time) {
	var ready []string
	for p, d := range pending {
		if now.Sub(d.last) >= s.cfg.Debounce || now.Sub(d.first) >= s.cfg.MaxDelay {
			ready = append(ready, p)
			delete(pending, p)
		}
	}
	if len(ready) == 0 {
		return
	}
	sort.Strings(ready)
	byRoot := map[*root][]string{}
	var gone []string
	for _, p := range ready {
		r := s.rootOf(p)
		if r == nil {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || r.ignore.Skip(p, fi.IsDir()) {
			gone = append(gone, p)
			continue
		}
		byRoot[r] = append(byRoot[r], p)
		if fi.IsDir() {
			// Documents once below it that are not there any more (a
			// folder moved away and another moved in under its name).
			gone = append(gone, s.missingUnder(r, p)...)
		}
	}
	for _, r := range s.roots {
		paths := byRoot[r]
		if len(paths) == 0 {
			continue
		}
		st, ferrs, err := files.SyncFiles(ctx, r.path, paths, r.ignore, s.state, s.publish, files.SyncOptions{MaxFileBytes: s.cfg.MaxFileBytes, OnSent: s.sent})
		for _, fe := range ferrs {
			s.log.Warn().Str("path", fe.Path).Str("error", fe.Err).Msg("file skipped")
		}
		s.mu.Lock()
		s.status.Failed += st.Failed
		s.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			s.setError(fmt.Errorf("send changes of %s: %w", r.path, err))
			s.log.Error().Err(err).Str("folder", r.path).Msg("changes not sent; they are sent at the next start's reconciliation")
		}
		if st.Sent > 0 {
			s.log.Debug().Int("sent", st.Sent).Int("unchanged", st.Unchanged).Str("folder", r.path).Msg("changes sent")
		}
	}
	for _, p := range gone {
		for _, d := range s.under(p) {
			if _, err := os.Stat(d.Path); err == nil {
				if r := s.rootOf(d.Path); r != nil && !r.ignore.Skip(d.Path, false) {
					continue // back again (an editor's save by rename)
				}
			}
			if err := files.Delete(ctx, s.state, s.publish, d.DocID, d.Source, d.Path, d.Hash, d.Version); err != nil {
				if ctx.Err() == nil {
					s.setError(err)
					s.log.Error().Err(err).Str("path", d.Path).Msg("deletion not sent; it is sent at the next start's reconciliation")
				}
				continue
			}
			s.sent(&schemas.DocChanged{DocID: d.DocID, Path: d.Path, Deleted: true})
		}
	}
	if s.synced != nil {
		s.synced(ready)
	}
}

// under lists the documents sent at p or below it.
func (s *Source) under(p string) []files.Remembered {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []files.Remembered
	for k, d := range s.known {
		if k == p || strings.HasPrefix(k, p+string(filepath.Separator)) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// missingUnder lists the paths of documents sent below dir that are gone
// or left out now.
func (s *Source) missingUnder(r *root, dir string) []string {
	var out []string
	for _, d := range s.under(dir) {
		if _, err := os.Stat(d.Path); err != nil || r.ignore.Skip(d.Path, false) {
			out = append(out, d.Path)
		}
	}
	return out
}

// scan lists a polled folder's documents with their sizes and times.
func (s *Source) scan(r *root) map[string]fileStamp {
	out := map[string]fileStamp{}
	_ = filepath.WalkDir(r.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != r.path && r.ignore.Skip(p, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !notes.IsDocument(p) {
			if d.Name() == ".gitignore" {
				return nil
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			out[p] = fileStamp{size: fi.Size(), mtime: fi.ModTime()}
		}
		return nil
	})
	return out
}

// pollOnce scans a polled folder and puts what changed since the last scan
// on the pending list (read at the next tick: a scan already waited).
func (s *Source) pollOnce(r *root, pending map[string]*due) {
	r.ignore.Forget(r.path)
	next := s.scan(r)
	past := time.Now().Add(-s.cfg.MaxDelay)
	mark := func(p string) {
		s.touch(r, p, pending)
		pending[p].first = past // no debounce beyond the scan's period
	}
	for p, st := range next {
		if old, ok := r.snap[p]; !ok || old != st {
			mark(p)
		}
	}
	for p := range r.snap {
		if _, ok := next[p]; !ok {
			mark(p)
		}
	}
	r.snap = next
}
