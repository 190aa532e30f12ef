// Package llmtest is an in-process fake OpenAI-compatible provider for tests:
// it streams a scripted answer token by token as server-sent events and can
// inject one fault per request.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// FaultKind says what a request gets instead of a normal answer.
type FaultKind int

const (
	OK        FaultKind = iota // normal answer
	Status                     // an HTTP error status (Fault.Status)
	RateLimit                  // 429 with Retry-After: Fault.RetryAfter
	Slow                       // wait Fault.Delay before answering
	Cut                        // stream Fault.After tokens, then close without [DONE]
	BadJSON                    // stream Fault.After tokens, then an invalid chunk
	// ForeverStream streams the answer's tokens over and over, never finishing,
	// until the client goes away (one token every Fault.Delay; without a
	// delay as fast as the connection takes them).
	ForeverStream
)

// Fault is one scripted behaviour.
type Fault struct {
	Kind       FaultKind
	Status     int
	RetryAfter string
	Delay      time.Duration
	After      int
}

// Constructors for the usual faults.
func Fail(status int) Fault             { return Fault{Kind: Status, Status: status} }
func Unauthorized() Fault               { return Fail(http.StatusUnauthorized) }
func TooMany(retryAfter string) Fault   { return Fault{Kind: RateLimit, RetryAfter: retryAfter} }
func Delay(d time.Duration) Fault       { return Fault{Kind: Slow, Delay: d} }
func CutAfter(tokens int) Fault         { return Fault{Kind: Cut, After: tokens} }
func BadJSONAfter(tokens int) Fault     { return Fault{Kind: BadJSON, After: tokens} }
func Answer() Fault                     { return Fault{Kind: OK} }
func Forever(every time.Duration) Fault { return Fault{Kind: ForeverStream, Delay: every} }

// ChatBody is the decoded request body.
type ChatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream         bool            `json:"stream"`
	Temperature    *float64        `json:"temperature"`
	MaxTokens      int             `json:"max_tokens"`
	Stop           []string        `json:"stop"`
	ResponseFormat *ResponseFormat `json:"response_format"`
}

// ResponseFormat is the request's response_format, when it has one.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema"`
}

// Request is one recorded request.
type Request struct {
	Header http.Header
	Body   ChatBody
	Raw    string
}

// Server is the fake provider.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	answer    string
	json      bool
	script    []Fault
	always    *Fault
	requests  []Request
	scripted  *ScriptOptions // NewScripted: replies made from each request
	responder Responder      // SetResponder: replies made by the test
	// rejectFormat: answer 400 to a request with response_format, as
	// servers that do not take it do.
	rejectFormat bool
	// tokenDelay paces a streamed answer: the wait before each token after
	// the first (SetTokenDelay).
	tokenDelay time.Duration
	// blocks finds the source blocks of scripted claims; claims is the
	// ledger of labelled claims, answers counts the answer requests.
	blocks  *blockIndex
	claims  []Claim
	answers int
	// research is the research stand-in answering (StartResearchServer):
	// its labels are served at ResearchLabelsPath.
	research *Research
}

func newHTTPServer(s *Server) *httptest.Server { return httptest.NewServer(http.HandlerFunc(s.handle)) }

