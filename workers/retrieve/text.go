package retrieve

import (
	"errors"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/scope"
)

// ReadText reads the scope operators and date phrases of a question no
// door read (q.ReadsText: a kb.query.submitted.v2 event without
// options.literal, published straight onto NATS) with the doors' rules
// (scope.Read, as client.ParseQuestion): q keeps the words to search,
// the intersection of what the text says with q.Options.Scope, and is
// marked read. notes say what was read, as reasons ("scope_read: ...").
// A scope that cannot be read or kept leaves q alone and returns refused:
// the stage's reply, with no candidates and the reason (invalid_scope),
// which the answer stage turns into an answer saying what to fix.
func ReadText(q *schemas.QuerySubmitted, now time.Time) (notes []string, refused *schemas.QueryRetrieved) {
	question, s, read, err := scope.Read(q.Question, q.Options.Scope, now)
	if err == nil && question == "" && s == nil {
		err = errors.New("the question is empty: give words to search, or a scope (tag:recipe) to list")
	}
	for _, n := range read {
		notes = append(notes, schemas.ReasonScopeRead+": "+n)
	}
	if err != nil {
		mode := q.Options.Mode
		if mode == "" {
			mode = schemas.ModeLexical
		}
		return nil, &schemas.QueryRetrieved{Query: q.Query, Searched: q.Question, Mode: mode, Candidates: []schemas.Candidate{},
			Reasons: append(notes, schemas.ReasonInvalidScope+": "+err.Error()), SubmittedAt: q.Time}
	}
	q.Question, q.Options.Scope, q.Options.Literal = question, s, true
	return notes, nil
}
