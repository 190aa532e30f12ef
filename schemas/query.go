package schemas

import (
	"fmt"
	"strings"
	"time"

	"github.com/exocortex/exocortex/lang"
)

// Query event types.
const (
	// TypeQuerySubmittedV1 is still read, never emitted: its question is
	// searched as it is (its scope, if any, is options.scope alone).
	TypeQuerySubmittedV1 = "kb.query.submitted.v1"
	// TypeQuerySubmittedV2 is what every producer emits: QueryOptions.Literal
	// says whether the question's scope words were already read.
	TypeQuerySubmittedV2 = "kb.query.submitted.v2"
	TypeQueryRetrievedV1 = "kb.query.retrieved.v1"
	TypeQueryRerankedV1  = "kb.query.reranked.v1"
)

// Retrieval modes, from the cheapest to the fullest.
const (
	ModeLexical = "lexical" // BM25 over the lemmatized full-text index
	ModeVector  = "vector"  // the embedding model and the vector store
	ModeHybrid  = "hybrid"  // both, fused by Reciprocal Rank Fusion
	ModeRerank  = "rerank"  // hybrid, then the cross-encoder
)

// ValidMode reports whether m is a retrieval mode ("" means the fullest available).
func ValidMode(m string) bool {
	switch m {
	case "", ModeLexical, ModeVector, ModeHybrid, ModeRerank:
		return true
	}
	return false
}

// Turn is one message of a conversation.
type Turn struct {
	Role string `json:"role"` // "user" or "assistant"
	Text string `json:"text"`
}

// QueryOptions tune one query.
type QueryOptions struct {
	// Mode is the retrieval mode; "" asks for the fullest the system has.
	Mode string `json:"mode,omitempty"`
	// K is how many reranked contexts to keep (default 12).
	K int `json:"k,omitempty"`
	// Lang restricts retrieval to chunks of one language ("ru", "en").
	Lang string `json:"lang,omitempty"`
	// Expand is how many graph neighbours may be added (default 4; -1 for none).
	Expand int `json:"expand,omitempty"`
	// NoAnswer asks for the contexts only: the answer stage leaves the
	// query alone (a search, or a client answering with its own providers).
	NoAnswer bool `json:"no_answer,omitempty"`
	// IncludeReports searches saved research reports too (documents marked
	// by --save, see IsReportMeta); by default retrieval leaves them out,
	// so a report's copy of a passage is never cited instead of the note.
	IncludeReports bool `json:"include_reports,omitempty"`
	// Scope narrows the query to notebooks, paths, documents, tags,
	// languages and a date range, and may prefer newer notes; nil searches
	// every note (see Scope). Lang above stays the older spelling of one
	// included language.
	Scope *Scope `json:"scope,omitempty"`
	// Facets asks for the counts of the candidate documents by notebook,
	// tag and month (QueryRetrieved.Facets, QueryReranked.Facets).
	Facets bool `json:"facets,omitempty"`
	// Literal (kb.query.submitted.v2) says the question's words are to be
	// searched as they are: a door that read the scope operators and date
	// phrases out of the question (client.ParseQuestion) sets it. Without
	// it the retrieve stage reads them itself, with the same rules, keeps
	// the scope they give together with Scope (their intersection) and
	// says what it read in the reply's reasons ("scope_read: ..."). A v1
	// event is always searched as it is.
	Literal bool `json:"literal,omitempty"`
}

// Query is a client's question as every query event carries it, from
// kb.query.submitted to kb.query.reranked. The three events embed it, so its
// fields sit at the top level of their JSON, and a stage hands the query on
// with one assignment (out.Query = in.Query).
type Query struct {
	QueryID string `json:"query_id"`
	// Question is the words to search, scope operators removed (the doors
	// read them into Options.Scope: client.ParseQuestion); it is empty only
	// when the scope narrows the notes, and then asks for the scope's notes.
	Question string       `json:"question"`
	Lang     string       `json:"lang,omitempty"`
	History  []Turn       `json:"history,omitempty"`
	Options  QueryOptions `json:"options,omitempty"`
}

// QuerySubmitted is a question from a client.
type QuerySubmitted struct {
	Envelope
	Query
}

// MsgID is "query:<query_id>".
func (e *QuerySubmitted) MsgID() string { return "query:" + e.QueryID }

