package answering

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Concurrency is how many questions one process answers at once. An answer
// is mostly waiting on the language model, so one worker would make each
// question wait for every answer ahead of it (20 people asking at once
// waited up to 20 answers for their first token); the providers' own rate
// limits and the router bound the real load. 200 questions at once waited
// 1.8 times longer at 32 than at 128 (BenchmarkDoors); a worker waiting
// costs a goroutine, not a pull request (see bus.RunOptions).
const Concurrency = 128

// Stage declares the answer stage: kb.query.reranked -> tokens on
// kb.answer.tokens.<query_id> (core NATS), kb.answer.done and
// kb.answer.followups.
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:    "answer",
		Stream:  stage.StreamQuery,
		Inputs:  []string{schemas.SubjectReranked},
		Outputs: []string{schemas.SubjectAnswerTokensPrefix + "*", schemas.SubjectAnswerDone, schemas.SubjectAnswerFollowUps},
		// An answer waits on a language model: minutes at worst, with retries.
		AckWait:    3 * time.Minute,
		MaxDeliver: 2,
		// Each worker takes one question at a time, so no question waits
		// behind others fetched in the same batch while workers are idle.
		Concurrency: Concurrency,
		Batch:       1,
		Needs:       stage.NeedAnswerer,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			var opts []Option
			if d.Bus != nil {
				opts = append(opts, WithCancels(d.Bus.Subscribe))
			}
			return New(d.Answerer, d.PublishCore, d.Publish, opts...), nil
		},
	}
}
