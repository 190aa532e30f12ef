package retrieve

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage declares the retrieve stage: kb.query.submitted ->
// kb.query.retrieved.
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:    "retrieve",
		Stream:  stage.StreamQuery,
		Inputs:  []string{schemas.SubjectQuery},
		Outputs: []string{schemas.SubjectRetrieved},
		AckWait: 30 * time.Second,
		Needs:   stage.NeedStore | stage.NeedEmbedder | stage.NeedVectors | stage.NeedRetriever,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			return NewRetrieve(d.Retriever), nil
		},
	}
}
