// Package openai is the OpenAI-compatible door of the gateway: POST
// /v1/chat/completions (streamed and not) and GET /v1/models, so a chat UI
// or any client of the OpenAI chat API set to this base URL talks to the
// knowledge base.
//
// Model "exocortex" asks the question (the conversation's earlier turns go
// into the query's history, for reformulation) and streams the answer as
// chat chunks; model "exocortex-search" answers with the best passages of
// a search, no language model involved. Either way the text ends with the
// numbered sources ("Sources:" / "Источники:", one line per citation with
// its link), and the last chunk (or the completion) carries them
// structured in "citations", with the answer's mode, reasons and
// confidence in "exocortex".
//
// The answer stage sends a sentence only once it is verified, so what
// streams is the answer, never taken back. Only when a provider breaks off
// after verified sentences were sent and the answer starts again (the same
// provider asked again, or another), or when streamed tokens were lost, does
// the streamed text differ from the answer: a chat client cannot take back
// what it shows, so the handler sends a separator line (RestartSeparator)
// and goes on with the new text; the part after the last separator is
// always the verified answer.
//
// Every non-streamed completion carries "usage"; a stream carries it when
// asked with stream_options.include_usage, in one more chunk before
// [DONE] with no choices, as OpenAI sends it. The counts are the
// provider's when the answer stage asked one that reported them, else
// this endpoint's estimate (EstimateTokens), marked "estimated": true.
//
// Scope operators in the last user message (tag:recipe, in:"Work notes",
// path:projects/atlas, after:2024-03-01, lang:ru, -tag:old, and Russian
// тег:, в:, путь:, после:, до:; date phrases such as "this month" or "в
// прошлом месяце") keep the answer to that part of the notes, as on every
// other door (gateway.ParseScope); what was read is in "exocortex"'s
// reasons ("scope: tags recipe"). A misspelt operator is a 400 with code
// invalid_scope naming the known ones; exocortex-search lists the notes of
// a message that is only a scope.
//
// response_format {"type":"text"} is the default; {"type":"json_object"}
// makes the message's content one JSON object (AnswerJSON: the answer,
// its citations, mode and confidence; streamed as a single delta once the
// answer is verified); {"type":"json_schema"} is refused with a 400
// invalid_request_error on param response_format, since a verified, cited
// answer cannot be fitted to an arbitrary schema.
package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
)

// The models /v1/models lists.
const (
	ModelAsk    = "exocortex"        // answers from the notes, cited
	ModelSearch = "exocortex-search" // the best passages, cited, no language model
)

// MaxBody is the largest request body accepted (a long conversation fits).
const MaxBody = 1 << 20

// RestartSeparator goes between streamed text the answer stage took back
// and the text that replaces it: only after a provider broke off midway
// (or tokens were lost), never in normal operation.
const RestartSeparator = "\n\n---\n\n"

// searchK is how many passages an exocortex-search answer lists.
const searchK = 8

// created is what /v1/models reports as the models' creation time.
var created = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Unix()

// Handler serves POST /v1/chat/completions and GET /v1/models over b. It
// logs through the request context's zerolog logger (zerolog.Ctx).
func Handler(b gateway.Backend) http.Handler {
	h := &handler{b: b}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", h.chat)
	mux.HandleFunc("/v1/models", h.models)
	mux.HandleFunc("/v1/models/{id}", h.model)
	return mux
}

type handler struct{ b gateway.Backend }

func modelsList() []model {
	return []model{
		{ID: ModelAsk, Object: "model", Created: created, OwnedBy: "exocortex",
			Description: "answers from your notes, every claim cited; falls back to extractive and search-only answers"},
		{ID: ModelSearch, Object: "model", Created: created, OwnedBy: "exocortex",
			Description: "the passages of your notes that match the last message, cited; no language model"},
	}
}

func (h *handler) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET /v1/models")
		return
	}
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: modelsList()})
}

