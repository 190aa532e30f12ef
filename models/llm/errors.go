package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrAllProvidersFailed is wrapped by the error Router.Stream returns when
	// every candidate provider was tried and none produced an answer.
	ErrAllProvidersFailed = errors.New("llm: all providers failed")
	// ErrRateLimited is wrapped when every candidate provider was skipped
	// because its rate limit was exhausted.
	ErrRateLimited = errors.New("llm: all providers rate limited")
	// ErrNoProvider is returned when no provider has a model for the role.
	ErrNoProvider = errors.New("llm: no provider for role")
)

// ProviderError is a classified failure of one request to one provider.
// It never contains the API key: Body is an excerpt with the key redacted.
type ProviderError struct {
	Provider   string
	Status     int           // HTTP status; 0 when the failure was not an HTTP status
	Retryable  bool          // worth retrying (on this or another provider)
	RetryAfter time.Duration // server-requested wait before the next try; 0 if none
	Msg        string        // what went wrong, in words
	Body       string        // short excerpt of the response body, key redacted
	Err        error         // underlying cause, if any
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm provider %s: %s", e.Provider, e.Msg)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (status %d)", e.Status)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": body %q", e.Body)
	}
	return b.String()
}

func (e *ProviderError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a retryable ProviderError.
func IsRetryable(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Retryable
}

const bodyExcerptLen = 256

// excerpt shortens body and removes the secret from it.
func excerpt(body, secret string) string {
	s := redact(strings.TrimSpace(body), secret)
	if len(s) > bodyExcerptLen {
		s = s[:bodyExcerptLen] + "…"
	}
	return s
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
