package files

import (
	"context"
	"fmt"
	"os"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// AnswerIngest answers an ingest request (kb.files.ingest, a door's POST
// /v1/ingest): it syncs the paths, which are on this machine, as `exocortex
// ingest` does, and replies with what was sent. A path that does not exist
// here is a bad request naming it.
func AnswerIngest(ctx context.Context, req *schemas.IngestRequest, state bus.KV, publish Publish) *schemas.IngestReply {
	rep := &schemas.IngestReply{}
	for _, p := range req.Paths {
		if _, err := os.Stat(p); err != nil {
			rep.Error = &schemas.ReplyError{Code: schemas.ReplyBadRequest,
				Message: fmt.Sprintf("path %s: %v (paths are on the machine that writes the index)", p, err)}
			return rep
		}
	}
	stats, ferrs, err := Sync(ctx, req.Paths, state, publish, SyncOptions{Force: req.Force})
	if err != nil {
		rep.Error = &schemas.ReplyError{Code: schemas.ReplyInternal, Message: "ingest: " + err.Error()}
		return rep
	}
	rep.Files = schemas.IngestStats(stats)
	for _, fe := range ferrs {
		rep.FileErrors = append(rep.FileErrors, schemas.IngestFileError(fe))
	}
	return rep
}
