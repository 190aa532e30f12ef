package index

import (
	"context"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage declares the index stage, the single writer of the SQLite store:
// chunks, document structure and vectors (kb.chunk.created,
// kb.doc.structure, kb.embed.done), in batches of 256 with one worker.
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:           "index",
		Stream:         stage.StreamIngest,
		Inputs:         []string{schemas.SubjectChunkCreated, schemas.SubjectDocStructure, schemas.SubjectEmbedDone},
		MaxConcurrency: 1, // SQLite has one writer
		Batch:          256,
		Needs:          stage.NeedStoreWrite | stage.NeedVectors,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			if d.Vectors != nil {
				return NewWithVectors(stage.ConfigOf(d, DefaultConfig()), d.Store, d.Vectors)
			}
			return New(stage.ConfigOf(d, DefaultConfig()), d.Store), nil
		},
	}
}