// Validate checks the fields the retrieve stage relies on.
func (e *QuerySubmitted) Validate() error {
	if e.QueryID == "" {
		return fmt.Errorf("query_id is required")
	}
	if strings.ContainsAny(e.QueryID, ".*> \t\r\n") {
		return fmt.Errorf("query_id %q may not contain '.', '*', '>' or whitespace (it becomes a subject token)", e.QueryID)
	}
	// A question of scope operators alone ("tag:recipe") leaves no words:
	// it asks for the scope's notes themselves, best and newest first.
	if strings.TrimSpace(e.Question) == "" && e.Options.Scope.IsZero() {
		return fmt.Errorf("question is empty (and no scope narrows the notes to list)")
	}
	if !ValidMode(e.Options.Mode) {
		return fmt.Errorf("options.mode %q: want lexical, vector, hybrid or rerank", e.Options.Mode)
	}
	if err := e.Options.Scope.Validate(); err != nil {
		return fmt.Errorf("options.scope: %w", err)
	}
	if e.Type == TypeQuerySubmittedV1 && e.Options.Literal {
		return fmt.Errorf("options.literal is a %s field (a v1 question is always searched as it is): publish %s", TypeQuerySubmittedV2, TypeQuerySubmittedV2)
	}
	return nil
}

// Reasons the retrieve stage gives when it read a question's scope itself
// (QuerySubmitted.ReadsText); they travel to kb.query.reranked and
// kb.answer.done.
const (
	// ReasonScopeRead: what the stage read out of the question, as the
	// doors show it ("scope_read: searching 2026-10-01 to 2026-10-31 (from
	// \"last month\")", "scope_read: scope: tags recipe").
	ReasonScopeRead = "scope_read"
	// ReasonInvalidScope: the question's scope cannot be read or kept (a
	// misspelt operator, a bad date, values that keep nothing): nothing was
	// searched, and the answer says what to fix (the HTTP door's 400
	// invalid_scope).
	ReasonInvalidScope = "invalid_scope"
)

// ReadsText reports whether the retrieve stage reads the question's scope
// operators and date phrases itself: a kb.query.submitted.v2 event whose
// door did not (Options.Literal unset). A v1 event, and a query built in
// this process (no type), are searched as they are.
func (e *QuerySubmitted) ReadsText() bool {
	return e.Type == TypeQuerySubmittedV2 && !e.Options.Literal
}

// DetectLang gives a query without a language its question's (the answer,
// its messages and follow-ups are in it). The chunk filter (Options.Lang)
// is left alone. The client calls it before a query leaves it, so a
// running system from before language detection answers in it too.
func (q *Query) DetectLang() {
	if q.Lang == "" {
		q.Lang = lang.DetectLang(q.Question)
	}
}

// RetrieverHit is where one retriever placed a candidate.
type RetrieverHit struct {
	Rank  int     `json:"rank"` // 1-based
	Score float64 `json:"score"`
}

// Passage is a chunk as retrieval returns it: enough to rerank, cite and show.
type Passage struct {
	ChunkID     string   `json:"chunk_id"`
	DocID       string   `json:"doc_id"`
	Title       string   `json:"title,omitempty"`
	Path        string   `json:"path,omitempty"`
	SectionPath []string `json:"section_path,omitempty"`
	BlockID     string   `json:"block_id,omitempty"`
	BlockIDs    []string `json:"block_ids,omitempty"`
	// BlockSpans place each block's own text in Text (empty for chunks
	// indexed before block spans existed).
	BlockSpans []BlockSpan `json:"block_spans,omitempty"`
	Lang       string      `json:"lang,omitempty"`
	Text       string      `json:"text"`
	// Report marks a chunk of a saved research report (only returned when
	// the query's IncludeReports asked for them).
	Report bool `json:"report,omitempty"`
	// Updated is the note's own time (RFC 3339, store.DocTimes: its front
	// matter's date, else its source's update time), empty when unknown;
	// the rerank stage sets it on the final contexts.
	Updated string `json:"updated,omitempty"`
}

// Candidate is one fused candidate with each retriever's rank and score.
type Candidate struct {
	Passage
	// Lexical and Vector are nil when that retriever did not return the chunk.
	Lexical *RetrieverHit `json:"lexical,omitempty"`
	Vector  *RetrieverHit `json:"vector,omitempty"`
	// Fused is the RRF score (sum of 1/(k+rank)); FusedRank is 1-based.
	Fused     float64 `json:"fused"`
	FusedRank int     `json:"fused_rank"`
}

