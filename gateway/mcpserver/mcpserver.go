// Package mcpserver is the knowledge base as an MCP server (the official
// Go SDK): tools search, ask, get_block and research over a
// gateway.Backend, each returning its result as text with the citations
// listed (for the assistant to read and quote) and as structured content.
// HTTPHandler serves it over streamable HTTP (the gateway mounts it at
// /mcp); RunStdio serves it on stdin/stdout (exocortex mcp).
//
// Both transports are the same server: the same version (Version, set by
// the binary to its build's), the same snippet marks (CLIMarks: matched
// words in [ ]), the same request limit (MaxBody, as every route of the
// gateway: over it both answer the JSON-RPC error of the request with the
// gateway's message and too_large code, HTTP with status 413, and the
// session goes on) and the same error messages, in JSON's words rather
// than Go's.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/schemas"
)

// Version is what the server reports as its version in the MCP handshake,
// over both transports: the exocortex binary sets it to its build's
// version before it serves anything.
var Version = "dev"

// MaxBody is the largest request read on either transport, as on every
// other route of the gateway.
const MaxBody = gateway.DefaultMaxBody

// scanLimit bounds how much of a request over MaxBody is read to find its
// id (the SDK's own frame limit).
const scanLimit = 16 << 20

// Marks enclose a snippet's matched words on both transports.
var Marks = gateway.CLIMarks

// SessionTimeout closes an HTTP session idle this long.
const SessionTimeout = 30 * time.Minute

// NewServer is the MCP server with the four tools over b.
func NewServer(b gateway.Backend) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "exocortex", Title: "Exocortex knowledge base", Version: Version},
		&mcp.ServerOptions{Instructions: "Exocortex answers from the user's own notes (SiYuan, Markdown), in Russian and English. " +
			"Use search for passages, ask for a cited answer, get_block to read a cited block and its neighbours, " +
			"research for a structured report on a broad question. Cite the [n] sources you use with their links."})
	s.AddReceivingMiddleware(plainErrors)
	t := &tools{b: b}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}
	mcp.AddTool(s, &mcp.Tool{Name: "search", Title: "Search the notes", Annotations: readOnly,
		Description: "Find the passages of the user's notes that match a query (full-text and semantic search). " +
			"Returns numbered passages with their section path, a snippet (matched words in [ ]) and a link to the block. " +
			scopeHelp + " A query of operators alone lists the scope's notes."}, t.search)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Title: "Ask the notes", Annotations: readOnly,
		Description: "Answer a question from the user's notes. Every claim carries a [n] marker; the sources follow with block ids and links. " +
			"The result says its mode (llm, cache, extractive, search_only) and why, and its confidence. " +
			"With a progress token, the answer's tokens stream as progress notifications. " + scopeHelp}, t.ask)
	mcp.AddTool(s, &mcp.Tool{Name: "get_block", Title: "Read a note block", Annotations: readOnly,
		Description: "Read one block of the notes by id (as cited by search, ask or research): its text, document, section path, link and graph neighbours."}, t.getBlock)
	mcp.AddTool(s, &mcp.Tool{Name: "research", Title: "Research a broad question", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)},
		Description: "Run a deep research over the notes: sub-questions, facts gathered per document, and a structured report " +
			"(summary, sections, conclusion, every source cited). Slow (minutes); sends progress notifications when asked for them. " + scopeHelp}, t.research)
	return s
}

// scopeHelp tells an assistant how to narrow a tool's search.
const scopeHelp = "Narrow it with the scope arguments (in, path, doc, tag, not_in, not_path, not_tag, since, until, recent) " +
	`or with operators in the text: tag:recipe, in:"Work notes", path:projects/atlas, after:2024-03-01, before:2024-06-01, lang:ru, -tag:old ` +
	"(Russian тег:, в:, путь:, после:, до:); date words such as \"last month\" narrow the dates too. The result's reasons say the scope read."

