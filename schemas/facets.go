package schemas

import "fmt"

// Facets count a query's candidate documents by notebook, tag and month of
// the note's own time, so that a door can offer narrowing ("Work 12,
// Personal 3"). A query asks for them with QueryOptions.Facets; the
// retrieve stage counts the fused candidates (up to the retriever's FusedK,
// 80 by default, before reranking cuts them to k) and the rerank stage
// carries the counts on to kb.query.reranked. A document counts once however
// many of its chunks are candidates.
type Facets struct {
	// Of says what was counted: FacetsOfCandidates.
	Of string `json:"of"`
	// Docs is the number of distinct documents counted.
	Docs int `json:"docs"`
	// Notebooks, Tags and Months are the counts, the largest first (months:
	// the newest first); a document of unknown time has no month.
	Notebooks []NotebookCount `json:"notebooks"`
	Tags      []TagCount      `json:"tags"`
	Months    []MonthCount    `json:"months"`
}

// Labels are the counts as a door lists them, "Work 12", "recipe 5",
// "2026-11 4", in the order kept.
func (f *Facets) Labels() (notebooks, tags, months []string) {
	for _, n := range f.Notebooks {
		notebooks = append(notebooks, fmt.Sprintf("%s %d", n.Label(), n.Count))
	}
	for _, t := range f.Tags {
		tags = append(tags, fmt.Sprintf("%s %d", t.Tag, t.Count))
	}
	for _, m := range f.Months {
		months = append(months, fmt.Sprintf("%s %d", m.Month, m.Count))
	}
	return notebooks, tags, months
}

// FacetsOfCandidates: the facets count the documents of the query's fused
// candidates, not only the k results shown.
const FacetsOfCandidates = "candidates"

// NotebookCount is a notebook's documents: ID is what a scope names it by
// (SiYuan box id, a Markdown folder root), Name its name where known.
type NotebookCount struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	Count int    `json:"count"`
}

// Label is the notebook's name, else its id.
func (n NotebookCount) Label() string {
	if n.Name != "" {
		return n.Name
	}
	return n.ID
}

// TagCount is a tag's documents (the tag as the index keeps it:
// NormalizeTag).
type TagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

// MonthCount is the documents of one month of their own time ("2026-03",
// UTC).
type MonthCount struct {
	Month string `json:"month"`
	Count int    `json:"count"`
}

// The listing of every notebook and tag of the index, for a door's scope
// suggestions without a query: answered over core NATS request-reply by
// every process with the index open, like kb.store.block.get.
const (
	SubjectScopesGet = "kb.store.scopes.get"

	TypeScopesGetV1   = "kb.store.scopes.get.v1"
	TypeScopesReplyV1 = "kb.store.scopes.reply.v1"
)

// ScopesGet asks the index for its notebooks, tags and months with their
// document counts.
type ScopesGet struct {
	Envelope
}

// MsgID is "scopes-get:<trace_id>".
func (e *ScopesGet) MsgID() string { return "scopes-get:" + e.TraceID }

// ScopesReply answers a ScopesGet: the listing, or the error.
type ScopesReply struct {
	Envelope
	Scopes *ScopeListing `json:"scopes,omitempty"`
	Error  *ReplyError   `json:"error,omitempty"`
}

// MsgID is "scopes-reply:<trace_id>".
func (e *ScopesReply) MsgID() string { return "scopes-reply:" + e.TraceID }

// ScopeListing is every notebook, tag and month of the index with its
// documents, the largest first (months: the newest first). Docs counts the
// indexed documents.
type ScopeListing struct {
	Docs      int             `json:"docs"`
	Notebooks []NotebookCount `json:"notebooks"`
	Tags      []TagCount      `json:"tags"`
	Months    []MonthCount    `json:"months"`
}

func init() {
	register(Spec{Type: TypeScopesGetV1, Subject: SubjectScopesGet,
		Description: "A door's request (core NATS request-reply) for every notebook, tag and month of the index with document counts (scope suggestions), answered by a process with the index open.",
		New:         func() Event { return new(ScopesGet) }})
	register(Spec{Type: TypeScopesReplyV1, Subject: replySubjectOfRequest,
		Description: "The reply to kb.store.scopes.get: the notebooks (id, name), tags and months with their document counts, or the error.",
		New:         func() Event { return new(ScopesReply) }})
}
