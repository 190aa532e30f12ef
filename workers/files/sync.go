// Package files is the files source: it walks notes on disk (notes.Walk:
// Markdown, SiYuan .sy) and publishes a DocChanged for every new, changed or
// deleted document, remembering what it sent in a bus.KV (Sync, SyncFiles
// for a watcher, Resend and Delete for exocortex check).
//
// It may import bus, schemas and notes; never store or another stage.
package files

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// docState is what the source remembers of a document it published.
type docState struct {
	Hash    string `json:"hash"`
	Version int64  `json:"version"`
	Path    string `json:"path"`
	Source  string `json:"source"`
	// Format is the sendFormat the document was sent under.
	Format int `json:"format,omitempty"`
}

// sendFormat goes up when the stages after the source need every document
// once more: a document remembered under a lower one is sent again even when
// unchanged. 1: chunks carry block spans (an index from before gets them).
const sendFormat = 1

// SyncStats counts what a Sync did.
type SyncStats struct {
	Seen      int `json:"seen"`
	Sent      int `json:"sent"`
	Unchanged int `json:"unchanged"`
	Deleted   int `json:"deleted"`
	Failed    int `json:"failed"`
	// Warned counts files read with a repair (not UTF-8: transcoded from
	// Windows-1251 or invalid bytes replaced; front matter that is not valid
	// YAML: kept as text, without properties); they are sent all the same.
	Warned int `json:"warned"`
}

// FileError is a file that could not be read or parsed (it was skipped), or
// a warning about one that was read with a repair. Err is the reason without
// the path.
type FileError struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

// reason is err's message without the path it starts with.
func reason(path string, err error) string {
	msg := err.Error()
	for _, p := range []string{path, notes.Canonical(path)} {
		for _, prefix := range []string{"markdown " + p + ": ", "siyuan " + p + ": ", p + ": "} {
			if r, ok := strings.CutPrefix(msg, prefix); ok {
				return r
			}
		}
	}
	return msg
}

// SyncOptions tunes Sync.
type SyncOptions struct {
	// Force publishes every document even when its hash is unchanged, marked
	// DocChanged.Force: the chunk stage then re-sends all its chunks.
	Force bool
	// Progress is called after every document.
	Progress func(SyncStats)
	// OnSent is called with every document published (its message id).
	OnSent func(ev *schemas.DocChanged)
	// OnWarning is called for every file read with a repair (see
	// SyncStats.Warned), with what was done.
	OnWarning func(FileError)
	// MaxFileBytes is the largest file read (default notes.DefaultMaxFileBytes);
	// a larger one is reported with notes.ErrTooLarge and skipped.
	MaxFileBytes int64
}

// warn is the OnWarn of a sync's walk: it counts the warning in st and
// tells OnWarning.
func (o SyncOptions) warn(st *SyncStats) func(path, note string) {
	return func(path, note string) {
		st.Warned++
		if o.OnWarning != nil {
			o.OnWarning(FileError{Path: path, Err: note})
		}
	}
}

// ErrRefused is a Publish's refusal of one document before sending it (a
// note larger than the bus's store can hold): Sync reports that file and
// goes on with the others.
var ErrRefused = errors.New("refused")

// Publish sends one document change; bus.Publish fits with a closure.
type Publish func(ctx context.Context, ev *schemas.DocChanged) error

// Sync walks paths, publishes a kb.doc.changed for every new or changed
// document (content hash differs from the one remembered in state), and a
// deletion for every remembered document that is gone from a walked folder,
// that is gone and whose content was walked elsewhere (moved), or whose
// Markdown file was just sent under another id (state from before ids were
// per file: the index migrates to the new ids as folders are ingested).
// Unchanged documents publish nothing. A file that cannot be parsed is
// reported and skipped, and is never taken for deleted.
func Sync(ctx context.Context, paths []string, state bus.KV, publish Publish, opts SyncOptions) (SyncStats, []FileError, error) {
	w := &syncWalk{opts: opts, seen: map[string]bool{}, seenHash: map[string]bool{}, failed: map[string]bool{}}
	if err := w.walk(ctx, paths, state, publish); err != nil {
		return w.st, w.ferrs, err
	}
	err := w.deleteGone(ctx, paths, state, publish)
	return w.st, w.ferrs, err
}

// syncWalk is one Sync: what it saw and sent.
type syncWalk struct {
	opts     SyncOptions
	st       SyncStats
	ferrs    []FileError
	seen     map[string]bool
	seenHash map[string]bool // content hashes of the Markdown documents walked
	failed   map[string]bool
}

func (w *syncWalk) progress() {
	if w.opts.Progress != nil {
		w.opts.Progress(w.st)
	}
}

// walk sends every new or changed document under paths.
func (w *syncWalk) walk(ctx context.Context, paths []string, state bus.KV, publish Publish) error {
	walk := notes.WalkOptions{MaxFileBytes: w.opts.MaxFileBytes, OnWarn: w.opts.warn(&w.st)}
	return notes.WalkWith(paths, walk, func(doc *schemas.DocChanged) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.st.Seen++
		w.seen[doc.DocID] = true
		if doc.Source == schemas.SourceMarkdown {
			w.seenHash[doc.Hash] = true
		}
		err := send(ctx, state, publish, doc, w.opts, &w.st)
		if errors.Is(err, ErrRefused) {
			// Refused before it was sent (too large for the store): this
			// file is reported and skipped, the others go on.
			w.st.Seen--
			w.st.Failed++
			w.failed[notes.Canonical(doc.Path)] = true
			w.ferrs = append(w.ferrs, FileError{Path: doc.Path, Err: err.Error()})
			w.progress()
			return nil
		}
		return err
	}, func(path string, err error) {
		w.st.Failed++
		w.failed[notes.Canonical(path)] = true
		w.ferrs = append(w.ferrs, FileError{Path: path, Err: reason(path, err)})
		w.progress()
	})
}