// NewScriptedServer starts the scripted provider of NewScripted outside a
// test (eval --answers --scripted): the caller closes it.
func NewScriptedServer(opts ScriptOptions) *Server {
	s := &Server{scripted: &opts, blocks: newBlockIndex(opts.Blocks)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Close stops the server (a test's server is closed when the test ends).
func (s *Server) Close() { s.srv.Close() }

// ClaimsPath is where the server gives its labelled claims as JSON
// ({"claims": [Claim...]}); ?question=Q keeps the claims made for Q.
const ClaimsPath = "/exocortex/claims"

// ClaimsURL is the URL of the labelled claims (ClaimsPath).
func (s *Server) ClaimsURL() string { return s.srv.URL + ClaimsPath }

func (s *Server) serveClaims(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	claims := s.Claims(r.URL.Query().Get("question"))
	if claims == nil {
		claims = []Claim{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"claims": claims})
}

// SetTokenDelay makes a streamed answer wait d before each token after the
// first, as a real model generating does (0, the default: no wait).
func (s *Server) SetTokenDelay(d time.Duration) { s.mu.Lock(); s.tokenDelay = d; s.mu.Unlock() }

// RejectResponseFormat makes the server answer 400 to every request that
// carries response_format (a provider without structured output).
func (s *Server) RejectResponseFormat(on bool) { s.mu.Lock(); s.rejectFormat = on; s.mu.Unlock() }

// New starts a fake provider on 127.0.0.1, closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{answer: "Hello from the fake provider."}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure, ending in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.srv.Listener.Addr().String() }

// SetAnswer sets the text streamed (split after spaces into tokens).
func (s *Server) SetAnswer(text string) { s.mu.Lock(); s.answer = text; s.mu.Unlock() }

// SetJSON makes the server answer with application/json instead of a stream.
func (s *Server) SetJSON(on bool) { s.mu.Lock(); s.json = on; s.mu.Unlock() }

// Script queues faults, one per request; later requests are answered normally.
func (s *Server) Script(faults ...Fault) {
	s.mu.Lock()
	s.script = append(s.script, faults...)
	s.mu.Unlock()
}

// Always applies f to every request once the script is used up.
func (s *Server) Always(f Fault) { s.mu.Lock(); s.always = &f; s.mu.Unlock() }

// Requests returns the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Responder makes the reply to a request (ok false: not its request; the
// scripted answerer or the fixed answer replies). A non-nil fault is served
// instead of the reply, so a test can fail the requests of one step only.
// It may be called from several requests at once.
type Responder func(body ChatBody) (reply string, fault *Fault, ok bool)

// SetResponder makes r answer the requests it takes.
func (s *Server) SetResponder(r Responder) { s.mu.Lock(); s.responder = r; s.mu.Unlock() }

// Chain is a responder that asks each of rs in turn.
func Chain(rs ...Responder) Responder {
	return func(body ChatBody) (string, *Fault, bool) {
		for _, r := range rs {
			if r == nil {
				continue
			}
			if reply, f, ok := r(body); ok {
				return reply, f, true
			}
		}
		return "", nil, false
	}
}

// withinBudget is the longest head of text (whole streamed pieces) that
// fits budget tokens, and its tokens. A piece counts as a token, or four
// characters as one where the pieces are longer, as the client counts
// them: a real tokenizer cuts words into pieces of a few characters.
func withinBudget(text string, budget int) (head string, tokens int) {
	pieces, runes := 0, 0
	n := 0
	for _, tok := range Tokens(text) {
		r := runes + utf8.RuneCountInString(tok)
		if max(pieces+1, r/4) > budget {
			return text[:n], max(pieces, runes/4)
		}
		pieces, runes, n = pieces+1, r, n+len(tok)
	}
	return text, max(pieces, runes/4)
}

// Tokens splits text the way the server streams it.
func Tokens(text string) []string { return strings.SplitAfter(text, " ") }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == ClaimsPath {
		s.serveClaims(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == ResearchLabelsPath && s.research != nil {
		s.research.serveLabels(w)
		return
	}
	t := s.take(r)
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if t.reject && t.body.ResponseFormat != nil {
		http.Error(w, `{"error":{"message":"unknown field response_format"}}`, http.StatusBadRequest)
		return
	}
	if !fault(w, r, t.fault) {
		return
	}
	t.finish, t.completion = "stop", 5
	if t.sc != nil && !s.scriptedAnswer(w, r, &t) {
		return
	}
	if t.asJSON {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": t.answer}, "finish_reason": t.finish}},
			"usage":   map[string]int{"prompt_tokens": 3, "completion_tokens": t.completion, "total_tokens": 3 + t.completion},
		})
		return
	}
	t.stream(w, r)
}

// turn is one chat request and how the server answers it.
type turn struct {
	raw        []byte
	body       ChatBody
	fault      Fault
	answer     string
	asJSON     bool
	reject     bool          // rejects response_format
	pace       time.Duration // between tokens
	sc         *ScriptOptions
	finish     string // the finish_reason
	completion int    // completion tokens in the usage
}

// take records the request and takes the next fault of the script and the
// reply (the responder's, when it has one for this request).
func (s *Server) take(r *http.Request) turn {
	raw, _ := io.ReadAll(r.Body)
	t := turn{raw: raw}
	_ = json.Unmarshal(raw, &t.body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Header: r.Header.Clone(), Body: t.body, Raw: string(raw)})
	t.fault = Fault{Kind: OK}
	if len(s.script) > 0 {
		t.fault, s.script = s.script[0], s.script[1:]
	} else if s.always != nil {
		t.fault = *s.always
	}
	t.answer, t.asJSON, t.reject, t.pace = s.answer, s.json, s.rejectFormat, s.tokenDelay
	t.sc = s.scripted
	resp := s.responder
	s.mu.Unlock()
	if resp != nil {
		if reply, fault, ok := resp(t.body); ok {
			t.answer, t.sc = reply, nil
			if fault != nil {
				t.fault = *fault
			}
		}
	}
	return t
}

// fault answers a status or rate-limit fault, or waits out a slow one; it
// reports false when the response is done.
func fault(w http.ResponseWriter, r *http.Request, f Fault) bool {
	switch f.Kind {
	case Status:
		http.Error(w, fmt.Sprintf(`{"error":{"message":"fake status %d"}}`, f.Status), f.Status)
		return false
	case RateLimit:
		w.Header().Set("Retry-After", f.RetryAfter)
		http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
		return false
	case Slow:
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

// scriptedAnswer makes the scripted reply of t's request and records its claims;
// it reports false when the response is done (an endless reply).
func (s *Server) scriptedAnswer(w http.ResponseWriter, r *http.Request, t *turn) bool {
	rep := scriptedReply(*t.sc, s.blocks, t.raw)
	if len(rep.claims) > 0 {
		s.mu.Lock()
		s.answers++
		for _, c := range rep.claims {
			c.Request = s.answers
			s.claims = append(s.claims, c)
		}
		s.mu.Unlock()
	}
	if rep.endless {
		streamEndless(w, r, rep.text)
		return false
	}
	// As a real provider: the reply ends at max_tokens, and says so.
	budget := t.body.MaxTokens
	if budget <= 0 {
		budget = defaultBudget
	}
	t.answer, t.completion = withinBudget(rep.text, budget)
	if t.answer != rep.text {
		t.finish = "length"
	}
	t.asJSON = !t.body.Stream
	return true
}

// stream streams the answer as server-sent events, with t's fault: cut
// off, bad JSON, or a stream that never ends.
func (t *turn) stream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		if fl != nil {
			fl.Flush()
		}
	}
	f := t.fault
	if f.Kind == ForeverStream {
		streamForever(r, send, Tokens(t.answer), f.Delay)
		return
	}
	for i, tok := range Tokens(t.answer) {
		if i > 0 && t.pace > 0 {
			select {
			case <-time.After(t.pace):
			case <-r.Context().Done():
				return
			}
		}
		if (f.Kind == Cut || f.Kind == BadJSON) && i == f.After {
			if f.Kind == BadJSON {
				send(`{"choices":[{"delta":{"content":`)
			}
			return
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": tok}}}})
		send(string(b))
	}
	send(fmt.Sprintf(`{"choices":[{"delta":{},"finish_reason":%q}],"usage":{"prompt_tokens":3,"completion_tokens":%d,"total_tokens":%d}}`, t.finish, t.completion, 3+t.completion))
	send("[DONE]")
}

// streamForever sends toks over and over, delay apart, until the client
// leaves.
func streamForever(r *http.Request, send func(string), toks []string, delay time.Duration) {
	for i := 0; ; i++ {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": toks[i%len(toks)]}}}})
		send(string(b))
		if delay <= 0 {
			if r.Context().Err() != nil {
				return
			}
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(delay):
		}
	}
}