// HTTPHandler serves the MCP server over streamable HTTP (sessions close
// after SessionTimeout idle). Mount it in the gateway: the gateway's guard
// checks the Host and the Origin of every route, /mcp included, so the
// SDK's own loopback Host check is off (one check, one JSON error). A request body over MaxBody is refused with
// 413 and the JSON-RPC error stdio answers (tooLarge), so an MCP client
// reads it as the refusal of that one request and keeps its session.
func HTTPHandler(b gateway.Backend) http.Handler {
	s := NewServer(b)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{SessionTimeout: SessionTimeout, MaxRequestBodyBytes: MaxBody, DisableLocalhostProtection: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			// Read here, so a body with or without a length gets the same
			// answer.
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
			if len(body) > MaxBody {
				// The request's id may come last (the TypeScript SDK puts it
				// after the params): read on, to a bound, to find it.
				f := &idFinder{}
				f.feed(body)
				_, _ = io.Copy(f, io.LimitReader(r.Body, scanLimit))
				_ = r.Body.Close()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				_, _ = w.Write(tooLarge(f.id))
				return
			}
			_ = r.Body.Close()
			if err != nil {
				gateway.WriteError(w, gateway.CodeBadRequest, "reading the request body: "+err.Error())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}

// RunStdio serves the MCP server on stdin and stdout until the client
// closes stdin or ctx ends.
func RunStdio(ctx context.Context, b gateway.Backend) error {
	return RunIO(ctx, b, os.Stdin, os.Stdout)
}

type tools struct{ b gateway.Backend }

// ScopeArgs keep a tool's search to part of the notes; every list keeps a
// note that matches any of its values, and the lists apply together.
// Operators in the query or question (tag:recipe, in:"Work notes",
// path:projects/atlas, after:2024-03-01, тег:, в:, путь:, после:) narrow
// it further.
type ScopeArgs struct {
	In      []string `json:"in,omitempty" jsonschema:"only notes in these notebooks (SiYuan notebook names or ids, or ingested folders)"`
	NotIn   []string `json:"not_in,omitempty" jsonschema:"leave out notes in these notebooks"`
	Path    []string `json:"path,omitempty" jsonschema:"only notes under these path prefixes, such as projects/atlas"`
	NotPath []string `json:"not_path,omitempty" jsonschema:"leave out notes under these path prefixes"`
	Doc     []string `json:"doc,omitempty" jsonschema:"only these documents (ids)"`
	Tag     []string `json:"tag,omitempty" jsonschema:"only notes with one of these tags (front matter, #tag, SiYuan tags)"`
	NotTag  []string `json:"not_tag,omitempty" jsonschema:"leave out notes with these tags"`
	Since   string   `json:"since,omitempty" jsonschema:"only notes from this time on: 7d, 2w, 3m, 1y back from now, a date 2024-03-01, a month 2024-03, or a period such as last week or в прошлом месяце"`
	Until   string   `json:"until,omitempty" jsonschema:"only notes up to this time, the day or period itself included (the forms of since)"`
	Recent  bool     `json:"recent,omitempty" jsonschema:"prefer newer notes"`
}

// SearchInput is the search tool's input.
type SearchInput struct {
	Query string `json:"query" jsonschema:"what to look for, in any words (Russian or English)"`
	K     int    `json:"k,omitempty" jsonschema:"how many passages (default 10, at most 50)"`
	Mode  string `json:"mode,omitempty" jsonschema:"retrieval mode: lexical, vector, hybrid or rerank (default: the fullest available)"`
	Lang  string `json:"lang,omitempty" jsonschema:"only passages in this language: ru or en (default: all)"`
	// IncludeReports searches saved research reports too.
	IncludeReports bool `json:"include_reports,omitempty" jsonschema:"also search saved research reports (left out by default, so passages come from the notes themselves)"`
	// Facets asks for the candidates' counts by notebook, tag and month.
	Facets bool `json:"facets,omitempty" jsonschema:"also count the documents of the query's candidates (not only the k passages) by notebook, tag and month, to narrow the search by"`
	ScopeArgs
}

// Passage is one search hit.
type Passage struct {
	Number      int      `json:"number"`
	BlockID     string   `json:"block_id"`
	DocID       string   `json:"doc_id"`
	Title       string   `json:"title,omitempty"`
	SectionPath []string `json:"section_path,omitempty"`
	Snippet     string   `json:"snippet"`
	Link        string   `json:"link,omitempty"`
	Score       float64  `json:"score"`
	Lang        string   `json:"lang,omitempty"`
	// Updated is the note's own time (RFC 3339), when known.
	Updated string `json:"updated,omitempty"`
}

// SearchOutput is the search tool's structured result.
type SearchOutput struct {
	// Mode is the retrieval mode the search ran in; Reasons say why it is
	// lower than asked.
	Mode     string    `json:"mode"`
	Reasons  []string  `json:"reasons,omitempty"`
	Passages []Passage `json:"passages"`
	// Facets count the candidates' documents, when asked.
	Facets *schemas.Facets `json:"facets,omitempty"`
}

func (t *tools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	given, err := in.scope(time.Now())
	if err != nil {
		return nil, SearchOutput{}, err
	}
	if strings.TrimSpace(in.Query) == "" && given == nil {
		return nil, SearchOutput{}, errors.New("query is empty: give the words to look for, or a scope to list")
	}
	query, sc, notes, err := gateway.ParseScope(in.Query, given)
	if err != nil {
		return nil, SearchOutput{}, err
	}
	if !schemas.ValidMode(in.Mode) {
		return nil, SearchOutput{}, fmt.Errorf("mode %q: want lexical, vector, hybrid or rerank", in.Mode)
	}
	if in.K <= 0 {
		in.K = 10
	}
	in.K = min(in.K, 50)
	res, err := t.b.Search(ctx, gateway.SearchRequest{Query: query, K: in.K, Mode: in.Mode, Lang: in.Lang,
		IncludeReports: in.IncludeReports, Facets: in.Facets, Scope: sc, Marks: Marks})
	if err != nil {
		return nil, SearchOutput{}, fmt.Errorf("search: %w", err)
	}
	res.Reasons = append(res.Reasons, notes...)
	out := SearchOutput{Mode: res.Mode, Reasons: res.Reasons, Passages: []Passage{}, Facets: res.Facets}
	var b strings.Builder
	fmt.Fprintf(&b, "Search mode %s", res.Mode)
	for _, r := range res.Reasons {
		fmt.Fprintf(&b, " (%s)", r)
	}
	if len(res.Results) == 0 {
		b.WriteString("\nNo passage of the notes matches.")
	}
	for i, h := range res.Results {
		p := Passage{Number: i + 1, BlockID: h.BlockID, DocID: h.DocID, Title: h.Title, SectionPath: h.SectionPath,
			Snippet: h.Snippet, Link: h.Link, Score: h.Score, Lang: h.Lang, Updated: h.Updated}
		out.Passages = append(out.Passages, p)
		fmt.Fprintf(&b, "\n\n[%d] %s\n%s\nblock %s%s%s", p.Number, label(p.Title, p.SectionPath, p.BlockID), oneLine(p.Snippet), p.BlockID,
			linkNote(p.Link), dateNote(p.Updated))
	}
	writeFacets(&b, res.Facets)
	return textResult(b.String()), out, nil
}

// AskInput is the ask tool's input.
type AskInput struct {
	Question string `json:"question" jsonschema:"the question, in Russian or English"`
	Lang     string `json:"lang,omitempty" jsonschema:"answer language: ru or en (default: the question's)"`
	Mode     string `json:"mode,omitempty" jsonschema:"retrieval mode: lexical, vector, hybrid or rerank (default: the fullest available)"`
	K        int    `json:"k,omitempty" jsonschema:"how many passages the answer may draw on (default 12)"`
	// History is the conversation so far, for a follow-up question.
	History []schemas.Turn `json:"history,omitempty" jsonschema:"earlier turns of the conversation (role user or assistant, text), oldest first, so a follow-up question is understood"`
	// IncludeReports lets the answer draw on saved research reports too.
	IncludeReports bool `json:"include_reports,omitempty" jsonschema:"also draw on saved research reports (left out by default)"`
	ScopeArgs
}

// AskOutput is the ask tool's structured result.
type AskOutput struct {
	QueryID string `json:"query_id"`
	Answer  string `json:"answer"`
	// Mode is llm, cache, extractive or search_only; Reasons say why.
	Mode               string             `json:"mode"`
	Confidence         float64            `json:"confidence"`
	Reasons            []string           `json:"reasons,omitempty"`
	Citations          []schemas.Citation `json:"citations"`
	StandaloneQuestion string             `json:"standalone_question,omitempty"`
	FollowUps          []string           `json:"follow_ups,omitempty"`
}

func (t *tools) ask(ctx context.Context, req *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, AskOutput, error) {
	if strings.TrimSpace(in.Question) == "" {
		return nil, AskOutput{}, errors.New("question is empty")
	}
	if !schemas.ValidMode(in.Mode) {
		return nil, AskOutput{}, fmt.Errorf("mode %q: want lexical, vector, hybrid or rerank", in.Mode)
	}
	for i, h := range in.History {
		if h.Role != "user" && h.Role != "assistant" {
			return nil, AskOutput{}, fmt.Errorf("history[%d].role %q: want user or assistant", i, h.Role)
		}
	}
	question, sc, notes, err := in.question(in.Question)
	if err != nil {
		return nil, AskOutput{}, err
	}
	id := newID("mcp")
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: id, Question: question, Lang: in.Lang, History: in.History,
		Options: schemas.QueryOptions{Mode: in.Mode, K: in.K, IncludeReports: in.IncludeReports, Scope: sc}}}
	q.TraceID = id
	onToken, stop := tokenProgress(ctx, req)
	done, err := t.b.Ask(ctx, q, onToken)
	stop()
	if err != nil {
		return nil, AskOutput{}, fmt.Errorf("ask: %w", err)
	}
	done.Reasons = append(done.Reasons, notes...)
	cites := make([]schemas.Citation, len(done.Citations))
	copy(cites, done.Citations)
	for i := range cites {
		if cites[i].Number == 0 {
			cites[i].Number = i + 1
		}
		cites[i].Spans = nil // offsets into the answer: of no use to an assistant, and long
	}
	out := AskOutput{QueryID: done.QueryID, Answer: done.Answer, Mode: done.Mode, Confidence: done.Confidence, Reasons: done.Reasons,
		Citations: cites, StandaloneQuestion: done.StandaloneQuestion, FollowUps: done.FollowUps}
	var b strings.Builder
	b.WriteString(done.Answer)
	writeSources(&b, cites, done.Lang)
	fmt.Fprintf(&b, "\n\nMode: %s, confidence %.2f", done.Mode, done.Confidence)
	for _, r := range done.Reasons {
		fmt.Fprintf(&b, "\n- %s", r)
	}
	return textResult(b.String()), out, nil
}

