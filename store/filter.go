package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exocortex/exocortex/lexical"
)

// DocFilter is a query's scope in the store's terms. Within a field any
// value matches (or); the fields all must hold (and); a Not* field leaves
// out what any of its values matches. The zero DocFilter allows everything.
type DocFilter struct {
	// Notebooks match a document's notebook id (SiYuan box id, Markdown
	// root folder) exactly, or its name without regard to case.
	Notebooks, NotNotebooks []string
	// PathPrefixes match whole folders and notes (schemas.PathForms),
	// without regard to case, of a document's whole path (a Markdown
	// file's absolute path, SiYuan's "Notebook/Title/Sub") or its path
	// within its notebook: "projects/atlas" holds <root>/projects/atlas.md
	// and everything below <root>/projects/atlas/, never
	// <root>/projects/atlas-old/; "proj" is not "projects".
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
	seq   int64               // the catalog's scope_seq
	key   string              // the filter's canonical key

	allowOnce sync.Once
	allow     *lexical.Allow

	memoMu sync.Mutex
	memo   map[string]any
}

// Memo returns the value kept under name, making it with mk the first
// time: what a caller derives from the set (the vector search's id set)
// lives as long as the set, which AllowedChunks hands out again for the
// same filter until the index changes. A nil set memoizes nothing.
func (c *ChunkSet) Memo(name string, mk func() any) any {
	if c == nil {
		return mk()
	}
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	if v, ok := c.memo[name]; ok {
		return v
	}
	if c.memo == nil {
		c.memo = map[string]any{}
	}
	v := mk()
	c.memo[name] = v
	return v
}

// Seq is the index's scope sequence the set was evaluated at: a set of
// the same Key and Seq holds the same chunks.
func (c *ChunkSet) Seq() int64 {
	if c == nil {
		return 0
	}
	return c.seq
}

// Key is the canonical form of the filter the set was made from (equal
// filters, equal keys): with Seq it keys what a caller derives from the
// set (the vector search's id set).
func (c *ChunkSet) Key() string {
	if c == nil {
		return ""
	}
	return c.key
}

// Allow is the set as the lexical index's allow-filter (the rowid bitmap,
// shared: made once, no copy). Nil for a nil set (everything).
func (c *ChunkSet) Allow() *lexical.Allow {
	if c == nil {
		return nil
	}
	c.allowOnce.Do(func() { c.allow = lexical.AllowBits(c.rows) })
	return c.allow
}

// DocIDs are the documents that pass the filter's document fields, in no
// particular order (nil for a nil set).
func (c *ChunkSet) DocIDs() []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.docs))
	for d := range c.docs {
		out = append(out, d)
	}
	return out
}

// Langs are the languages the set keeps (nil: any).
func (c *ChunkSet) Langs() []string {
	if c == nil {
		return nil
	}
	return c.langs
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
	return i >= 0 && c.HasDocLang(chunkID[:i], lang)
}

// HasDocLang reports whether a chunk of document docID in language lang
// is allowed: what HasChunk tests, for a chunk whose document is known
// (a Hit's DocID) whatever its id looks like.
func (c *ChunkSet) HasDocLang(docID, lang string) bool {
	if c == nil {
		return true
	}
	return c.HasDoc(docID) && (c.langs == nil || slices.Contains(c.langs, lang))
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
// their chunks (rowid, language), brought up to date first when the index
// has changed since (scope_seq): a write reloads only the documents it
// touched (see scopeCatalog), so a search pays one small query and a pass
// over the documents and the allowed chunks.
func (s *Store) AllowedChunks(ctx context.Context, f DocFilter) (*ChunkSet, error) {
	if f.IsZero() {
		return nil, nil
	}
	var set *ChunkSet
	err := s.withCatalog(ctx, func(cat *catalog) {
		key := f.Key()
		cat.setsMu.Lock()
		defer cat.setsMu.Unlock()
		if got, ok := cat.sets[key]; ok {
			set = got
			return
		}
		set = cat.allowed(&f)
		set.seq, set.key = cat.seq, key
		if len(cat.sets) >= maxCachedSets {
			clear(cat.sets)
		}
		cat.sets[key] = set
	})
	if err != nil {
		return nil, fmt.Errorf("scope: %w", err)
	}
	return set, nil
}

// maxCachedSets bounds the chunk sets a catalog keeps (one per filter
// asked since the index last changed).
const maxCachedSets = 64

// Key is f's canonical form: equal filters (the same values in the same
// order) have equal keys.
func (f *DocFilter) Key() string {
	b, err := json.Marshal(f)
	if err != nil { // a DocFilter is strings and times: never
		return fmt.Sprint(*f)
	}
	return string(b)
}
