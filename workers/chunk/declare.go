// Package chunk is the chunk stage: it turns a document's blocks
// (schemas.DocChanged) into block-aware chunks (schemas.ChunkCreated) and the
// document's skeleton (schemas.DocStructure).
//
// The chunker itself is chunking.Split; NewHandler wraps it into a
// bus.Handler that keeps a manifest per document in a bus.KV, so that only
// new and changed chunks are emitted and removed ones become tombstones.
package chunk

import (
	"context"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage declares the chunk stage: kb.doc.changed -> kb.chunk.created (and
// kb.doc.structure), its manifests in KB_CHUNKS. Its chunking.Config comes from the
// system's stage configs (a chunk.Config; DefaultConfig without one).
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:    "chunk",
		Stream:  stage.StreamIngest,
		Inputs:  []string{schemas.SubjectDocChanged},
		Outputs: []string{schemas.SubjectChunkCreated, schemas.SubjectDocStructure},
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			kv, err := d.KV(ctx, stage.BucketChunks)
			if err != nil {
				return nil, err
			}
			return NewHandler(stage.ConfigOf(d, chunking.DefaultConfig()), kv), nil
		},
	}
}
