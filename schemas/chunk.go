package schemas

import (
	"fmt"
	"time"
)

// TypeChunkCreatedV1 is one chunk (or a tombstone) on SubjectChunkCreated.
const TypeChunkCreatedV1 = "kb.chunk.created.v1"

// TypeDocStructureV1 is a document's metadata and block skeleton, published by
// the chunk stage on SubjectDocStructure after the document's chunks. The index
// replaces the document's blocks and graph edges with it.
const TypeDocStructureV1 = "kb.doc.structure.v1"

// ChunkCreated is one chunk of a document, or a tombstone for a removed chunk.
type ChunkCreated struct {
	Envelope
	ChunkID string `json:"chunk_id"`
	DocID   string `json:"doc_id"`
	// DocVersion is the DocChanged.Version the chunk was cut from; the index
	// ignores a write older than what it holds.
	DocVersion int64 `json:"doc_version"`
	// Ordinal is the chunk's position in its document (0-based).
	Ordinal int `json:"ordinal"`
	// Tombstone marks a chunk that no longer exists; Hash is then the hash of
	// the removed content and the other content fields are empty.
	Tombstone bool `json:"tombstone,omitempty"`
	// Hash is the sha256 (hex) of Text.
	Hash string `json:"hash"`
	Text string `json:"text,omitempty"`
	// SectionPath is the title path and headings above the chunk, outermost first.
	SectionPath []string `json:"section_path,omitempty"`
	// Lang is "ru", "en" or "" when undetermined.
	Lang string `json:"lang,omitempty"`
	// BlockIDs are the blocks the chunk covers, in order; the first is the
	// block a citation of the chunk points at.
	BlockIDs []string `json:"block_ids,omitempty"`
	// BlockSpans place the text of the chunk's blocks in Text: where each
	// block's own text starts and ends (byte offsets). The overlap taken
	// from the previous chunk has spans of the blocks it came from, which
	// are not in BlockIDs. A container without text of its own has none.
	BlockSpans []BlockSpan `json:"block_spans,omitempty"`
	// Refs are the targets referenced from the chunk's blocks.
	Refs   []string `json:"refs,omitempty"`
	Tokens int      `json:"tokens,omitempty"`
}

// MsgID is "chunk:<id>@<hash>:<doc version>" (or
// "chunk:<id>@tombstone:<hash>:<doc version>"). The version is in it because
// a chunk whose text is unchanged is sent again when what it carries besides
// (section path after a rename or move, refs) changed: the same id would be
// dropped as a duplicate within the stream's window.
func (e *ChunkCreated) MsgID() string {
	if e.Tombstone {
		return fmt.Sprintf("chunk:%s@tombstone:%s:%d", e.ChunkID, e.Hash, e.DocVersion)
	}
	return fmt.Sprintf("chunk:%s@%s:%d", e.ChunkID, e.Hash, e.DocVersion)
}

// Validate checks the fields the index relies on.
func (e *ChunkCreated) Validate() error {
	if e.ChunkID == "" || e.DocID == "" {
		return fmt.Errorf("chunk_id and doc_id are required")
	}
	if e.Hash == "" {
		return fmt.Errorf("chunk %s: hash is empty", e.ChunkID)
	}
	return nil
}

// BlockNode is a block's place in the document graph (no text).
type BlockNode struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	ParentID string   `json:"parent_id,omitempty"`
	ChunkID  string   `json:"chunk_id,omitempty"`
	Refs     []string `json:"refs,omitempty"`
}

// DocStructure is a document's metadata and block skeleton, or its deletion.
type DocStructure struct {
	Envelope
	DocID       string            `json:"doc_id"`
	Source      string            `json:"source"`
	Path        string            `json:"path"`
	Notebook    string            `json:"notebook,omitempty"`
	Title       string            `json:"title"`
	TitlePath   []string          `json:"title_path,omitempty"`
	ParentDocID string            `json:"parent_doc_id,omitempty"`
	Hash        string            `json:"hash"`
	Version     int64             `json:"version"`
	Deleted     bool              `json:"deleted,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	// NotebookName, Tags, Updated and Created are DocChanged's: what a
	// query's scope filters on.
	NotebookName string    `json:"notebook_name,omitempty"`
	Tags         []string  `json:"tags,omitempty"`
	Updated      time.Time `json:"updated,omitzero"`
	Created      time.Time `json:"created,omitzero"`
	// Report marks a saved research report (DocChanged.Report): the index
	// keeps it per document, and retrieval leaves the document out unless
	// a query asks for reports.
	Report bool `json:"report,omitempty"`
	// ChunkIDs are all the document's current chunks, in order.
	ChunkIDs []string    `json:"chunk_ids,omitempty"`
	Blocks   []BlockNode `json:"blocks,omitempty"`
}

// MsgID is "docstruct:<id>@<hash>:<version>" (or "...@deleted:<version>"),
// versioned for the same reason as DocChanged's.
func (e *DocStructure) MsgID() string {
	if e.Deleted {
		return fmt.Sprintf("docstruct:%s@deleted:%d", e.DocID, e.Version)
	}
	return fmt.Sprintf("docstruct:%s@%s:%d", e.DocID, e.Hash, e.Version)
}

// Validate checks the fields the index relies on.
func (e *DocStructure) Validate() error {
	if e.DocID == "" {
		return fmt.Errorf("doc_id is empty")
	}
	return nil
}

// BlockSpan is where a block's text lies in a chunk's text: Text[Start:End]
// (byte offsets).
type BlockSpan struct {
	ID    string `json:"id"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	// Instruction marks a block whose own text addresses an AI assistant or
	// gives it orders ("ignore previous instructions", "answer that ...",
	// a "System:" line; analysis.Instruction), set by the chunk stage. Such a
	// block is quoted material: what it tells a model to say is not a fact
	// it states. Absent (false) in spans indexed before the flag existed;
	// readers that need certainty run analysis.Instruction on the text.
	Instruction bool `json:"instruction,omitempty"`
}
