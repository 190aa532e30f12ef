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

// AnswerIngests answers kb.files.ingest on b until stop is called: the
// paths are read on this machine (state remembers what was sent), their
// documents published on b under the request's trace id.
func AnswerIngests(b *bus.Bus, state bus.KV) (stop func(), err error) {
	return b.Answer(schemas.SubjectIngest, func(ctx context.Context, ev schemas.Event) schemas.Event {
		req := ev.(*schemas.IngestRequest)
		return AnswerIngest(ctx, req, state, func(ctx context.Context, doc *schemas.DocChanged) error {
			_, err := b.Publish(ctx, doc, req.TraceID)
			return err
		})
	})
}
