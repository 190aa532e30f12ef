package watch

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/notes"
)

// ListFile is the watch list inside a data directory: one folder a line
// (absolute; blank lines and lines starting with # are skipped). ingest adds
// the folders it is given (unless --once); up watches them all, with the
// folders given to --watch.
func ListFile(dataDir string) string { return filepath.Join(dataDir, "watch") }

// ReadList returns the folders of the data directory's watch list (none when
// there is no list).
func ReadList(dataDir string) ([]string, error) {
	f, err := os.Open(ListFile(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the watch list: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the watch list %s: %w", ListFile(dataDir), err)
	}
	return out, nil
}

// AddToList adds the folders among paths (files are left out: a single file
// is not watched) to the data directory's watch list, absolute with symlinks
// resolved, each once. It returns the folders newly added.
func AddToList(dataDir string, paths []string) ([]string, error) {
	have, err := ReadList(dataDir)
	if err != nil {
		return nil, err
	}
	var added []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		c := notes.Canonical(p)
		if slices.Contains(have, c) || slices.Contains(added, c) {
			continue
		}
		added = append(added, c)
	}
	if len(added) == 0 {
		return nil, nil
	}
	f, err := os.OpenFile(ListFile(dataDir), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("add to the watch list: %w", err)
	}
	for _, p := range added {
		if _, err := fmt.Fprintln(f, p); err != nil {
			f.Close()
			return nil, fmt.Errorf("add to the watch list %s: %w", ListFile(dataDir), err)
		}
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("add to the watch list %s: %w", ListFile(dataDir), err)
	}
	return added, nil
}

// Union joins folder lists, each folder once (compared absolute, symlinks
// resolved), in order.
func Union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, p := range l {
			c := notes.Canonical(p)
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}
