package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/scope"
)

// ScopeError is a scope that cannot be read or kept: a misspelt operator,
// a bad date, a range or a set of values that keeps nothing. The CLI shows
// it as a usage error, the HTTP door as 400 invalid_scope.
type ScopeError struct{ Err error }

func (e *ScopeError) Error() string { return e.Err.Error() }
func (e *ScopeError) Unwrap() error { return e.Err }

// NoteListScope is the note of a question of scope operators alone.
const NoteListScope = scope.NoteListScope

// ParseQuestion reads the scope a person typed into text, as of now in
// now's location: inline operators (tag:recipe, in:"Work notes",
// path:projects/atlas, after:2024-03-01, тег:, в:, путь:, после: …) and
// date phrases ("this month", "в прошлом месяце"), see scope.Parse. Both
// what text says and given (a scope the door got apart from the text: CLI
// flags, a request's scope field; nil: none) apply: the result is their
// intersection (Intersect); given is not changed.
//
// question is the words left to search: "" when text is operators alone,
// which asks for the scope's notes (the retrieve stage lists them); s is
// nil when nothing narrows; notes tell the person what was read and kept
// (every door shows them with the reply's reasons). An error is a
// *ScopeError naming what to fix (an unknown operator names the known
// ones).
func ParseQuestion(text string, given *schemas.Scope, now time.Time) (question string, s *schemas.Scope, notes []string, err error) {
	question, s, notes, err = scope.Read(text, given, now)
	if err != nil {
		return "", nil, notes, &ScopeError{Err: err}
	}
	return question, s, notes, nil
}

// ScopeQuery reads q.Question's scope (ParseQuestion) into
// q.Options.Scope, intersected with the scope already there, and leaves
// the words to search in q.Question, marked read (Options.Literal: the
// retrieve stage does not read it again). It returns the notes to show. A
// question without words and without a scope is an error.
func ScopeQuery(q *schemas.QuerySubmitted, now time.Time) ([]string, error) {
	question, s, notes, err := ParseQuestion(q.Question, q.Options.Scope, now)
	if err != nil {
		return notes, err
	}
	if question == "" && s == nil {
		return notes, errors.New("the question is empty: give words to search, or a scope (tag:recipe) to list")
	}
	q.Question, q.Options.Scope, q.Options.Literal = question, s, true
	return notes, nil
}

// ScopeResearch is ScopeQuery for a research request. A research needs a
// question besides its scope: operators alone are an error.
func ScopeResearch(r *schemas.ResearchRequested, now time.Time) ([]string, error) {
	question, s, notes, err := ParseQuestion(r.Question, r.Scope, now)
	if err != nil {
		return notes, err
	}
	if question == "" {
		return notes, &ScopeError{Err: fmt.Errorf("%q is a scope without a question: research needs words to investigate, "+
			"as in \"what did I decide about the budget %s\"", r.Question, strings.TrimSpace(r.Question))}
	}
	r.Question, r.Scope = question, s
	return notes, nil
}

// Describe says what a scope keeps, for notes (scope.Describe).
func Describe(s *schemas.Scope) string { return scope.Describe(s) }

// Intersect is the scope that keeps what both a and b keep (scope.Intersect).
func Intersect(a, b *schemas.Scope) (*schemas.Scope, error) { return scope.Intersect(a, b) }

// arguments): each list keeps a note that matches any of its values, the
// lists apply together; Since and Until are read by scope.ParseSince and
// scope.ParseUntil (7d, 2024-03-01, 2024-03, "last week", "в прошлом
// месяце").
type ScopeValues struct {
	In, NotIn, Paths, NotPaths, Docs, Tags, NotTags []string
	Since, Until                                    string
	Recent                                          bool
}

// Scope is the scope the values give, dates read as of now in its location
// (nil: the values narrow nothing). An error is a *ScopeError naming the
// value.
func (v ScopeValues) Scope(now time.Time) (*schemas.Scope, error) {
	s := &schemas.Scope{
		Include: schemas.ScopeSet{Notebooks: v.In, Paths: trimAll(v.Paths, "/"), Docs: v.Docs, Tags: trimAll(v.Tags, "#")},
		Exclude: schemas.ScopeSet{Notebooks: v.NotIn, Paths: trimAll(v.NotPaths, "/"), Tags: trimAll(v.NotTags, "#")},
		Recent:  v.Recent,
	}
	var errs []error
	if v.Since != "" {
		t, err := scope.ParseSince(v.Since, now, now.Location())
		errs = append(errs, err)
		s.Since = t.Format(time.RFC3339)
	}
	if v.Until != "" {
		t, err := scope.ParseUntil(v.Until, now, now.Location())
		errs = append(errs, err)
		s.Until = t.Format(time.RFC3339)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &ScopeError{Err: err}
	}
	if s.IsZero() {
		return nil, nil
	}
	if err := s.Validate(); err != nil {
		return nil, &ScopeError{Err: err}
	}
	return s, nil
}

// trimAll trims cut from both ends of every value (a path's slashes, a
// tag's '#'); nil stays nil.
func trimAll(vs []string, cut string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, strings.Trim(strings.TrimSpace(v), cut))
	}
	return out
}
