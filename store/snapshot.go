package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
)

// SnapshotFile writes a consistent copy of the SQLite database at src (the
// index, or any other database such as the answer cache) to dst with VACUUM
// INTO, through a read-only connection of its own: it reads one WAL
// snapshot, so a writer in another process may go on meanwhile, and the
// copy holds exactly the transactions committed when it began. dst must not
// exist. The copy is compact (no free pages) and has no -wal file.
func SnapshotFile(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("snapshot %s: %w", src, err)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("snapshot %s into %s: %w", src, dst, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot %s into %s: %w", src, dst, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	d, err := dsn(src, q)
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite", d)
	if err != nil {
		return fmt.Errorf("snapshot %s: open: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("snapshot %s into %s: %w", src, dst, err)
	}
	return nil
}
