package answer

import (
	"context"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

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
		Needs:      stage.NeedAnswerer,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			var opts []Option
			if d.Bus != nil {
				opts = append(opts, WithCancels(d.Bus.Subscribe))
			}
			return New(d.Answerer, d.PublishCore, d.Publish, opts...), nil
		},
	}
}
