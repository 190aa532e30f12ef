package retrieve

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Concurrency is how many questions one process retrieves for at once. A
// question may wait on the language model here (its translation into the
// notes' other languages, its reformulation from the chat history), so one
// worker would make each question wait for every one ahead of it; the
// search itself is short reads. With 32, a thousand searches at once behind
// a provider taking 0.6 s to translate waited 20 s for the last (1000/32
// rounds); a worker waiting costs a goroutine, not a pull request (the
// stage's one fetcher hands out the messages, see bus.RunOptions).
const Concurrency = 128

// Stage declares the retrieve stage: kb.query.submitted ->
// kb.query.retrieved.
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:    "retrieve",
		Stream:  stage.StreamQuery,
		Inputs:  []string{schemas.SubjectQuery},
		Outputs: []string{schemas.SubjectRetrieved},
		AckWait: 30 * time.Second,
		// Each worker takes one question at a time, so no question waits
		// behind others fetched in the same batch while workers are idle.
		Concurrency: Concurrency,
		Batch:       1,
		// NeedReranker: the mode a question gets is decided here, by the
		// models this process has; a retrieve worker on its own machine
		// must know the reranker is installed (it is never loaded here).
		Needs: stage.NeedStore | stage.NeedLexical | stage.NeedEmbedder | stage.NeedVectors | stage.NeedReranker |
			stage.NeedRetriever,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			return NewRetrieve(d.Retriever), nil
		},
	}
}
