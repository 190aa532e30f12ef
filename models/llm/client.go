package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// DefaultTimeout bounds one request (first byte and whole stream) when a
// provider sets none.
const DefaultTimeout = 60 * time.Second

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is what Client.Chat sends.
type ChatRequest struct {
	Model       string
	Messages    []Message
	Temperature *float64
	// MaxTokens is sent as max_tokens and is also the client's own budget:
	// a stream that runs past it (with a small margin) is cut, and what
	// arrived is returned with FinishReason "length" and no error.
	MaxTokens int
	Stop      []string
	// JSONSchema, when set, is sent as response_format
	// {"type":"json_schema","json_schema":{...}}.
	JSONSchema *JSONSchema
}

// FinishLength is the finish reason of a generation that reached its
// max_tokens budget (reported by the provider, or cut by the client).
const FinishLength = "length"

// budgetLimit is how many tokens a stream may deliver for a max_tokens
// budget before the client cuts it: the providers count tokens their own
// way, so a small margin.
func budgetLimit(maxTokens int) int { return maxTokens + maxTokens/10 + 16 }

// Usage is the token accounting a provider reports, when it does.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Completion is the outcome of one chat request.
type Completion struct {
	Text         string
	FinishReason string
	Usage        *Usage // nil when the provider reported none
	Tokens       int    // pieces delivered to the token callback
	// Cut says the client stopped reading a stream that ran past its
	// max_tokens budget (FinishReason is then "length").
	Cut bool
}

// Client talks to one OpenAI-compatible provider.
type Client struct {
	Name    string
	BaseURL string // e.g. https://api.openai.com/v1
	APIKey  string // sent as a bearer token; never logged, redacted from errors
	KeyEnv  string // the variable the key came from, named in 401/403 errors
	HTTP    *http.Client
	Timeout time.Duration    // per request; DefaultTimeout when zero
	Now     func() time.Time // for Retry-After dates; time.Now when nil

	// noStreamOptions is set once the provider refused a request with
	// stream_options (400 or 422) and took it without: it is not sent again.
	noStreamOptions atomic.Bool
}