// QueryRetrieved carries the fused candidates from the retrieve stage to the
// rerank stage.
type QueryRetrieved struct {
	Envelope
	Query
	// Searched is what was searched: the question, or its standalone
	// reformulation ("query" on the wire).
	Searched string `json:"query"`
	// Mode is the mode actually used (lower than asked when a model is missing).
	Mode       string      `json:"mode"`
	Candidates []Candidate `json:"candidates"`
	// Reasons explain a lower mode or a widened search ("no_embedding_model: ...").
	Reasons []string `json:"reasons,omitempty"`
	// TimingsMS holds milliseconds per step (embed, vector, lexical, fuse).
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
	// QueryVector is the query's embedding when one was made (the answer
	// stage's semantic cache looks answers up by it).
	QueryVector Vector `json:"query_vector,omitempty"`
	// SubmittedAt is the kb.query.submitted event's time, carried to the
	// answer stage so it can measure first-token and total latency.
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	// Facets count the candidates' documents when the query asked for
	// them (Options.Facets).
	Facets *Facets `json:"facets,omitempty"`
}

// MsgID is "retrieved:<query_id>".
func (e *QueryRetrieved) MsgID() string { return "retrieved:" + e.QueryID }

// Validate checks the fields the rerank stage relies on.
func (e *QueryRetrieved) Validate() error {
	if e.QueryID == "" || e.Mode == "" {
		return fmt.Errorf("query_id and mode are required")
	}
	return nil
}

// Context is one passage handed to the answer stage.
type Context struct {
	Passage
	// Rank is 1-based in the final list.
	Rank int `json:"rank"`
	// Score is what ranked the context: the cross-encoder score (source
	// rerank), the RRF fused score (fused), BM25 in lexical mode (lexical) or
	// the cosine in vector mode (vector); 0 for a neighbour.
	Score float64 `json:"score"`
	// Source is "rerank", "fused", "lexical", "vector", or "graph:<edge kind>"
	// for a neighbour added by graph expansion (then Of names the context it
	// neighbours).
	Source string `json:"source"`
	Of     string `json:"of,omitempty"`
	// FusedRank is the candidate's place before reranking (0 for neighbours);
	// Lexical and Vector are the retrievers' ranks and scores.
	FusedRank int           `json:"fused_rank,omitempty"`
	Lexical   *RetrieverHit `json:"lexical,omitempty"`
	Vector    *RetrieverHit `json:"vector,omitempty"`
}

// QueryReranked carries the final contexts from the rerank stage to the
// answer stage.
type QueryReranked struct {
	Envelope
	Query
	// Searched is what was searched (see QueryRetrieved).
	Searched    string             `json:"query"`
	Mode        string             `json:"mode"`
	Contexts    []Context          `json:"contexts"`
	Reasons     []string           `json:"reasons,omitempty"`
	TimingsMS   map[string]float64 `json:"timings_ms,omitempty"`
	QueryVector Vector             `json:"query_vector,omitempty"`
	// SubmittedAt is the kb.query.submitted event's time (see QueryRetrieved).
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	// Facets are the retrieve stage's counts of the fused candidates'
	// documents (see QueryRetrieved), when the query asked for them.
	Facets *Facets `json:"facets,omitempty"`
}

// MsgID is "reranked:<query_id>".
func (e *QueryReranked) MsgID() string { return "reranked:" + e.QueryID }

// Validate checks the fields the answer stage relies on.
func (e *QueryReranked) Validate() error {
	if e.QueryID == "" || e.Mode == "" {
		return fmt.Errorf("query_id and mode are required")
	}
	return nil
}

// TypeQueryCancelV1 is a client's cancellation of its query.
const TypeQueryCancelV1 = "kb.query.cancel.v1"

// SubjectQueryCancelPrefix + query id is the core NATS subject (not a
// stream) on which a client that left cancels its query.
const SubjectQueryCancelPrefix = "kb.cancel.query."

// QueryCancel tells the stages working on a query that its client left:
// the answer stage stops asking the language model and finishes at once.
type QueryCancel struct {
	Envelope
	QueryID string `json:"query_id"`
	Reason  string `json:"reason,omitempty"`
}

// Subject is kb.cancel.query.<query_id>.
func (e *QueryCancel) Subject() string { return SubjectQueryCancelPrefix + e.QueryID }

// MsgID is "cancel:<query_id>".
func (e *QueryCancel) MsgID() string { return "cancel:" + e.QueryID }