// GetBlockInput is the get_block tool's input.
type GetBlockInput struct {
	ID string `json:"id" jsonschema:"the block id, as a citation or search passage gives it"`
}

func (t *tools) getBlock(ctx context.Context, _ *mcp.CallToolRequest, in GetBlockInput) (*mcp.CallToolResult, *gateway.Block, error) {
	id := strings.TrimSpace(in.ID)
	id = strings.TrimPrefix(id, "siyuan://blocks/")
	if id == "" {
		return nil, nil, errors.New("id is empty: give a block id from a citation")
	}
	blk, err := t.b.Block(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("block %s: %w", id, err)
	}
	if blk == nil {
		return nil, nil, fmt.Errorf("no block %s in the index (it may have been deleted or edited since it was cited; search again)", id)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nblock %s in document %s%s\n\n%s", label(blk.Title, blk.SectionPath, blk.ID), blk.ID, blk.DocID, linkNote(blk.Link), blk.Text)
	if len(blk.Neighbors) > 0 {
		b.WriteString("\n\nNeighbours:")
		for _, n := range blk.Neighbors {
			fmt.Fprintf(&b, "\n- %s %s", n.Kind, n.ID)
			if n.Text != "" {
				fmt.Fprintf(&b, ": %s", clip(oneLine(n.Text), 160))
			}
		}
	}
	return textResult(b.String()), blk, nil
}

// ResearchInput is the research tool's input.
type ResearchInput struct {
	Question     string `json:"question" jsonschema:"the broad question to research, in Russian or English"`
	Lang         string `json:"lang,omitempty" jsonschema:"report language: ru or en (default: the question's)"`
	SubQuestions int    `json:"sub_questions,omitempty" jsonschema:"at most this many sub-questions (default: the research stage's)"`
	WallSeconds  int    `json:"wall_seconds,omitempty" jsonschema:"time budget in seconds (default: the research stage's)"`
	NoLLM        bool   `json:"no_llm,omitempty" jsonschema:"gather evidence only, without a language model's synthesis"`
	// IncludeReports lets the research read saved research reports too.
	IncludeReports bool `json:"include_reports,omitempty" jsonschema:"also read saved research reports (left out by default)"`
	ScopeArgs
}

// ResearchOutput is the research tool's structured result.
type ResearchOutput struct {
	ResearchID string `json:"research_id"`
	// Mode says whether the report is a synthesis or evidence only; Reasons say why.
	Mode     string             `json:"mode"`
	Title    string             `json:"title"`
	Markdown string             `json:"markdown"`
	Sources  []schemas.Citation `json:"sources"`
	Reasons  []string           `json:"reasons,omitempty"`
	Tasks    int                `json:"tasks"`
	DocsRead int                `json:"docs_read"`
	LLMCalls int                `json:"llm_calls"`
}

func (t *tools) research(ctx context.Context, req *mcp.CallToolRequest, in ResearchInput) (*mcp.CallToolResult, ResearchOutput, error) {
	if strings.TrimSpace(in.Question) == "" {
		return nil, ResearchOutput{}, errors.New("question is empty")
	}
	question, sc, notes, err := in.question(in.Question)
	if err != nil {
		return nil, ResearchOutput{}, err
	}
	id := newID("mcp-research")
	r := &schemas.ResearchRequested{ResearchID: id, Question: question, Lang: in.Lang, NoLLM: in.NoLLM, Scope: sc,
		IncludeReports: in.IncludeReports, Budget: schemas.ResearchBudget{SubQuestions: in.SubQuestions, WallSeconds: in.WallSeconds}}
	r.TraceID = id
	var onProgress func(*schemas.ResearchProgress)
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		n := 0
		onProgress = func(p *schemas.ResearchProgress) {
			n++
			total := 0.0
			if p.Tasks > 0 {
				total = float64(p.Tasks + 3) // plan, each task, draft, report
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: p.Step + ": " + p.Message,
				Progress: float64(n), Total: total})
		}
	}
	rep, err := t.b.Research(ctx, r, onProgress)
	if err != nil {
		return nil, ResearchOutput{}, fmt.Errorf("research: %w", err)
	}
	srcs := make([]schemas.Citation, len(rep.Sources))
	copy(srcs, rep.Sources)
	for i := range srcs {
		srcs[i].Number, srcs[i].Spans = i+1, nil
	}
	out := ResearchOutput{ResearchID: rep.ResearchID, Mode: rep.Mode, Title: rep.Title, Markdown: rep.Markdown, Sources: srcs,
		Reasons: append(append([]string(nil), rep.Reasons...), notes...), Tasks: rep.Tasks, DocsRead: rep.DocsRead, LLMCalls: rep.LLMCalls}
	text := rep.Markdown // its sources list ends it
	if strings.TrimSpace(text) == "" {
		var b strings.Builder
		b.WriteString("# " + rep.Title)
		writeSources(&b, srcs, rep.Lang)
		text = b.String()
	}
	return textResult(text), out, nil
}

