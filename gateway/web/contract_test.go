package web_test

// A small stand-in for the gateway's routes the page uses, following the
// HTTP contract exactly, over a real pipeline. The gateway's own server
// replaces it once both are merged.

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

type contractServer struct {
	sys *pipeline.System
	an  *analysis.Analyzer
	// token, when set, is the bearer token every /v1 route wants (the
	// gateway's EXOCORTEX_HTTP_TOKEN off loopback).
	token atomic.Pointer[string]
}

func newContractServer(sys *pipeline.System) (*contractServer, http.Handler, error) {
	an, err := analysis.New(analysis.Full)
	if err != nil {
		return nil, nil, err
	}
	s := &contractServer{sys: sys, an: an}
	api := http.NewServeMux()
	api.HandleFunc("POST /v1/search", s.search)
	api.HandleFunc("POST /v1/ask", s.ask)
	api.HandleFunc("GET /v1/blocks/{id}", s.block)
	api.HandleFunc("GET /v1/status", s.status)
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	mux.Handle("/v1/", s.authorize(api))
	return s, mux, nil
}

func (s *contractServer) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := s.token.Load(); tok != nil {
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, []byte("Bearer "+*tok)) != 1 {
				writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token (EXOCORTEX_HTTP_TOKEN)")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func newQueryID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "web-" + hex.EncodeToString(b[:])
}

func (s *contractServer) search(w http.ResponseWriter, r *http.Request) {
	var req gateway.SearchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Query == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "want a JSON body with a query")
		return
	}
	q := &schemas.QuerySubmitted{QueryID: newQueryID(), Question: req.Query, Lang: req.Lang,
		Options: schemas.QueryOptions{Mode: req.Mode, K: req.K, Lang: req.Lang, Expand: -1, NoAnswer: true}}
	res, err := pipeline.Ask(r.Context(), s.sys.Bus, q, 30*time.Second)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	aq := s.an.Query(req.Query)
	out := gateway.SearchResult{Mode: res.Mode, Reasons: res.Reasons, TimingsMS: res.TimingsMS, Results: []gateway.SearchHit{}}
	for _, cx := range res.Contexts {
		out.Results = append(out.Results, gateway.SearchHit{Rank: cx.Rank, Score: cx.Score, Title: cx.Title, SectionPath: cx.SectionPath,
			BlockID: cx.BlockID, BlockIDs: cx.BlockIDs, DocID: cx.DocID, ChunkID: cx.ChunkID, Lang: cx.Lang, Path: cx.Path,
			Link:    answer.Link(cx.BlockID, cx.Path),
			Snippet: s.an.Snippet(analysis.PlainText(cx.Text), aq, analysis.SnippetOptions{Tokens: 32, MarkStart: "**", MarkEnd: "**", Ellipsis: "…"}),
			Source:  cx.Source})
	}
	writeJSON(w, out)
}

// ask streams the answer as the contract says: token events in order,
// restart when the text so far is void, then done (or error).
func (s *contractServer) ask(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Question string         `json:"question"`
		Lang     string         `json:"lang"`
		Mode     string         `json:"mode"`
		History  []schemas.Turn `json:"history"`
		K        int            `json:"k"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Question == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "want a JSON body with a question")
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	var mu sync.Mutex
	closed := false
	send := func(event string, v any) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		fl.Flush()
	}
	q := &schemas.QuerySubmitted{QueryID: newQueryID(), Question: req.Question, Lang: req.Lang, History: req.History,
		Options: schemas.QueryOptions{Mode: req.Mode, K: req.K}}
	done, fu, err := pipeline.AskAnswerFollowUps(r.Context(), s.sys.Bus, q, 60*time.Second, func(t *schemas.AnswerToken) {
		if t.Restart {
			send("restart", struct{}{})
		}
		if t.Text != "" {
			send("token", map[string]any{"seq": t.Seq, "text": t.Text})
		}
	})
	if err != nil {
		code := "unavailable"
		if errors.Is(err, context.DeadlineExceeded) {
			code = "timeout"
		}
		send("error", map[string]string{"code": code, "message": err.Error()})
	} else {
		send("done", done)
		// The follow-up questions come after the answer: sent as an optional
		// followups event when they come soon.
		if qs, ok := fu.Wait(r.Context(), 20*time.Second); ok && len(qs) > 0 {
			send("followups", map[string]any{"query_id": done.QueryID, "follow_ups": qs})
		}
		fu.Close()
	}
	mu.Lock()
	closed = true
	mu.Unlock()
}

func (s *contractServer) block(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx := r.Context()
	chunks, err := s.sys.Store.ChunksOfBlocks(ctx, []string{id})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	chunkID, ok := chunks[id]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no block %s in the index", id))
		return
	}
	c, err := s.sys.Store.Chunk(ctx, chunkID)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no block %s in the index", id))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	b := gateway.Block{ID: id, DocID: c.DocID, SectionPath: c.SectionPath, Text: c.Text}
	for _, sp := range c.BlockSpans {
		if sp.ID == id && sp.Start >= 0 && sp.End <= len(c.Text) && sp.Start < sp.End {
			b.Text = c.Text[sp.Start:sp.End]
		}
	}
	var path string
	if hits, err := s.sys.Store.Passages(ctx, []string{chunkID}); err == nil && len(hits) > 0 {
		b.Title, path = hits[0].Title, hits[0].Path
	}
	b.Link = answer.Link(id, path)
	edges, err := s.sys.Store.Neighbors(ctx, id)
	if err == nil {
		for _, e := range edges {
			b.Neighbors = append(b.Neighbors, gateway.Neighbor{ID: e.Dst, Kind: e.Kind})
		}
	}
	writeJSON(w, b)
}

// status is what `exocortex status --json` prints, for the parts the page
// shows.
func (s *contractServer) status(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	b := s.sys.Bus
	states, err := b.StageStates(ctx, pipeline.StageSpecs())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	dead, err := b.DeadLetterCounts(ctx)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	kv, err := b.KV(ctx, bus.BucketStats)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	totals, err := bus.StageTotals(ctx, kv)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	type stageStatus struct {
		Stage        string `json:"stage"`
		Pending      uint64 `json:"pending"`
		AckPending   int    `json:"ack_pending"`
		Acked        int64  `json:"acked"`
		Retried      int64  `json:"retried"`
		DeadLettered uint64 `json:"dead_lettered"`
	}
	out := map[string]any{"running": true, "nats": b.URL()}
	var stages []stageStatus
	for _, st := range states {
		t := totals[st.Stage]
		stages = append(stages, stageStatus{Stage: st.Stage, Pending: st.Pending, AckPending: st.AckPending,
			Acked: t.Acked, Retried: t.Retried, DeadLettered: dead[st.Stage]})
	}
	out["stages"] = stages
	if docs, chunks, err := s.sys.Store.Counts(ctx); err == nil {
		out["documents"], out["chunks"] = docs, chunks
	}
	if hs, err := pipeline.ProviderHealth(ctx, b); err == nil {
		out["providers"] = hs
	}
	if sy, err := pipeline.SiYuanStatus(ctx, b); err == nil && sy != nil {
		out["siyuan"] = sy
	}
	writeJSON(w, out)
}
