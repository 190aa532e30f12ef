package notes

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// This file serves a watcher of a folder: it reads the few documents that
// changed under the folder exactly as Walk reads them when it walks the
// whole folder (same ids, title paths and wikilinks), without walking it.

// WalkUnder hands fn, as Walk does, every document among paths: files and
// folders (every document below one) under root, the folder a watcher
// follows (absolute, canonical). A path that is gone, outside root or left
// out by opts.Ignore (nil: the root's own rules) is passed over. A file
// that cannot be read or parsed is reported to onErr and skipped; WalkUnder
// returns the first error fn returns, which stops it.
func WalkUnder(root string, paths []string, opts WalkOptions, fn func(doc *schemas.DocChanged) error, onErr func(path string, err error)) error {
	ig := opts.Ignore
	if ig == nil {
		ig = NewIgnore(root)
	}
	v, err := newVault(root)
	if err != nil {
		return err
	}
	if onErr == nil {
		onErr = func(string, error) {}
	}
	w := &walker{fn: fn, onErr: onErr, onWarn: opts.OnWarn, notebooks: map[string]*Notebook{},
		maxBytes: opts.MaxFileBytes, ignore: ig}
	if w.maxBytes <= 0 {
		w.maxBytes = DefaultMaxFileBytes
	}
	v.onNote = w.onWarn

	for _, p := range w.documentsAmong(paths) {
		if isMarkdown(p) {
			err = w.markdown(v, p)
		} else {
			err = w.siyuan(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// documentsAmong lists the documents among paths (files, and every document
// below a folder) that w.ignore keeps, each once, sorted: a SiYuan parent
// before its children.
func (w *walker) documentsAmong(paths []string) []string {
	ig := w.ignore
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
	return docs
}

// IsDocument reports whether a file is one Walk reads: a Markdown file
// (.md, .markdown) or a SiYuan .sy file.
func IsDocument(name string) bool {
	return isMarkdown(name) || strings.EqualFold(filepath.Ext(name), ".sy")
}
