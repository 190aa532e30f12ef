// Package gateway is the HTTP door of the running system: REST with
// server-sent events, the web page, the OpenAI-compatible chat endpoint,
// MCP and metrics. Every door is a client of the bus, like the CLI: a
// question asked here goes onto kb.query.submitted and streams back from
// kb.answer.tokens.<id>.
package gateway

import (
	"context"

	"github.com/exocortex/exocortex/schemas"
)

// Backend is what the doors ask of the system. The bus implementation
// (NewBusBackend) talks to a running pipeline through NATS; tests may use
// it over an embedded one.
type Backend interface {
	// Search returns what `exocortex search --json` prints.
	Search(ctx context.Context, req SearchRequest) (*SearchResult, error)
	// Ask publishes the question and streams its answer: onToken gets every
	// token in order (restart markers included); the finished answer is
	// returned. Cancelling ctx abandons the query.
	Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error)
	// Research publishes the request and streams its progress; the report
	// is returned.
	Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error)
	// Block returns an indexed block: its text, document, section path and
	// neighbours (nil, nil when there is no such block).
	Block(ctx context.Context, id string) (*Block, error)
}

// SearchRequest is a search (POST /v1/search, the MCP search tool).
type SearchRequest struct {
	Query string `json:"query"`
	K     int    `json:"k,omitempty"`
	// Mode is lexical, vector, hybrid or rerank ("" = the best there is).
	Mode string `json:"mode,omitempty"`
	// Lang keeps the search to chunks in this language ("" = all).
	Lang string `json:"lang,omitempty"`
	// IncludeReports searches saved research reports too (left out by
	// default: schemas.QueryOptions.IncludeReports).
	IncludeReports bool `json:"include_reports,omitempty"`
	// Facets asks for the counts of the query's candidate documents by
	// notebook, tag and month (SearchResult.Facets).
	Facets bool `json:"facets,omitempty"`
	// Scope keeps the search to part of the notes (schemas.Scope);
	// operators in Query (tag:recipe, in:"Work notes", after:2024-03-01)
	// narrow it further. A query of operators alone lists the scope.
	Scope *schemas.Scope `json:"scope,omitempty"`
	// Marks enclose a snippet's matched words (zero: the backend's own,
	// BusOptions.SearchMarks); a door's choice, not part of the request
	// body.
	Marks Marks `json:"-"`
}

// SearchResult is a search's answer: the mode it ran in, why it is lower
// than asked, timings and the hits.
type SearchResult struct {
	// Query is the words searched (scope operators read out of them) and
	// Scope the scope the search ran in (absent: every note).
	Query     string             `json:"query,omitempty"`
	Scope     *schemas.Scope     `json:"scope,omitempty"`
	Mode      string             `json:"mode"`
	Reasons   []string           `json:"reasons,omitempty"`
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
	Results   []SearchHit        `json:"results"`
	// Facets count the documents of the query's fused candidates (not
	// only the k results) by notebook, tag and month, when asked.
	Facets *schemas.Facets `json:"facets,omitempty"`
}

// SearchHit is one hit, as `exocortex search --json` prints it.
type SearchHit struct {
	Rank        int                   `json:"rank"`
	Score       float64               `json:"score"`
	ScoreKind   string                `json:"score_kind,omitempty"`
	Title       string                `json:"title"`
	SectionPath []string              `json:"section_path"`
	BlockID     string                `json:"block_id"`
	BlockIDs    []string              `json:"block_ids"`
	DocID       string                `json:"doc_id"`
	ChunkID     string                `json:"chunk_id"`
	Lang        string                `json:"lang,omitempty"`
	Snippet     string                `json:"snippet"`
	Path        string                `json:"path,omitempty"`
	Link        string                `json:"link,omitempty"`
	Source      string                `json:"source,omitempty"`
	Lexical     *schemas.RetrieverHit `json:"lexical,omitempty"`
	Vector      *schemas.RetrieverHit `json:"vector,omitempty"`
	// Report marks a passage of a saved research report (only found when
	// the request included reports).
	Report bool `json:"report,omitempty"`
	// Updated is the note's own time (RFC 3339), when known.
	Updated string `json:"updated,omitempty"`
}

// Block is an indexed block with its place in the notes.
type Block struct {
	ID          string     `json:"id"`
	DocID       string     `json:"doc_id"`
	Title       string     `json:"title"`
	SectionPath []string   `json:"section_path,omitempty"`
	Type        string     `json:"type,omitempty"`
	Text        string     `json:"text"`
	Link        string     `json:"link,omitempty"`
	Neighbors   []Neighbor `json:"neighbors,omitempty"`
}

// Neighbor is a block linked to another in the graph.
type Neighbor struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // parent, child, sibling, prev, next, ref
	Text string `json:"text,omitempty"`
}
