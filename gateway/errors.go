package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error codes of the JSON errors, with their HTTP status (the guard's
// forbidden and unsupported_media_type are in guard.go).
const (
	CodeBadRequest   = "bad_request"
	CodeUnauthorized = "unauthorized"
	CodeNotFound     = "not_found"
	CodeTooLarge     = "too_large"
	CodeTimeout      = "timeout"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
)

// DefaultMaxBody is the request body limit of every route (Config.MaxBody
// by default, the MCP door on both transports): larger is 413 too_large.
const DefaultMaxBody = 1 << 20

// TooLargeMessage is the too_large error's message for a limit.
func TooLargeMessage(limit int64) string { return fmt.Sprintf("request body over %d bytes", limit) }

var codeStatus = map[string]int{
	CodeBadRequest:       http.StatusBadRequest,
	CodeInvalidScope:     http.StatusBadRequest,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodeForbidden:        http.StatusForbidden,
	CodeUnsupportedMedia: http.StatusUnsupportedMediaType,
	CodeNotFound:         http.StatusNotFound,
	CodeTooLarge:         http.StatusRequestEntityTooLarge,
	CodeTimeout:          http.StatusGatewayTimeout,
	CodeUnavailable:      http.StatusServiceUnavailable,
	CodeInternal:         http.StatusInternalServerError,
}

// ErrorBody is what every error response carries:
// {"error":{"code":"...","message":"..."}}.
type ErrorBody struct {
	Error APIError `json:"error"`
}

// APIError is an error's code (bad_request, invalid_scope, unauthorized, forbidden,
// not_found, too_large, unsupported_media_type, timeout, unavailable,
// internal) and a message to act on.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func apiErr(code, msg string) *APIError { return &APIError{Code: code, Message: msg} }

// classify maps an error from the backend or the bus to an APIError.
func classify(err error) *APIError {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.DeadlineExceeded):
		return apiErr(CodeTimeout, err.Error())
	case errors.Is(err, ErrNoIndex):
		return apiErr(CodeUnavailable, err.Error())
	}
	return apiErr(CodeInternal, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError writes the gateway's JSON error ({"error":{"code","message"}})
// with the code's HTTP status, for the doors mounted on the gateway.
func WriteError(w http.ResponseWriter, code, message string) { writeError(w, apiErr(code, message)) }

func writeError(w http.ResponseWriter, e *APIError) {
	status, ok := codeStatus[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, ErrorBody{Error: *e})
}
