package chunk

import (
	"encoding/json"
	"fmt"
	"strings"
)

// This file serves exocortex check: a document's chunk manifest as the
// stage saved it, read from outside the stage.

// ManifestChunk is one chunk a manifest lists.
type ManifestChunk struct {
	ID   string
	Hash string
}

// Manifest is what the chunk stage remembers of a document: the version and
// content hash of the change it last handed on, and its chunks in order.
type Manifest struct {
	Version int64
	DocHash string
	Chunks  []ManifestChunk
}

// DecodeManifest reads a manifest stored under a ManifestKey.
func DecodeManifest(data []byte) (Manifest, error) {
	var mf manifest
	if err := json.Unmarshal(data, &mf); err != nil {
		return Manifest{}, fmt.Errorf("decode chunk manifest: %w", err)
	}
	out := Manifest{Version: mf.Version, DocHash: mf.DocHash, Chunks: make([]ManifestChunk, len(mf.Chunks))}
	for i, e := range mf.Chunks {
		out.Chunks[i] = ManifestChunk{ID: e.ID, Hash: e.Hash}
	}
	return out, nil
}

// DocOfChunk is the document id a chunk id belongs to (chunk ids are the
// document id, ':' and 16 hex digits); "" when id is not such an id.
func DocOfChunk(id string) string {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 || len(id)-i-1 != 16 {
		return ""
	}
	return id[:i]
}

// DocOfManifestKey is the document id of a manifest key when the key holds
// it whole (ids of [-_a-zA-Z0-9] only); "" when it was hashed.
func DocOfManifestKey(key string) string {
	id, ok := strings.CutPrefix(key, "chunks.")
	if !ok || strings.Contains(id, "=") || ManifestKey(id) != key {
		return ""
	}
	return id
}
