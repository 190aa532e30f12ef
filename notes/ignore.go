package notes

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// Ignore decides which paths under a folder are not notes: hidden files and
// folders (.git, .obsidian, .trash, .logseq, ...), editor temporary files
// (*.swp, *~, .#*, *.tmp, vim's 4913, LibreOffice's .~lock*), Logseq's own
// logseq/ folder (its config, backups and version files: copies of pages,
// not pages) and whatever the folder's .gitignore files ignore. Walking a
// folder and watching it skip by the same rules, so a watched folder and an
// ingested one hold the same notes.
//
// The .gitignore matcher covers the common patterns: comments, blank lines,
// negation (!), a trailing / for folders only, a leading or inner / to
// anchor at the .gitignore's folder, *, ?, [...] and **. A .gitignore in any
// folder applies below it; a deeper one's rules come after (and win over)
// its parents'.
type Ignore struct {
	root string
	// logseq: the folder is a Logseq graph (logseq/config.edn exists).
	logseq bool

	mu    sync.Mutex
	rules map[string][]gitRule // by folder, relative to root ("." for root); nil: none
}

// NewIgnore returns the rules of the folder root (absolute, canonical).
func NewIgnore(root string) *Ignore {
	_, err := os.Stat(filepath.Join(root, "logseq", "config.edn"))
	return &Ignore{root: root, logseq: err == nil, rules: map[string][]gitRule{}}
}

// Root is the folder the rules are for.
func (ig *Ignore) Root() string { return ig.root }

// Forget drops what was read of the .gitignore in folder dir (absolute),
// so that it is read again (it changed).
func (ig *Ignore) Forget(dir string) {
	rel, err := filepath.Rel(ig.root, dir)
	if err != nil {
		return
	}
	ig.mu.Lock()
	delete(ig.rules, filepath.ToSlash(rel))
	ig.mu.Unlock()
	if rel == "." {
		_, err := os.Stat(filepath.Join(ig.root, "logseq", "config.edn"))
		ig.logseq = err == nil
	}
}

// Skip reports whether path (absolute, under root; dir tells whether it is
// a folder) is left out, itself or through a folder above it. The root
// itself is never left out; a path outside root always is.
func (ig *Ignore) Skip(p string, dir bool) bool {
	rel, err := filepath.Rel(ig.root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return true
	}
	if rel == "." {
		return false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, name := range parts {
		isDir := dir || i < len(parts)-1
		if SkippedName(name, isDir) {
			return true
		}
		if i == 0 && isDir && ig.logseq && name == "logseq" {
			return true
		}
		if ig.gitIgnored(parts[:i+1], isDir) {
			return true
		}
	}
	return false
}

// SkippedName reports whether a file or folder is left out by its name
// alone: hidden (a leading dot: .git, .obsidian, .trash, .#note.md,
// .~lock.note.md#) or an editor's temporary file (*.swp, *.swx, *~, *.tmp,
// vim's write test "4913").
func SkippedName(name string, dir bool) bool {
	if isHidden(name) {
		return true
	}
	if dir {
		return false
	}
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, "~"), strings.HasSuffix(lower, ".swp"), strings.HasSuffix(lower, ".swx"),
		strings.HasSuffix(lower, ".tmp"), lower == "4913":
		return true
	}
	return false
}

// gitIgnored applies the .gitignore files of the folders above the path
// parts (relative to root), the root's first: the last rule that matches
// decides.
func (ig *Ignore) gitIgnored(parts []string, dir bool) bool {
	ignored := false
	for d := 0; d < len(parts); d++ {
		folder := "."
		if d > 0 {
			folder = strings.Join(parts[:d], "/")
		}
		rel := strings.Join(parts[d:], "/")
		for _, r := range ig.rulesOf(folder) {
			if r.dirOnly && !dir {
				continue
			}
			if r.match(rel) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}

// rulesOf reads (once) the .gitignore of folder (relative to root).
func (ig *Ignore) rulesOf(folder string) []gitRule {
	ig.mu.Lock()
	defer ig.mu.Unlock()
	if rs, ok := ig.rules[folder]; ok {
		return rs
	}
	raw, err := os.ReadFile(filepath.Join(ig.root, filepath.FromSlash(folder), ".gitignore"))
	var rs []gitRule
	if err == nil {
		rs = parseGitignore(string(raw))
	}
	ig.rules[folder] = rs
	return rs
}

// gitRule is one line of a .gitignore.
type gitRule struct {
	segs     []string // the pattern split at "/"
	negate   bool
	dirOnly  bool
	anchored bool // matched against the whole relative path, else the name
}

func parseGitignore(text string) []gitRule {
	var out []gitRule
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.HasSuffix(line, `\ `) {
			line = strings.TrimRight(line, " \t")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r gitRule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if strings.HasPrefix(line, "/") {
			r.anchored, line = true, strings.TrimLeft(line, "/")
		} else if strings.Contains(line, "/") {
			r.anchored = true
		}
		if line == "" {
			continue
		}
		r.segs = strings.Split(line, "/")
		out = append(out, r)
	}
	return out
}

// match reports whether rel (slash-separated, relative to the .gitignore's
// folder) is what the rule names.
func (r gitRule) match(rel string) bool {
	parts := strings.Split(rel, "/")
	if !r.anchored {
		return globSeg(r.segs[0], parts[len(parts)-1])
	}
	return globPath(r.segs, parts)
}

// globPath matches pattern segments against path segments; "**" matches
// any number of segments (none included).
func globPath(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(parts); i++ {
				if globPath(rest, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 || !globSeg(pat[0], parts[0]) {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

func globSeg(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}
