package schemas

import (
	"fmt"
	"time"
)

// TypeDocChangedV1 is published on SubjectDocChanged by sources (files, siyuan).
const TypeDocChangedV1 = "kb.doc.changed.v1"

// Source names.
const (
	SourceMarkdown = "markdown"
	SourceSiYuan   = "siyuan"
)

// Block types shared by all sources (SiYuan's node types map onto these).
const (
	BlockDocument   = "document"
	BlockHeading    = "heading"
	BlockParagraph  = "paragraph"
	BlockList       = "list"
	BlockListItem   = "list_item"
	BlockCode       = "code"
	BlockTable      = "table"
	BlockQuote      = "blockquote"
	BlockSuperBlock = "superblock"
	BlockCallout    = "callout"
	BlockMath       = "math"
	BlockHTML       = "html"
	BlockEmbed      = "embed"
	BlockMedia      = "media"
	BlockOther      = "other"
)

// Block is one block of a document, in document order (pre-order: a container
// comes before its children). Containers (list, list_item, blockquote,
// superblock, callout) usually carry no text of their own; their children do.
type Block struct {
	ID string `json:"id"`
	// Type is one of the Block* constants.
	Type string `json:"type"`
	// ParentID is the enclosing block; empty for top-level blocks (whose parent is
	// the document).
	ParentID string `json:"parent_id,omitempty"`
	// Level is the heading level (1-6) for headings, 0 otherwise.
	Level int `json:"level,omitempty"`
	// Text is the block's own content as Markdown-ish plain text (inline marks
	// kept light, references replaced by their anchor text).
	Text string `json:"text,omitempty"`
	// Updated is the source's update stamp for the block (SiYuan YYYYMMDDhhmmss).
	Updated string `json:"updated,omitempty"`
	// Refs are the ids of blocks or documents this block references
	// (SiYuan block refs, Markdown [[wikilinks]] and relative links).
	Refs []string `json:"refs,omitempty"`
}

// DocChanged carries a whole document (all its blocks) or its deletion.
type DocChanged struct {
	Envelope
	DocID  string `json:"doc_id"`
	Source string `json:"source"`
	// Path is where the document lives (file path, or SiYuan notebook/hpath).
	Path string `json:"path"`
	// Notebook is the SiYuan notebook (box) id or the Markdown root folder.
	Notebook string `json:"notebook,omitempty"`
	// NotebookName is the notebook's readable name where the source knows
	// it: the SiYuan notebook's name, the Markdown root folder's base name.
	NotebookName string `json:"notebook_name,omitempty"`
	Title        string `json:"title"`
	// TitlePath is the chain of titles from the top of the notebook down to this
	// document (SiYuan hpath), used as the start of every section path.
	TitlePath []string `json:"title_path,omitempty"`
	// ParentDocID is the enclosing document (SiYuan child documents).
	ParentDocID string `json:"parent_doc_id,omitempty"`
	// Hash is the sha256 (hex) of the document's source content.
	Hash string `json:"hash"`
	// Version orders changes of one document: later changes have larger
	// versions (unix nanoseconds of the source's update time). Writes with a
	// smaller version than the stored one are ignored.
	Version int64 `json:"version"`
	// Deleted marks the document as removed; Blocks is then empty.
	Deleted bool `json:"deleted,omitempty"`
	// Force asks the stages after the source to redo the document in full
	// (`ingest --force`): the chunk stage re-sends every chunk, not only
	// those its manifest lacks, so chunks lost from the index come back.
	Force bool              `json:"force,omitempty"`
	Meta  map[string]string `json:"meta,omitempty"`
	// Tags are the document's tags, normalised (NormalizeTag): front
	// matter "tags", #tags in its text, SiYuan's tags attribute and inline
	// tags. Sorted, each once.
	Tags []string `json:"tags,omitempty"`
	// Updated and Created are the note's own time: SiYuan's updated and
	// created, Markdown front matter's updated (modified, lastmod) or date
	// and created, else the file's modification time. Zero when unknown.
	Updated time.Time `json:"updated,omitzero"`
	Created time.Time `json:"created,omitzero"`
	// Report marks a saved research report (its front matter or SiYuan
	// attribute, see IsReportMeta): retrieval leaves its chunks out unless
	// a query asks for reports. Absent (false) for notes.
	Report bool    `json:"report,omitempty"`
	Blocks []Block `json:"blocks,omitempty"`
}

// MsgID is "doc:<id>@<hash>:<version>", or "doc:<id>@deleted:<version>"
// for a deletion. The version is in it because a document can come back to
// an earlier content (a rename undone): the same id would be dropped as a
// duplicate within the stream's window, and the index would keep the newer
// state.
func (e *DocChanged) MsgID() string {
	if e.Deleted {
		return fmt.Sprintf("doc:%s@deleted:%d", e.DocID, e.Version)
	}
	return fmt.Sprintf("doc:%s@%s:%d", e.DocID, e.Hash, e.Version)
}

// Validate checks the fields every consumer relies on.
func (e *DocChanged) Validate() error {
	if e.DocID == "" {
		return fmt.Errorf("doc_id is empty")
	}
	if !e.Deleted && e.Hash == "" {
		return fmt.Errorf("doc %s: hash is empty", e.DocID)
	}
	seen := make(map[string]bool, len(e.Blocks))
	for i, b := range e.Blocks {
		if b.ID == "" {
			return fmt.Errorf("doc %s: block %d has no id", e.DocID, i)
		}
		if seen[b.ID] {
			return fmt.Errorf("doc %s: block id %s repeats", e.DocID, b.ID)
		}
		seen[b.ID] = true
	}
	return nil
}