func (h *handler) model(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET /v1/models/{id}")
		return
	}
	for _, m := range modelsList() {
		if m.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
		fmt.Sprintf("the model %q does not exist: use %s or %s", r.PathValue("id"), ModelAsk, ModelSearch))
}

// The response formats (response_format.type) answered.
const (
	FormatText       = "text"        // the answer and its sources as text (the default)
	FormatJSONObject = "json_object" // the content is one JSON object: AnswerJSON
)

// request is a chat request as the knowledge base reads it.
type request struct {
	model    string
	stream   bool
	question string
	history  []schemas.Turn
	// usage: the stream ends with a usage chunk (stream_options.include_usage).
	usage bool
	// format is FormatText or FormatJSONObject.
	format string
	// prompt is every message's text, for the usage estimate.
	prompt []string
	// asked is the last user message as written; question is its words
	// with the scope operators read out into scope (nil: every note),
	// notes say what was read (gateway.ParseScope).
	asked string
	scope *schemas.Scope
	notes []string
}

func parseRequest(w http.ResponseWriter, r *http.Request) (*request, bool) {
	var body chatRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	if err := dec.Decode(&body); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "too_large",
				fmt.Sprintf("the request body is larger than %d bytes: shorten the conversation", MaxBody))
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", "the request body is not a chat completion request: "+jsonProblem(err))
		return nil, false
	}
	req := &request{model: body.Model, stream: body.Stream, format: FormatText}
	req.usage = body.Stream && body.StreamOptions != nil && body.StreamOptions.IncludeUsage
	if body.ResponseFormat != nil {
		switch body.ResponseFormat.Type {
		case "", FormatText:
		case FormatJSONObject:
			req.format = FormatJSONObject
		case "json_schema":
			writeParamError(w, http.StatusBadRequest, "response_format", "unsupported_response_format",
				`response_format json_schema is not supported: the knowledge base answers with verified, cited text that cannot be fitted to an arbitrary schema; `+
					`send {"type":"json_object"} for the answer, its citations, mode and confidence as one JSON object, or {"type":"text"}`)
			return nil, false
		default:
			writeParamError(w, http.StatusBadRequest, "response_format", "invalid_response_format",
				fmt.Sprintf(`response_format type %q: want "text" or "json_object"`, body.ResponseFormat.Type))
			return nil, false
		}
	}
	for _, m := range body.Messages {
		req.prompt = append(req.prompt, string(m.Content))
	}
	switch req.model {
	case "":
		req.model = ModelAsk
	case ModelAsk, ModelSearch:
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("the model %q does not exist: use %s (answers) or %s (passages)", body.Model, ModelAsk, ModelSearch))
		return nil, false
	}
	last := -1
	for i, m := range body.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 || strings.TrimSpace(string(body.Messages[last].Content)) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad_request",
			"messages: want at least one user message with text (the last one is the question)")
		return nil, false
	}
	req.asked = strings.TrimSpace(string(body.Messages[last].Content))
	if !req.readScope(w) {
		return nil, false
	}
	for _, m := range body.Messages[:last] {
		text := strings.TrimSpace(string(m.Content))
		switch m.Role {
		case "user":
		case "assistant":
			text = answerText(text)
		default: // system, developer, tool: not part of what was asked and answered
			continue
		}
		if text != "" {
			req.history = append(req.history, schemas.Turn{Role: m.Role, Text: text})
		}
	}
	return req, true
}

