package files

import (
	"context"
	"errors"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// This file serves a watcher of a folder: it sends the few documents that
// changed under the folder, read exactly as Sync reads them when it walks the
// whole folder (same ids, title paths and wikilinks), without walking it
// (see notes.WalkUnder).

// SyncFiles publishes, as Sync does, every new or changed document among
// paths: files and folders (every document below one) under root, the
// folder a watcher follows (absolute, canonical). A path that is gone,
// outside root or left out by ig (nil: the root's own rules) is passed
// over: deletions are the caller's (see Delete). Unchanged documents
// publish nothing; a file that cannot be read or parsed is reported and
// skipped.
func SyncFiles(ctx context.Context, root string, paths []string, ig *notes.Ignore, state bus.KV, publish Publish, opts SyncOptions) (SyncStats, []FileError, error) {
	var st SyncStats
	var ferrs []FileError
	hand := func(doc *schemas.DocChanged) error {
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
	}
	onErr := func(path string, err error) {
		st.Failed++
		ferrs = append(ferrs, FileError{Path: path, Err: reason(path, err)})
	}
	err := notes.WalkUnder(root, paths, notes.WalkOptions{MaxFileBytes: opts.MaxFileBytes, OnWarn: opts.warn(&st), Ignore: ig}, hand, onErr)
	return st, ferrs, err
}
