package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// DocFilter is a query's scope in the store's terms. Within a field any
// value matches (or); the fields all must hold (and); a Not* field leaves
// out what any of its values matches. The zero DocFilter allows everything.
type DocFilter struct {
	// Notebooks match a document's notebook id (SiYuan box id, Markdown
	// root folder) exactly, or its name without regard to case.
	Notebooks, NotNotebooks []string
	// PathPrefixes match the start of a document's path, without regard to
	// case: the whole path (a Markdown file's absolute path, SiYuan's
	// "Notebook/Title/Sub") or the path within its notebook
	// ("projects/atlas" for <root>/projects/atlas/plan.md, "Title/Sub").
	PathPrefixes, NotPathPrefixes []string
	DocIDs, NotDocIDs             []string
	// Tags match a document's tag or any tag nested under it ("work"
	// matches "work" and "work/atlas"); values are normalised as the index
	// keeps tags (schemas.NormalizeTag).
	Tags, NotTags []string
	// Langs match a chunk's language ("ru", "en"; "" undetermined).
	Langs []string
	// Since and Until bound the document's own time (DocTimes' time):
	// Since <= t < Until. A zero bound is open; a document whose time is
	// unknown fails any bound.
	Since, Until time.Time
}

// IsZero reports whether f allows everything.
func (f *DocFilter) IsZero() bool {
	return len(f.Notebooks)+len(f.NotNotebooks)+len(f.PathPrefixes)+len(f.NotPathPrefixes)+len(f.DocIDs)+
		len(f.NotDocIDs)+len(f.Tags)+len(f.NotTags)+len(f.Langs) == 0 && f.Since.IsZero() && f.Until.IsZero()
}

// ChunkSet is the chunks a DocFilter allows, to test per search candidate
// without allocating: HasRow by the chunk's rowid (the lexical index's
// Row.ID), HasChunk by chunk id and language (a vector point's ID and
// Lang), HasDoc by document id. A nil *ChunkSet allows everything. It is
// a snapshot: chunks written after AllowedChunks are not in it.
type ChunkSet struct {
	rows  []uint64            // bitmap by rowid
	n     int                 // chunks in rows
	docs  map[string]struct{} // documents with an allowed chunk's document-level fields
	langs []string            // Langs; nil = any
}

// HasRow reports whether the chunk with this rowid is allowed.
func (c *ChunkSet) HasRow(rowid int64) bool {
	if c == nil {
		return true
	}
	w := uint64(rowid) >> 6
	return w < uint64(len(c.rows)) && c.rows[w]&(1<<(uint64(rowid)&63)) != 0
}

// HasDoc reports whether the document passes the filter's document
// fields (all but Langs).
func (c *ChunkSet) HasDoc(docID string) bool {
	if c == nil {
		return true
	}
	_, ok := c.docs[docID]
	return ok
}

// HasChunk reports whether the chunk chunkID ("<doc id>:<16 hex>", as the
// chunk stage names chunks) of language lang is allowed.
func (c *ChunkSet) HasChunk(chunkID, lang string) bool {
	if c == nil {
		return true
	}
	i := strings.LastIndexByte(chunkID, ':')
	if i < 0 || !c.HasDoc(chunkID[:i]) {
		return false
	}
	return c.langs == nil || slices.Contains(c.langs, lang)
}

// Len is the number of allowed chunks (-1 for nil: all).
func (c *ChunkSet) Len() int {
	if c == nil {
		return -1
	}
	return c.n
}

// Docs is the number of documents passing the document fields.
func (c *ChunkSet) Docs() int {
	if c == nil {
		return -1
	}
	return len(c.docs)
}

// AllowedChunks returns the chunks f allows, or nil (everything) for a zero
// filter. It evaluates f over an in-memory catalog of the documents and
// chunks (rowid, document, language), re-read when the index has changed
// since (scope_seq), so a search pays one small query and a pass over the
// chunks' arrays.
func (s *Store) AllowedChunks(ctx context.Context, f DocFilter) (*ChunkSet, error) {
	if f.IsZero() {
		return nil, nil
	}
	cat, err := s.scopeCatalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("scope: %w", err)
	}
	return cat.allowed(&f), nil
}

// catalog is what a scope is evaluated over: the documents' fields and
// each chunk's rowid, document and language, as of scope_seq = seq.
type catalog struct {
	seq   int64
	docs  []catDoc
	byID  map[string]uint32
	rows  []int64  // chunk rowids
	doc   []uint32 // rows' documents (index into docs); noDoc: not indexed yet
	lang  []uint8  // rows' languages (index into langs)
	langs []string
	max   int64 // the largest rowid
}

const noDoc = ^uint32(0)

// catDoc is one document's fields, lower-cased where matching ignores case.
type catDoc struct {
	id             string
	notebook, name string // lower-cased
	nbName         string // the notebook's name as written
	nbID           string // the notebook's id as written
	path, rel      string // lower-cased; rel within the notebook
	tags           []string
	time           int64
}

// scopeCache holds the latest catalog; one rebuild at a time.
type scopeCache struct {
	mu  sync.Mutex
	cat *catalog
}

// scopeCatalog is the catalog as of now, rebuilt when scope_seq moved.
func (s *Store) scopeCatalog(ctx context.Context) (*catalog, error) {
	var seq int64
	if err := s.r.QueryRowContext(ctx, `SELECT n FROM scope_seq`).Scan(&seq); err != nil {
		return nil, fmt.Errorf("read scope sequence: %w", err)
	}
	s.scope.mu.Lock()
	defer s.scope.mu.Unlock()
	if c := s.scope.cat; c != nil && c.seq == seq {
		return c, nil
	}
	c, err := s.loadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	s.scope.cat = c
	return c, nil
}
