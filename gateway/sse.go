package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
)

// sseWriter writes server-sent events, flushing after each, from any
// goroutine; after close it drops what comes (a token arriving after the
// client left).
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	closed bool
	err    error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// event writes one event with v as its JSON data.
func (s *sseWriter) event(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(fmt.Sprintf(`{"code":"internal","message":%q}`, err.Error()))
		name = "error"
	}
	s.write("event: " + name + "\ndata: " + string(data) + "\n\n")
}

// comment writes a comment line (a heartbeat).
func (s *sseWriter) comment(text string) {
	s.write(": " + strings.ReplaceAll(text, "\n", " ") + "\n\n")
}

func (s *sseWriter) write(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.err != nil {
		return
	}
	if _, err := s.w.Write([]byte(text)); err != nil {
		s.err = err
		return
	}
	s.err = s.rc.Flush()
}

func (s *sseWriter) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// heartbeat sends a comment every d until stop is closed.
func (s *sseWriter) heartbeat(d time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.comment("ping")
		}
	}
}

// AskRequest is POST /v1/ask's body.
type AskRequest struct {
	Question string         `json:"question"`
	Lang     string         `json:"lang,omitempty"`
	Mode     string         `json:"mode,omitempty"`
	History  []schemas.Turn `json:"history,omitempty"`
	K        int            `json:"k,omitempty"`
	// IncludeReports lets the answer draw on saved research reports too.
	IncludeReports bool `json:"include_reports,omitempty"`
	// Scope keeps the answer to part of the notes; operators in Question
	// narrow it further (SearchRequest.Scope).
	Scope *schemas.Scope `json:"scope,omitempty"`
}

// checkQuestion checks a question's text and settings.
func checkQuestion(question, mode, lang string, k int) *APIError {
	if strings.TrimSpace(question) == "" {
		return apiErr(CodeBadRequest, "the question is empty")
	}
	return checkQuery(mode, lang, k)
}

// TokenEvent is the data of a `token` event.
type TokenEvent struct {
	Seq  int    `json:"seq"`
	Text string `json:"text"`
}

func (s *Server) ask(w http.ResponseWriter, r *http.Request) {
	if !s.needBackend(w) {
		return
	}
	var req AskRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := checkQuestion(req.Question, req.Mode, req.Lang, req.K); e != nil {
		writeError(w, e)
		return
	}
	question, sc, notes, e := scopeQuestion(req.Question, req.Scope)
	if e != nil {
		writeError(w, e)
		return
	}
	for i, t := range req.History {
		if t.Role != "user" && t.Role != "assistant" {
			writeError(w, apiErr(CodeBadRequest, fmt.Sprintf("history[%d].role %q: want user or assistant", i, t.Role)))
			return
		}
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: NewID("q"), Question: question, Lang: req.Lang, History: req.History,
		Options: schemas.QueryOptions{Mode: req.Mode, K: req.K, IncludeReports: req.IncludeReports, Scope: sc}}}
	w.Header().Set("X-Exocortex-Query-Id", q.QueryID)
	sse := startSSE(w)
	defer sse.close()
	stop := make(chan struct{})
	defer close(stop)
	go sse.heartbeat(s.cfg.Heartbeat, stop)
	log := zerolog.Ctx(r.Context()).With().Str("query_id", q.QueryID).Logger()
	start := time.Now()
	onToken := func(t *schemas.AnswerToken) {
		if t.Restart {
			sse.event("restart", struct{}{})
		}
		if t.Text != "" {
			sse.event("token", TokenEvent{Seq: t.Seq, Text: t.Text})
		}
	}
	var (
		done    *schemas.AnswerDone
		err     error
		wait    func(context.Context, time.Duration) ([]string, bool)
		release func()
	)
	if fa, ok := s.backend.(followUpAsker); ok {
		done, wait, release, err = fa.AskFollowUps(r.Context(), q, onToken)
	} else {
		done, err = s.backend.Ask(r.Context(), q, onToken)
	}
	if release != nil {
		defer release()
	}
	if err != nil {
		if r.Context().Err() != nil {
			log.Info().Dur("after", time.Since(start)).Msg("the client left; its question is abandoned")
			return
		}
		e := classify(err)
		log.Warn().Err(err).Str("code", e.Code).Msg("ask failed")
		sse.event("error", e)
		return
	}
	done.Reasons = append(done.Reasons, notes...)
	s.answers.put(done)
	sse.event("done", done)
	log.Debug().Dur("took", time.Since(start)).Str("mode", done.Mode).Msg("answered")
	// A language model's answer has follow-up questions, generated after
	// it: they come on the same stream when they come soon.
	if wait != nil && done.Mode == schemas.AnswerLLM && s.cfg.FollowUpsWait > 0 {
		if qs, ok := wait(r.Context(), s.cfg.FollowUpsWait); ok && len(qs) > 0 {
			sse.event("followups", FollowUpsEvent{QueryID: done.QueryID, FollowUps: qs})
		}
	}
}

