// Package stages is the registry of this build's stages. Adding a stage is
// its package's declaration (see workers/stage) and one line in All.
package stages

import (
	"github.com/exocortex/exocortex/workers/answering"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/embed"
	"github.com/exocortex/exocortex/workers/index"
	"github.com/exocortex/exocortex/workers/rerank"
	"github.com/exocortex/exocortex/workers/researching"
	"github.com/exocortex/exocortex/workers/retrieve"
	"github.com/exocortex/exocortex/workers/stage"
)

// All returns every stage's declaration, in pipeline order (the order
// status lists them and WaitIdle polls them).
func All() []stage.Declaration {
	return []stage.Declaration{
		chunk.Stage(),
		index.Stage(),
		embed.Stage(),
		retrieve.Stage(),
		rerank.Stage(),
		answering.Stage(),
		researching.PlanStage(),
		researching.InvestigateStage(),
		researching.DraftStage(),
		researching.ReportStage(),
	}
}

// Catalog is this build's streams, KV buckets and stages.
func Catalog() stage.Catalog {
	return stage.Catalog{Streams: stage.Streams(), Buckets: stage.Buckets(), Stages: All()}
}
