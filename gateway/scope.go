package gateway

import (
	"errors"
	"strings"
	"time"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/schemas"
)

// CodeInvalidScope is a request whose scope cannot be kept: a misspelt
// operator in its text (the message names the known ones), a bad date, a
// range or values that keep nothing (HTTP 400).
const CodeInvalidScope = "invalid_scope"

// ParseScope reads the scope operators of a door's text and keeps both
// them and the scope the request gave (client.ParseQuestion, as of now in
// the gateway's zone): the words to search, the scope (nil: every note)
// and the notes to show with the reply. A scope that cannot be kept is an
// *APIError with code invalid_scope. Every door of the gateway (HTTP, MCP,
// the OpenAI endpoint) reads its text through it.
func ParseScope(text string, given *schemas.Scope) (question string, s *schemas.Scope, notes []string, err error) {
	question, s, notes, err = client.ParseQuestion(text, given, time.Now())
	if err != nil {
		return "", nil, notes, apiErr(CodeInvalidScope, err.Error())
	}
	return question, s, notes, nil
}

// scopeQuestion is ParseScope for a question that needs words besides its
// scope (ask, research): operators alone are 400 invalid_scope.
func scopeQuestion(text string, given *schemas.Scope) (string, *schemas.Scope, []string, *APIError) {
	q, s, notes, err := ParseScope(text, given)
	if err != nil {
		var ae *APIError
		errors.As(err, &ae)
		return "", nil, nil, ae
	}
	if strings.TrimSpace(q) == "" {
		return "", nil, nil, apiErr(CodeInvalidScope, "the question is only a scope ("+client.Describe(s)+
			"): ask something within it, as in \"what did I decide? tag:work\"; POST /v1/search lists a scope's notes")
	}
	return q, s, notes, nil
}