// FollowUpsEvent is the followups event of POST /v1/ask: the answer's
// follow-up questions, after its done event.
type FollowUpsEvent struct {
	QueryID   string   `json:"query_id"`
	FollowUps []string `json:"follow_ups"`
}

// followUpAsker is a Backend that can also wait for an answer's follow-up
// questions (the bus backend).
type followUpAsker interface {
	AskFollowUps(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (
		*schemas.AnswerDone, func(context.Context, time.Duration) ([]string, bool), func(), error)
}

// ResearchRequest is POST /v1/research's body.
type ResearchRequest struct {
	Question string                 `json:"question"`
	Lang     string                 `json:"lang,omitempty"`
	Budget   schemas.ResearchBudget `json:"budget,omitempty"`
	NoLLM    bool                   `json:"no_llm,omitempty"`
	// IncludeReports lets the research read saved research reports too.
	IncludeReports bool `json:"include_reports,omitempty"`
	// Scope keeps the research to part of the notes; operators in Question
	// narrow it further (SearchRequest.Scope).
	Scope *schemas.Scope `json:"scope,omitempty"`
}

func (s *Server) research(w http.ResponseWriter, r *http.Request) {
	if !s.needBackend(w) {
		return
	}
	var req ResearchRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := checkQuestion(req.Question, "", req.Lang, 0); e != nil {
		writeError(w, e)
		return
	}
	question, sc, notes, e := scopeQuestion(req.Question, req.Scope)
	if e != nil {
		writeError(w, e)
		return
	}
	b := req.Budget
	if b.SubQuestions < 0 || b.DocsPerTask < 0 || b.LLMCalls < 0 || b.WallSeconds < 0 {
		writeError(w, apiErr(CodeBadRequest, "budget: every bound wants a positive number (0 = the default)"))
		return
	}
	rq := &schemas.ResearchRequested{ResearchID: NewID("r"), Question: question, Lang: req.Lang, Budget: b, NoLLM: req.NoLLM,
		IncludeReports: req.IncludeReports, Scope: sc, RequestedAt: time.Now().UTC()}
	w.Header().Set("X-Exocortex-Research-Id", rq.ResearchID)
	sse := startSSE(w)
	defer sse.close()
	stop := make(chan struct{})
	defer close(stop)
	go sse.heartbeat(s.cfg.Heartbeat, stop)
	rep, err := s.backend.Research(r.Context(), rq, func(p *schemas.ResearchProgress) { sse.event("progress", p) })
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		e := classify(err)
		zerolog.Ctx(r.Context()).Warn().Err(err).Str("research_id", rq.ResearchID).Msg("research failed")
		sse.event("error", e)
		return
	}
	// Read through the gateway, every source opens the note view at its block.
	out := *rep
	out.Markdown = research.GatewayMarkdown(&out)
	out.Reasons = append(append([]string(nil), out.Reasons...), notes...)
	sse.event("report", &out)
}