type chatBody struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Stream         bool            `json:"stream"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Stop           []string        `json:"stop,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
	// StreamOptions asks for the usage in the stream's last chunk (OpenAI,
	// Ollama, vLLM and llama.cpp's server send none without it).
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Chat sends req and streams the answer: each piece of content goes to
// onToken (which may be nil) as it arrives. Failures of the provider are
// *ProviderError; an error from onToken or the caller's context is returned
// as is. On failure the returned Completion still says how many tokens were
// delivered.
func (c *Client) Chat(ctx context.Context, req ChatRequest, onToken func(string) error) (Completion, error) {
	if onToken == nil {
		onToken = func(string) error { return nil }
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	withUsage := !c.noStreamOptions.Load()
	comp, err := c.do(reqCtx, req, withUsage, onToken)
	var pe *ProviderError
	if withUsage && errors.As(err, &pe) && (pe.Status == http.StatusBadRequest || pe.Status == http.StatusUnprocessableEntity) &&
		comp.Tokens == 0 && strings.Contains(pe.Body, "stream_options") {
		// A strict provider may refuse stream_options (its error names
		// the field): once more without it, and never again with it if that
		// goes through. The usage is then only what the provider sends
		// unasked.
		if comp2, err2 := c.do(reqCtx, req, false, onToken); err2 == nil || comp2.Tokens > 0 {
			c.noStreamOptions.Store(true)
			comp, err = comp2, err2
		}
	}
	if err == nil {
		return comp, nil
	}
	if ctx.Err() != nil {
		return comp, ctx.Err()
	}
	if errors.Is(reqCtx.Err(), context.DeadlineExceeded) {
		return comp, &ProviderError{
			Provider:  c.Name,
			Retryable: true,
			Msg:       fmt.Sprintf("timeout after %s (%d tokens received)", timeout, comp.Tokens),
			Err:       context.DeadlineExceeded,
		}
	}
	return comp, err
}

func (c *Client) do(ctx context.Context, req ChatRequest, withUsage bool, onToken func(string) error) (Completion, error) {
	cb := chatBody{
		Model: req.Model, Messages: req.Messages, Stream: true,
		Temperature: req.Temperature, MaxTokens: req.MaxTokens, Stop: req.Stop,
	}
	if withUsage {
		cb.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.JSONSchema != nil {
		cb.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: req.JSONSchema}
	}
	body, err := json.Marshal(cb)
	if err != nil {
		return Completion{}, fmt.Errorf("encode chat request: %w", err)
	}
	url := strings.TrimRight(c.BaseURL, "/") + "/chat/completions"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Completion{}, &ProviderError{Provider: c.Name, Msg: "build request", Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream, application/json")
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return Completion{}, &ProviderError{Provider: c.Name, Retryable: true, Msg: "send request",
			Err: errors.New(redact(err.Error(), c.APIKey))}
	}
	defer resp.Body.Close()

	if resp.StatusCode/100 != 2 {
		return Completion{}, c.statusError(resp)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		return c.readStream(ctx, resp.Body, req.MaxTokens, onToken)
	}
	return c.readJSON(resp.Body, onToken)
}

func (c *Client) statusError(resp *http.Response) *ProviderError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	pe := &ProviderError{Provider: c.Name, Status: resp.StatusCode, Body: excerpt(string(raw), c.APIKey)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		pe.Retryable = true
		pe.Msg = "rate limited by provider"
		pe.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
	case resp.StatusCode >= 500:
		pe.Retryable = true
		pe.Msg = "server error"
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		env := c.KeyEnv
		if env == "" {
			env = "the provider's key variable"
		} else {
			env = "$" + env
		}
		pe.Msg = "unauthorized: check the API key in " + env
	case resp.StatusCode == http.StatusRequestTimeout:
		pe.Retryable = true
		pe.Msg = "request timeout"
	default:
		pe.Msg = "request rejected"
	}
	return pe
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 when absent or invalid.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func (c *Client) readStream(ctx context.Context, r io.Reader, maxTokens int, onToken func(string) error) (Completion, error) {
	var (
		comp  Completion
		text  strings.Builder
		done  bool
		runes int
	)
	limit := 0
	if maxTokens > 0 {
		limit = budgetLimit(maxTokens)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			comp.Text = text.String()
			return comp, err
		}
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // blank separators, comments, event: and id: lines
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			comp.Text = text.String()
			return comp, &ProviderError{Provider: c.Name, Retryable: true,
				Msg: fmt.Sprintf("invalid JSON in stream chunk after %d tokens", comp.Tokens),
				Err: err, Body: excerpt(data, c.APIKey)}
		}
		if ch.Error != nil {
			comp.Text = text.String()
			return comp, &ProviderError{Provider: c.Name, Retryable: true,
				Msg: "error in stream: " + redact(ch.Error.Message, c.APIKey)}
		}
		if ch.Usage != nil {
			comp.Usage = ch.Usage
		}
		if len(ch.Choices) == 0 {
			continue
		}
		choice := ch.Choices[0]
		if tok := choice.Delta.Content; tok != "" {
			text.WriteString(tok)
			comp.Tokens++
			runes += utf8.RuneCountInString(tok)
			if err := onToken(tok); err != nil {
				comp.Text = text.String()
				return comp, fmt.Errorf("deliver token: %w", err)
			}
			// Tokens are counted as the pieces delivered, or four
			// characters each when the pieces are larger.
			if limit > 0 && max(comp.Tokens, runes/4) > limit {
				// Over budget: the provider ignored max_tokens (or never
				// stops). Stop reading; the caller closes the body.
				comp.Text, comp.FinishReason, comp.Cut = text.String(), FinishLength, true
				return comp, nil
			}
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			comp.FinishReason = *choice.FinishReason
		}
	}
	comp.Text = text.String()
	if err := sc.Err(); err != nil && !done {
		return comp, &ProviderError{Provider: c.Name, Retryable: true,
			Msg: fmt.Sprintf("stream cut after %d tokens", comp.Tokens),
			Err: errors.New(redact(err.Error(), c.APIKey))}
	}
	if !done && comp.FinishReason == "" {
		return comp, &ProviderError{Provider: c.Name, Retryable: true,
			Msg: fmt.Sprintf("stream cut after %d tokens", comp.Tokens)}
	}
	return comp, nil
}

func (c *Client) readJSON(r io.Reader, onToken func(string) error) (Completion, error) {
	raw, err := io.ReadAll(io.LimitReader(r, 16*1024*1024))
	if err != nil {
		return Completion{}, &ProviderError{Provider: c.Name, Retryable: true, Msg: "read response",
			Err: errors.New(redact(err.Error(), c.APIKey))}
	}
	var ch chunk
	if err := json.Unmarshal(raw, &ch); err != nil {
		return Completion{}, &ProviderError{Provider: c.Name, Retryable: true,
			Msg: "invalid JSON response", Err: err, Body: excerpt(string(raw), c.APIKey)}
	}
	if ch.Error != nil {
		return Completion{}, &ProviderError{Provider: c.Name, Retryable: true,
			Msg: "error in response: " + redact(ch.Error.Message, c.APIKey)}
	}
	if len(ch.Choices) == 0 {
		return Completion{}, &ProviderError{Provider: c.Name, Retryable: true,
			Msg: "response without choices", Body: excerpt(string(raw), c.APIKey)}
	}
	choice := ch.Choices[0]
	comp := Completion{Text: choice.Message.Content, Usage: ch.Usage}
	if choice.FinishReason != nil {
		comp.FinishReason = *choice.FinishReason
	}
	if comp.Text != "" {
		comp.Tokens = 1
		if err := onToken(comp.Text); err != nil {
			return comp, fmt.Errorf("deliver token: %w", err)
		}
	}
	return comp, nil
}