// readScope reads the scope operators of the last user message (tag:recipe,
// in:"Work notes", after:2024-03-01, тег:, в:, после:; date phrases such
// as "this month" too) into the request's scope, leaving its words as the
// question. A scope that cannot be kept, or (model exocortex) a message
// that is only a scope, is a 400 invalid_request_error with code
// invalid_scope on param messages; exocortex-search lists a scope's notes.
func (req *request) readScope(w http.ResponseWriter) bool {
	q, sc, notes, err := gateway.ParseScope(req.asked, nil)
	if err != nil {
		writeParamError(w, http.StatusBadRequest, "messages", gateway.CodeInvalidScope, err.Error())
		return false
	}
	if strings.TrimSpace(q) == "" && req.model != ModelSearch {
		writeParamError(w, http.StatusBadRequest, "messages", gateway.CodeInvalidScope,
			"the last user message is only a scope: ask something within it (\"what did I decide? tag:work\"), or use the model "+ModelSearch+" to list its notes")
		return false
	}
	req.question, req.scope, req.notes = q, sc, notes
	return true
}

// answerText is an earlier answer of this endpoint as history: its
// verified part (after the last restart separator), without the sources
// list.
func answerText(s string) string {
	if i := strings.LastIndex(s, RestartSeparator); i >= 0 {
		s = s[i+len(RestartSeparator):]
	}
	for _, h := range []string{sourcesHeading("en"), sourcesHeading("ru")} {
		if i := strings.LastIndex(s, "\n"+h+"\n"); i >= 0 {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}

func (h *handler) chat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use POST /v1/chat/completions")
		return
	}
	req, ok := parseRequest(w, r)
	if !ok {
		return
	}
	id := newID()
	out := newResponder(w, req, id)
	if req.stream {
		// Headers and the role chunk at once, as OpenAI sends them: a
		// client with a first-byte timeout does not give up while the
		// notes are searched.
		out.mu.Lock()
		out.start()
		out.mu.Unlock()
	}
	if req.model == ModelSearch {
		h.search(r, req, out)
		return
	}
	h.ask(r, req, out, id)
}

func (h *handler) ask(r *http.Request, req *request, out *responder, id string) {
	log := zerolog.Ctx(r.Context()).With().Str("query_id", id).Str("door", "openai").Logger()
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: id, Question: req.question, History: req.history,
		Options: schemas.QueryOptions{Scope: req.scope}}}
	q.TraceID = id
	done, err := h.b.Ask(r.Context(), q, out.token)
	out.stopTokens()
	if err != nil {
		if r.Context().Err() != nil {
			log.Info().Err(err).Msg("chat client went away; query abandoned")
			return
		}
		log.Error().Err(err).Msg("chat completion failed")
		out.fail(err)
		return
	}
	info := &Info{QueryID: done.QueryID, Mode: done.Mode, Reasons: append(append([]string(nil), done.Reasons...), req.notes...), Confidence: done.Confidence,
		StandaloneQuestion: done.StandaloneQuestion, FollowUps: done.FollowUps, Provider: done.Provider}
	language := done.Lang
	if language == "" {
		language = lang.DetectLang(req.asked)
	}
	cites := citationsOf(done.Citations)
	var provided *Usage
	if u := done.Usage; u != nil {
		provided = &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	out.finish(done.Answer, sourcesText(language, cites), cites, info, provided)
	log.Debug().Str("mode", done.Mode).Int("citations", len(cites)).Msg("chat completion answered")
}

func (h *handler) search(r *http.Request, req *request, out *responder) {
	log := zerolog.Ctx(r.Context()).With().Str("door", "openai").Str("model", ModelSearch).Logger()
	res, err := h.b.Search(r.Context(), gateway.SearchRequest{Query: req.question, K: searchK, Scope: req.scope})
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		log.Error().Err(err).Msg("search failed")
		out.fail(err)
		return
	}
	language := lang.DetectLang(req.asked)
	cites := make([]Citation, 0, len(res.Results))
	var text strings.Builder
	if len(res.Results) == 0 {
		text.WriteString(noPassages(language))
	} else {
		text.WriteString(passagesIntro(language, req.asked))
	}
	for i, hit := range res.Results {
		c := Citation{Number: i + 1, BlockID: hit.BlockID, DocID: hit.DocID, Title: hit.Title, SectionPath: hit.SectionPath,
			Link: hit.Link, Snippet: hit.Snippet, Updated: hit.Updated}
		cites = append(cites, c)
		fmt.Fprintf(&text, "\n\n%d. **%s**: %s [%d]", c.Number, label(c), oneLine(hit.Snippet), c.Number)
	}
	info := &Info{Mode: schemas.AnswerSearchOnly, RetrievalMode: res.Mode, Reasons: append(append([]string(nil), res.Reasons...), req.notes...)}
	out.token(&schemas.AnswerToken{Text: text.String()})
	out.stopTokens()
	out.finish(text.String(), sourcesText(language, cites), cites, info, nil)
}