// tokenProgress streams an answer's tokens as progress notifications when
// the client asked for progress: each a verified sentence that the answer
// keeps. A restart (a provider broke off after sentences were sent and the
// answer starts again; never in normal operation) says the text so far is
// withdrawn. stop ends them. The tool's result is the verified answer.
func tokenProgress(ctx context.Context, req *mcp.CallToolRequest) (onToken func(*schemas.AnswerToken), stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil, func() {}
	}
	var mu sync.Mutex
	stopped, n := false, 0
	onToken = func(t *schemas.AnswerToken) {
		msg := t.Text
		if t.Restart {
			msg = "[restart: the text so far is withdrawn]"
		}
		if msg == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		n++
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(n)})
	}
	return onToken, func() { mu.Lock(); stopped = true; mu.Unlock() }
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// writeSources lists citations: "[n] Title > Section — block ID link".
func writeSources(b *strings.Builder, cites []schemas.Citation, lang string) {
	if len(cites) == 0 {
		return
	}
	b.WriteString("\n\nSources:")
	for _, c := range cites {
		fmt.Fprintf(b, "\n[%d] %s — block %s%s", c.Number, label(c.Title, c.SectionPath, c.BlockID), c.BlockID, linkNote(c.Link))
		if l := answer.SourceLabel(c, lang); l != "" {
			fmt.Fprintf(b, " (%s)", l)
		}
		if c.Quote != "" {
			fmt.Fprintf(b, "\n    «%s»", c.Quote)
		}
	}
}

