// Package notes reads notes on disk into DocChanged events: Markdown
// files (an Obsidian-style vault or any folder of notes) and SiYuan .sy files
// (a notebook folder from SiYuan's data directory). It is pure Go and knows
// nothing of the bus: the caller (the files source, workers/files; exocortex
// eval) stamps and publishes the events. It may import schemas; never bus,
// store or workers/.
//
// Block ids: SiYuan blocks keep their own ids. Markdown blocks get
// DocID + "#" + a hash of the block's type and source, so an edit changes the
// id of the edited block (and of the containers around it) only.
//
// List items: a list_item holds the text of its own first line(s) (for
// Markdown) or is a pure container whose text lives in paragraph children (for
// SiYuan, as SiYuan stores it). Nested lists and other blocks of an item are its
// children in both.
package notes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/exocortex/exocortex/schemas"
)

// Walk visits every document under paths (each a file or folder): *.md and
// *.markdown files, and SiYuan .sy files. It calls fn for each parsed
// document, path by path in the order given and, inside a folder, in sorted
// path order (a SiYuan parent document before its children). A file that
// cannot be read or parsed is reported to onErr (which may be nil) and
// skipped. Hidden files and folders (.git, .obsidian, .siyuan, ...), editor
// temporary files, Logseq's logseq/ folder, gitignored paths (see Ignore)
// and other files are skipped. Walk returns an error when a given path does not exist,
// before visiting anything, or the first error fn returns, which stops it.
//
// Markdown files under a folder use that folder as their root (wikilinks
// resolve inside it and title paths start below it); a single Markdown file
// uses its own folder. Their DocIDs do not depend on the root (see
// MarkdownDocID). Paths are walked with symlinks resolved. A .sy file belongs to the notebook folder above it (see
// LoadNotebook).
func Walk(paths []string, fn func(doc *schemas.DocChanged) error, onErr func(path string, err error)) error {
	return WalkWith(paths, WalkOptions{}, fn, onErr)
}

// WalkOptions tunes a walk (WalkWith, WalkUnder); the zero value is Walk's.
type WalkOptions struct {
	// MaxFileBytes is the largest file read (DefaultMaxFileBytes when 0 or
	// less); a larger one is reported to onErr with ErrTooLarge and skipped.
	MaxFileBytes int64
	// OnWarn, when set, is told what was done to read a file that is not
	// UTF-8 or whose front matter is broken (the file is still handed to fn).
	OnWarn func(path, note string)
	// Ignore is WalkUnder's rules of its root (a watcher's own, kept across
	// walks); nil: the root's own rules, read afresh.
	Ignore *Ignore
}

// DefaultMaxFileBytes is the largest file Walk reads: 64 MiB. A larger one is
// reported to onErr with ErrTooLarge and skipped.
const DefaultMaxFileBytes = 64 << 20

// ErrTooLarge is the error of a file over the size limit.
var ErrTooLarge = errors.New("file too large")

