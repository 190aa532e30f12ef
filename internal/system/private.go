package system

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
)

// writePrivate writes a file that only its owner may read.
func writePrivate(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// WriteFile keeps the mode of a file that was there.
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// createPrivate creates path empty with mode 0600 when it does not exist,
// so that SQLite, which gives its -wal and -shm files the database's mode,
// keeps them all private.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}

// ownEntries are the names exocortex keeps in a data directory (with their
// suffixes: exocortex.db-wal, nats.nk, nats/, calibration.json.tmp).
var ownEntries = []string{"exocortex.db", "answers.db", "nats", "vectors", "models", answer.CalibrationFile}

func ownEntry(name string) bool {
	for _, own := range ownEntries {
		if name == own || strings.HasPrefix(name, own+".") || strings.HasPrefix(name, own+"-") {
			return true
		}
	}
	return false
}

// securePrivateDir creates the data directory with mode 0700 and takes
// group and other users' access off it and off exocortex's own files and
// folders in it (folders 0700, files 0600), logging what it changed. It
// leaves alone, with a warning, a directory that belongs to another user,
// and what else is in it: a directory that holds other things and nothing
// of exocortex's is not made private.
func securePrivateDir(dir string, log zerolog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if uid, ok := ownerOf(fi); ok && uid != os.Getuid() {
		if fi.Mode().Perm()&0o077 != 0 {
			log.Warn().Str("data", dir).Int("owner_uid", uid).Str("mode", fmt.Sprintf("%04o", fi.Mode().Perm())).
				Msg("the data directory belongs to another user and is open to others: its permissions are left as they are")
		}
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	var tightened []string
	var others []string
	tighten := func(path string, d fs.DirEntry) error {
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil // links and the like: their targets are not ours to change
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished meanwhile
		}
		mode := info.Mode().Perm()
		if mode&0o077 == 0 {
			return nil
		}
		if uid, ok := ownerOf(info); ok && uid != os.Getuid() {
			return nil
		}
		if err := os.Chmod(path, mode&0o700); err != nil {
			return fmt.Errorf("tighten %s: %w", path, err)
		}
		tightened = append(tightened, fmt.Sprintf("%s (was %04o)", path, mode))
		return nil
	}
	ours := len(entries) == 0
	for _, e := range entries {
		if !ownEntry(e.Name()) {
			if info, err := e.Info(); err == nil && info.Mode().Perm()&0o077 != 0 && (e.IsDir() || e.Type().IsRegular()) {
				others = append(others, e.Name())
			}
			continue
		}
		ours = true
		err := filepath.WalkDir(filepath.Join(dir, e.Name()), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // a path that vanished or cannot be read: nothing to tighten
			}
			return tighten(path, d)
		})
		if err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}
	if ours {
		if err := tighten(dir, fs.FileInfoToDirEntry(fi)); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	} else if fi.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("data", dir).Str("mode", fmt.Sprintf("%04o", fi.Mode().Perm())).
			Msg("the data directory holds other things than exocortex's and is open to other users: its permissions are left as they are (exocortex's own files in it are private)")
	}
	if len(tightened) > 0 {
		log.Info().Str("data", dir).Int("paths", len(tightened)).Str("first", tightened[0]).
			Msg("tightened the data directory's permissions: exocortex's folders and files in it were open to other users, now only their owner may use them (folders 0700, files 0600)")
	}
	if len(others) > 0 {
		log.Warn().Str("data", dir).Strs("entries", others).
			Msg("the data directory holds files that are not exocortex's and are open to other users: they are left as they are")
	}
	return nil
}
