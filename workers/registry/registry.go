// Package registry is the list of this build's roles: every bus stage, the
// sources (the SiYuan bridge, the folder watcher) and the doors. Adding a
// role is its package's declaration (see workers/stage) and one line here.
// The system (internal/system), up, worker --stage, status, check and
// metrics read this list. It may import any worker package; nothing under
// workers/ imports it.
package registry

import (
	"github.com/exocortex/exocortex/workers/answering"
	"github.com/exocortex/exocortex/workers/chunk"
	"github.com/exocortex/exocortex/workers/doors"
	"github.com/exocortex/exocortex/workers/embed"
	"github.com/exocortex/exocortex/workers/index"
	"github.com/exocortex/exocortex/workers/rerank"
	"github.com/exocortex/exocortex/workers/researching"
	"github.com/exocortex/exocortex/workers/retrieve"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/watch"
)

// Stages returns every bus stage's declaration, in pipeline order (the
// order status lists them and WaitIdle polls them).
func Stages() []stage.Declaration {
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

// Services returns the roles that consume no subject: the sources, then
// the doors. up runs those configured.
func Services() []stage.Declaration {
	return []stage.Declaration{
		siyuan.Role(),
		watch.Role(),
		doors.GatewayRole(),
	}
}

// All returns every role: the stages, then the services.
func All() []stage.Declaration { return append(Stages(), Services()...) }

// Catalog is this build's streams, KV buckets and roles.
func Catalog() stage.Catalog {
	return stage.Catalog{Streams: stage.Streams(), Buckets: stage.Buckets(), Stages: Stages(), Services: Services()}
}

// Sources returns the source roles (workers/source): what check, repair,
// status and metrics go through.
func Sources() []stage.Declaration { return Catalog().Sources() }