// WalkWith is Walk with opts' size limit and OnWarn (opts.Ignore is not
// used: each folder's own rules are read).
func WalkWith(paths []string, opts WalkOptions, fn func(doc *schemas.DocChanged) error, onErr func(path string, err error)) error {
	maxBytes := opts.MaxFileBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	onWarn := opts.OnWarn
	if onErr == nil {
		onErr = func(string, error) {}
	}
	abs := make([]string, len(paths))
	infos := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		a := Canonical(p) // a folder named through a symlink is walked as itself
		info, err := os.Stat(a)
		if err != nil {
			return fmt.Errorf("walk: %w", err)
		}
		abs[i], infos[i] = a, info
	}

	w := &walker{fn: fn, onErr: onErr, notebooks: map[string]*Notebook{}, maxBytes: maxBytes, onWarn: onWarn}
	for i, p := range abs {
		var err error
		if infos[i].IsDir() {
			err = w.folder(p)
		} else {
			err = w.file(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// walker carries what a walk shares across files.
type walker struct {
	fn        func(*schemas.DocChanged) error
	onErr     func(string, error)
	notebooks map[string]*Notebook // by folder
	maxBytes  int64
	onWarn    func(path, note string) // may be nil
	// ignore, when set, is the rules of the folder walked (a watcher's own,
	// kept across walks); else each folder's are read afresh.
	ignore *Ignore
}

// read reads a file within the size limit.
func (w *walker) read(p string) ([]byte, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if info.Size() > w.maxBytes {
		return nil, fmt.Errorf("%s: %w: %s, the limit is %s", p, ErrTooLarge, humanize.IBytes(uint64(info.Size())), humanize.IBytes(uint64(w.maxBytes)))
	}
	return os.ReadFile(p)
}

// isHidden reports whether a file or folder name is hidden (".git", ".siyuan").
func isHidden(name string) bool { return strings.HasPrefix(name, ".") && name != "." && name != ".." }

// file handles one path given to Walk that is not a folder.
func (w *walker) file(p string) error {
	switch {
	case isMarkdown(p):
		v, err := newVault(filepath.Dir(p))
		if err != nil {
			w.onErr(p, err)
			return nil
		}
		v.onNote = w.onWarn
		return w.markdown(v, p)
	case strings.EqualFold(filepath.Ext(p), ".sy"):
		return w.siyuan(p)
	}
	w.onErr(p, fmt.Errorf("%s: not a Markdown or SiYuan .sy file", p))
	return nil
}

// folder handles one folder given to Walk: it lists the documents, sorts them
// and parses them one by one.
func (w *walker) folder(root string) error {
	var mds, all []string
	ig := w.ignore
	if ig == nil || ig.Root() != root {
		ig = NewIgnore(root)
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			w.onErr(p, err)
			return nil // an unreadable folder is skipped, the walk goes on
		}
		if p == root {
			return nil
		}
		if ig.Skip(p, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if isMarkdown(p) {
			mds = append(mds, p)
			all = append(all, p)
		} else if strings.EqualFold(filepath.Ext(p), ".sy") {
			all = append(all, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Sorting whole paths puts "<id>.sy" before the "<id>/" folder of its
	// children ('.' < '/').
	sort.Strings(all)

	v, err := newVault(root)
	if err != nil {
		return err
	}
	v.onNote = w.onWarn
	rels := make([]string, 0, len(mds))
	for _, p := range mds {
		if rel, err := filepath.Rel(root, p); err == nil {
			rels = append(rels, rel)
		}
	}
	v.setFiles(rels)

	for _, p := range all {
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

// markdown reads and parses one Markdown file of vault v and hands it to fn.
func (w *walker) markdown(v *vault, p string) error {
	content, err := w.read(p)
	if err != nil {
		w.onErr(p, err)
		return nil
	}
	doc, err := v.parse(p, content)
	if err != nil {
		w.onErr(p, err)
		return nil
	}
	return w.fn(doc)
}

// siyuan reads and parses one .sy file and hands it to fn.
func (w *walker) siyuan(p string) error {
	nb := w.notebook(notebookDir(p))
	content, err := w.read(p)
	if err != nil {
		w.onErr(p, err)
		return nil
	}
	doc, err := ParseSiYuan(p, content, *nb)
	if err != nil {
		w.onErr(p, err)
		return nil
	}
	return w.fn(doc)
}

// notebook loads a notebook once per walk; a broken conf.json is reported
// once and the notebook is used without a name.
func (w *walker) notebook(dir string) *Notebook {
	if nb, ok := w.notebooks[dir]; ok {
		return nb
	}
	nb, err := LoadNotebook(dir)
	if err != nil {
		w.onErr(filepath.Join(dir, ".siyuan", "conf.json"), err)
	}
	w.notebooks[dir] = &nb
	return &nb
}
