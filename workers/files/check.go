package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// This file serves exocortex check: what the source state (KB_SOURCES)
// remembers of the files ingested, the folders ingested, and the resends
// and deletions a repair makes through the normal path.

// Remembered is a document the files source sent and has not deleted: its
// entry in the source state.
type Remembered struct {
	DocID   string `json:"doc_id"`
	Path    string `json:"path"` // absolute
	Source  string `json:"source"`
	Hash    string `json:"hash"`
	Version int64  `json:"version"`
}

// RememberedDocs lists the documents of the files source in state (entries
// with an absolute path; the SiYuan bridge's have none).
func RememberedDocs(ctx context.Context, state bus.KV) ([]Remembered, error) {
	keys, err := state.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list source state: %w", err)
	}
	var out []Remembered
	for _, key := range keys {
		docID, ok := docIDOfKey(key)
		if !ok {
			continue
		}
		s, err := loadState(ctx, state, key)
		if err != nil {
			return nil, fmt.Errorf("read source state %s: %w", key, err)
		}
		if s == nil || !filepath.IsAbs(s.Path) {
			continue
		}
		out = append(out, Remembered{DocID: docID, Path: s.Path, Source: s.Source, Hash: s.Hash, Version: s.Version})
	}
	return out, nil
}

// rootPrefix keys the folders and files given to ingest in the source state.
const rootPrefix = "root."

// Root is what the state keeps of a path given to ingest.
type Root struct {
	Path string    `json:"path"`
	Dir  bool      `json:"dir"` // a folder (else one file)
	At   time.Time `json:"at"`
}

func rootKey(path string) string {
	sum := sha256.Sum256([]byte(path))
	return rootPrefix + hex.EncodeToString(sum[:12])
}

// RecordRoots remembers the folders and files given to ingest (absolute,
// symlinks resolved), so that exocortex check knows what to compare the
// index with. A path that does not exist is not recorded.
func RecordRoots(ctx context.Context, state bus.KV, paths []string) error {
	for _, p := range paths {
		c := notes.Canonical(p)
		fi, err := os.Stat(c)
		if err != nil {
			continue
		}
		raw, _ := json.Marshal(Root{Path: c, Dir: fi.IsDir(), At: time.Now().UTC()})
		if err := state.Put(ctx, rootKey(c), raw); err != nil {
			return fmt.Errorf("record ingested path %s: %w", c, err)
		}
	}
	return nil
}

// ForgetRoot forgets a path RecordRoots recorded.
func ForgetRoot(ctx context.Context, state bus.KV, path string) error {
	if err := state.Delete(ctx, rootKey(path)); err != nil {
		return fmt.Errorf("forget ingested path %s: %w", path, err)
	}
	return nil
}

// Roots returns the folders and files ingest has recorded, in key order.
func Roots(ctx context.Context, state bus.KV) ([]Root, error) {
	keys, err := state.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list source state: %w", err)
	}
	var out []Root
	for _, key := range keys {
		if !strings.HasPrefix(key, rootPrefix) {
			continue
		}
		raw, err := state.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read source state %s: %w", key, err)
		}
		var r Root
		if raw == nil || json.Unmarshal(raw, &r) != nil || r.Path == "" {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// ContentHash is the hash the files source gives a document's content.
func ContentHash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// Resend walks paths as ingest does and publishes, marked Force, every
// document want accepts, at a version above the one remembered and above
// floor (the newest version the stages hold of it), so that neither the
// stream's duplicate window nor the stages' version checks drop it, and
// remembers it as sent. It returns how many were sent; files that fail to
// parse go to onErr (which may be nil).
func Resend(ctx context.Context, paths []string, state bus.KV, publish Publish, want func(docID string) (floor int64, ok bool), onErr func(path string, err error)) (int, error) {
	sent := 0
	err := notes.Walk(paths, func(doc *schemas.DocChanged) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		floor, ok := want(doc.DocID)
		if !ok {
			return nil
		}
		key := stateKey(doc.DocID)
		prev, err := loadState(ctx, state, key)
		if err != nil {
			return err
		}
		if prev != nil && doc.Version <= prev.Version {
			doc.Version = prev.Version + 1
		}
		doc.Version = max(doc.Version, floor+1)
		doc.Force = true
		if err := publish(ctx, doc); err != nil {
			return fmt.Errorf("publish %s: %w", doc.Path, err)
		}
		if err := saveState(ctx, state, key, docState{Hash: doc.Hash, Version: doc.Version, Path: doc.Path, Source: doc.Source, Format: sendFormat}); err != nil {
			return err
		}
		sent++
		return nil
	}, onErr)
	return sent, err
}

// Delete publishes the deletion of a document whose source is gone (the
// normal deletion path: the chunk stage tombstones its chunks, the index
// drops it) and forgets it in state. version is the newest version known of
// it anywhere (source state, index, manifest): the deletion goes above it.
func Delete(ctx context.Context, state bus.KV, publish Publish, docID, source, path, hash string, version int64) error {
	del := &schemas.DocChanged{DocID: docID, Source: source, Path: path, Hash: hash,
		Version: max(time.Now().UnixNano(), version+1), Deleted: true}
	if err := publish(ctx, del); err != nil {
		return fmt.Errorf("publish deletion of %s: %w", docID, err)
	}
	if err := state.Delete(ctx, stateKey(docID)); err != nil {
		return fmt.Errorf("forget %s in the source state: %w", docID, err)
	}
	return nil
}