// responder writes one chat completion: chunks as tokens come (stream),
// or the whole completion at the end.
type responder struct {
	w       http.ResponseWriter
	flusher http.Flusher
	req     *request
	id      string
	created int64

	mu        sync.Mutex
	stopped   bool            // the answer is in: late tokens are dropped
	started   bool            // the stream's headers and role chunk went out
	segment   strings.Builder // what was streamed since the last separator
	restarted bool
	failed    bool // the client is gone
}

func newResponder(w http.ResponseWriter, req *request, id string) *responder {
	f, _ := w.(http.Flusher)
	return &responder{w: w, flusher: f, req: req, id: "chatcmpl-" + id, created: time.Now().Unix()}
}

// token forwards a streamed token (stream true); tokens are otherwise
// ignored, the answer's text is what a completion returns.
func (o *responder) token(t *schemas.AnswerToken) {
	if !o.req.stream || o.req.format == FormatJSONObject {
		return // the JSON object goes out whole, once the answer is in
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return
	}
	if t.Restart {
		if o.segment.Len() > 0 {
			o.restarted = true
			o.content(RestartSeparator)
			o.segment.Reset()
		}
		return
	}
	if t.Text != "" {
		o.content(t.Text)
		o.segment.WriteString(t.Text)
	}
}

func (o *responder) stopTokens() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
}

// start sends the stream's headers and its first chunk (the role).
func (o *responder) start() {
	if o.started {
		return
	}
	o.started = true
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	o.w.WriteHeader(http.StatusOK)
	o.chunk(chunk{Choices: []chunkChoice{{Delta: delta{Role: "assistant"}}}})
}

func (o *responder) content(s string) {
	o.start()
	o.chunk(chunk{Choices: []chunkChoice{{Delta: delta{Content: s}}}})
}

func (o *responder) chunk(c chunk) {
	c.ID, c.Object, c.Created, c.Model = o.id, "chat.completion.chunk", o.created, o.req.model
	if o.req.usage && c.Usage == nil {
		c.Usage = json.RawMessage("null")
	}
	b, _ := json.Marshal(c) // plain structs always marshal
	o.event(b)
}

func (o *responder) event(data []byte) {
	if o.failed {
		return
	}
	if _, err := fmt.Fprintf(o.w, "data: %s\n\n", data); err != nil {
		o.failed = true
		return
	}
	if o.flusher != nil {
		o.flusher.Flush()
	}
}

// finish ends the response with the verified answer, its sources and
// their structured form; provided is the provider's usage (nil: none, the
// usage is estimated).
func (o *responder) finish(answer, sources string, cites []Citation, info *Info, provided *Usage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	content := answer + sources
	if o.req.format == FormatJSONObject {
		b, _ := json.Marshal(AnswerJSON{Answer: answer, Citations: cites, Mode: info.Mode, Confidence: info.Confidence})
		content = string(b)
	}
	usage := provided
	if usage == nil {
		usage = estimateUsage(o.req.prompt, content)
	}
	if !o.req.stream {
		writeJSON(o.w, http.StatusOK, completion{ID: o.id, Object: "chat.completion", Created: o.created, Model: o.req.model,
			Choices:   []completionChoice{{Message: responseMessage{Role: "assistant", Content: content}, FinishReason: "stop"}},
			Usage:     usage,
			Citations: cites, Exocortex: info})
		return
	}
	if o.req.format == FormatJSONObject {
		o.content(content)
	} else {
		o.finishText(answer, sources, info)
	}
	o.start()
	stop := "stop"
	o.chunk(chunk{Choices: []chunkChoice{{Delta: delta{}, FinishReason: &stop}}, Citations: cites, Exocortex: info})
	if o.req.usage {
		b, _ := json.Marshal(usage)
		o.chunk(chunk{Choices: []chunkChoice{}, Usage: b})
	}
	o.event([]byte("[DONE]"))
}