// deleteGone publishes the deletion of every remembered document the walk
// found gone (see Sync).
func (w *syncWalk) deleteGone(ctx context.Context, paths []string, state bus.KV, publish Publish) error {
	roots := folderRoots(paths)
	igs := map[string]*notes.Ignore{}
	keys, err := state.Keys(ctx)
	if err != nil {
		return err
	}
	for _, key := range keys {
		docID, ok := docIDOfKey(key)
		if !ok || w.seen[docID] {
			continue
		}
		prev, err := loadState(ctx, state, key)
		if err != nil || prev == nil || !filepath.IsAbs(prev.Path) {
			continue // files record absolute paths; anything else is not theirs
		}
		if !w.gone(docID, prev, roots, igs) {
			continue
		}
		version := max(time.Now().UnixNano(), prev.Version+1)
		del := &schemas.DocChanged{DocID: docID, Source: prev.Source, Path: prev.Path, Hash: prev.Hash, Version: version, Deleted: true}
		if err := publish(ctx, del); err != nil {
			return fmt.Errorf("publish deletion of %s: %w", prev.Path, err)
		}
		if err := state.Delete(ctx, key); err != nil {
			return err
		}
		w.st.Deleted++
		if w.opts.OnSent != nil {
			w.opts.OnSent(del)
		}
		w.progress()
	}
	return nil
}

// gone says whether a remembered document this walk did not send is to be
// deleted.
func (w *syncWalk) gone(docID string, prev *docState, roots []string, igs map[string]*notes.Ignore) bool {
	path := notes.Canonical(prev.Path)
	if w.failed[path] {
		return false // unreadable this time: keep what the index has
	}
	_, statErr := os.Stat(path)
	gone := statErr != nil
	markdown := prev.Source == schemas.SourceMarkdown
	switch {
	case !gone && ignoredUnder(path, roots, igs):
		// Left out of a folder walked now (a .gitignore, say): it goes
		// from the index as the walk left it out.
	case markdown && !gone && notes.MarkdownDocID(path) != docID && w.seen[notes.MarkdownDocID(path)]:
		// An id from before ids were per file (relative to the folder
		// ingested): the file was just sent under its own id.
	case gone && underAny(path, roots):
		// Deleted from a folder walked now.
	case gone && markdown && w.seenHash[prev.Hash]:
		// Moved (its folder renamed, say): the same content was walked
		// under its new path.
	default:
		return false // still there, or out of this walk's reach: not a deletion
	}
	return true
}

// send publishes doc unless the state remembers it with the same content
// (and opts.Force is off), and remembers it as sent.
func send(ctx context.Context, state bus.KV, publish Publish, doc *schemas.DocChanged, opts SyncOptions, st *SyncStats) error {
	progress := func() {
		if opts.Progress != nil {
			opts.Progress(*st)
		}
	}
	key := stateKey(doc.DocID)
	prev, err := loadState(ctx, state, key)
	if err != nil {
		return err
	}
	if prev != nil && prev.Hash == doc.Hash && prev.Format >= sendFormat && !opts.Force {
		st.Unchanged++
		progress()
		return nil
	}
	if prev != nil && doc.Version <= prev.Version {
		// Keep versions increasing even when a file's mtime went backwards.
		doc.Version = prev.Version + 1
	}
	doc.Force = opts.Force
	if err := publish(ctx, doc); errors.Is(err, ErrRefused) {
		return err // the caller reports the file and goes on
	} else if err != nil {
		return fmt.Errorf("publish %s: %w", doc.Path, err)
	}
	if err := saveState(ctx, state, key, docState{Hash: doc.Hash, Version: doc.Version, Path: doc.Path, Source: doc.Source, Format: sendFormat}); err != nil {
		return err
	}
	st.Sent++
	if opts.OnSent != nil {
		opts.OnSent(doc)
	}
	progress()
	return nil
}

func loadState(ctx context.Context, kv bus.KV, key string) (*docState, error) {
	raw, err := kv.Get(ctx, key)
	if err != nil || raw == nil {
		return nil, err
	}
	var s docState
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil // unreadable state: treat the document as new
	}
	return &s, nil
}

func saveState(ctx context.Context, kv bus.KV, key string, s docState) error {
	raw, _ := json.Marshal(s)
	return kv.Put(ctx, key, raw)
}

// stateKey makes a KV key (allowed: -/_=.a-zA-Z0-9) from a document id.
func stateKey(docID string) string {
	for _, r := range docID {
		if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return "docx." + hex.EncodeToString([]byte(docID))
		}
	}
	return "doc." + docID
}

func docIDOfKey(key string) (string, bool) {
	if id, ok := strings.CutPrefix(key, "doc."); ok {
		return id, true
	}
	if h, ok := strings.CutPrefix(key, "docx."); ok {
		raw, err := hex.DecodeString(h)
		return string(raw), err == nil
	}
	return "", false
}

// folderRoots returns the absolute folders among paths.
func folderRoots(paths []string) []string {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, notes.Canonical(p))
	}
	return out
}

// ignoredUnder reports whether path, under one of roots, is left out by
// that folder's rules (see notes.Ignore).
func ignoredUnder(path string, roots []string, igs map[string]*notes.Ignore) bool {
	for _, r := range roots {
		if !strings.HasPrefix(path, r+string(filepath.Separator)) {
			continue
		}
		ig := igs[r]
		if ig == nil {
			ig = notes.NewIgnore(r)
			igs[r] = ig
		}
		if ig.Skip(path, false) {
			return true
		}
	}
	return false
}

func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(path, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
