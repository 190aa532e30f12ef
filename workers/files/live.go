package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// This file serves a watcher of a folder: it sends the few documents that
// changed under the folder, read exactly as Sync reads them when it walks the
// whole folder (same ids, title paths and wikilinks), without walking it.

// SyncFiles publishes, as Sync does, every new or changed document among
// paths: files and folders (every document below one) under root, the
// folder a watcher follows (absolute, canonical). A path that is gone,
// outside root or left out by ig (nil: the root's own rules) is passed
// over: deletions are the caller's (see Delete). Unchanged documents
// publish nothing; a file that cannot be read or parsed is reported and
// skipped.
func SyncFiles(ctx context.Context, root string, paths []string, ig *Ignore, state bus.KV, publish Publish, opts SyncOptions) (SyncStats, []FileError, error) {
	var st SyncStats
	var ferrs []FileError
	if ig == nil {
		ig = NewIgnore(root)
	}
	v, err := newVault(root)
	if err != nil {
		return st, nil, err
	}
	w := &walker{
		fn: func(doc *schemas.DocChanged) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			st.Seen++
			err := send(ctx, state, publish, doc, opts, &st)
			if errors.Is(err, ErrRefused) {
				st.Seen--
				st.Failed++
				ferrs = append(ferrs, FileError{Path: doc.Path, Err: err.Error()})
				return nil
			}
			return err
		},
		onErr: func(path string, err error) {
			st.Failed++
			ferrs = append(ferrs, FileError{Path: path, Err: reason(path, err)})
		},
		onWarn: func(path, note string) {
			st.Warned++
			if opts.OnWarning != nil {
				opts.OnWarning(FileError{Path: path, Err: note})
			}
		},
		notebooks: map[string]*Notebook{},
		maxBytes:  opts.MaxFileBytes,
		ignore:    ig,
	}
	if w.maxBytes <= 0 {
		w.maxBytes = DefaultMaxFileBytes
	}
	v.onNote = w.onWarn

	var docs []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			docs = append(docs, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || ig.Skip(p, info.IsDir()) {
			continue
		}
		if !info.IsDir() {
			if IsDocument(p) {
				add(p)
			}
			continue
		}
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				w.onErr(q, err)
				return nil
			}
			if q != p && ig.Skip(q, d.IsDir()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && IsDocument(q) {
				add(q)
			}
			return nil
		})
	}
	sort.Strings(docs) // a SiYuan parent before its children
	for _, p := range docs {
		if isMarkdown(p) {
			err = w.markdown(v, p)
		} else {
			err = w.siyuan(p)
		}
		if err != nil {
			return st, ferrs, err
		}
	}
	return st, ferrs, nil
}

// IsDocument reports whether a file is one the files source reads: a
// Markdown file (.md, .markdown) or a SiYuan .sy file.
func IsDocument(name string) bool {
	return isMarkdown(name) || strings.EqualFold(filepath.Ext(name), ".sy")
}