// finishText streams what of the verified answer and its sources the
// client has not seen.
func (o *responder) finishText(answer, sources string, info *Info) {
	if shown := o.segment.String(); shown != answer {
		// Tokens lost (core NATS does not redeliver): the verified answer
		// follows in full. The answer stage itself never sends less than
		// the answer, nor takes a sentence back at the end.
		if shown != "" {
			o.content(RestartSeparator)
			o.restarted = true
		}
		o.content(answer)
	}
	info.Restarted = o.restarted
	if sources != "" {
		o.content(sources)
	}
}

// fail reports an error: an OpenAI error body with its status, or, once
// the stream has begun, an error event (OpenAI's clients read a data
// payload with an "error" member as the stream's failure).
func (o *responder) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	status, typ, code := http.StatusServiceUnavailable, "server_error", "unavailable"
	msg := "the knowledge base could not answer: " + err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		status, code = http.StatusGatewayTimeout, "timeout"
		msg = "the knowledge base did not answer in time: " + err.Error()
	}
	if !o.started {
		writeError(o.w, status, typ, code, msg)
		return
	}
	b, _ := json.Marshal(apiError{Error: errorBody{Message: msg, Type: typ, Code: code}})
	o.event(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, apiError{Error: errorBody{Message: msg, Type: typ, Code: code}})
}

// writeParamError is an invalid_request_error about one parameter.
func writeParamError(w http.ResponseWriter, status int, param, code, msg string) {
	writeJSON(w, status, apiError{Error: errorBody{Message: msg, Type: "invalid_request_error", Param: &param, Code: code}})
}

// sourcesText is the numbered list of sources that ends an answer's text
// ("" without citations).
func sourcesText(lang string, cites []Citation) string {
	if len(cites) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n" + sourcesHeading(lang))
	for _, c := range cites {
		fmt.Fprintf(&b, "\n[%d] %s — %s", c.Number, label(c), where(c))
		if l := answer.SourceLabel(schemas.Citation{Updated: c.Updated, Recency: c.Recency}, lang); l != "" {
			fmt.Fprintf(&b, " (%s)", l)
		}
	}
	return b.String()
}

func sourcesHeading(lang string) string {
	if lang == "ru" {
		return "Источники:"
	}
	return "Sources:"
}

// label names a citation's place: its section path, led by the title when
// the path does not hold it.
func label(c Citation) string {
	path := strings.Join(c.SectionPath, " > ")
	switch {
	case path == "":
		if c.Title == "" {
			return c.BlockID
		}
		return c.Title
	case c.Title == "" || strings.Contains(" > "+path+" > ", " > "+c.Title+" > "):
		return path
	}
	return c.Title + " > " + path
}

// where is a citation's link, or its block id when it has none.
func where(c Citation) string {
	if c.Link != "" {
		return c.Link
	}
	return "block " + c.BlockID
}

func passagesIntro(lang, q string) string {
	if lang == "ru" {
		return fmt.Sprintf("Фрагменты заметок по запросу «%s»:", q)
	}
	return fmt.Sprintf("Passages of the notes for “%s”:", q)
}

func noPassages(lang string) string {
	if lang == "ru" {
		return "В заметках не нашлось ни одного подходящего фрагмента."
	}
	return "No passage of the notes matches."
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// newID is a query id: "oai-" and 16 hex digits.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "oai-" + hex.EncodeToString(b)
}