// label names a place in the notes: its section path, led by the title
// when the path does not hold it.
func label(title string, section []string, id string) string {
	path := strings.Join(section, " > ")
	switch {
	case path == "":
		if title == "" {
			return id
		}
		return title
	case title == "" || strings.Contains(" > "+path+" > ", " > "+title+" > "):
		return path
	}
	return title + " > " + path
}

func linkNote(link string) string {
	if link == "" {
		return ""
	}
	return " " + link
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// scope is the scope the arguments give (nil: none), dates read as of now.
func (a ScopeArgs) scope(now time.Time) (*schemas.Scope, error) {
	s, err := client.ScopeValues{In: a.In, NotIn: a.NotIn, Paths: a.Path, NotPaths: a.NotPath, Docs: a.Doc,
		Tags: a.Tag, NotTags: a.NotTag, Since: a.Since, Until: a.Until, Recent: a.Recent}.Scope(now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gateway.CodeInvalidScope, err)
	}
	return s, nil
}

// question reads a question's operators and keeps the arguments' scope
// too (gateway.ParseScope); a question of a scope alone is refused (ask
// and research need something to answer).
func (a ScopeArgs) question(text string) (string, *schemas.Scope, []string, error) {
	given, err := a.scope(time.Now())
	if err != nil {
		return "", nil, nil, err
	}
	q, s, notes, err := gateway.ParseScope(text, given)
	if err != nil {
		return "", nil, nil, err
	}
	if strings.TrimSpace(q) == "" {
		return "", nil, nil, fmt.Errorf("%s: the question is only a scope: ask something within it (search lists a scope's notes)", gateway.CodeInvalidScope)
	}
	return q, s, notes, nil
}
