package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// catalog is what a scope is evaluated over: the documents' fields and
// each one's chunks (rowid, language), as of scope_seq = seq. A store's
// catalog changes only under its scopeCache.rw write lock.
type catalog struct {
	seq   int64
	docs  []catDoc
	byID  map[string]uint32 // index into docs
	langs []string          // chunks' languages by code
	codes map[string]uint8  // langs' codes
	max   int64             // the largest rowid seen (a bound for ChunkSet's bitmap)

	setsMu sync.Mutex
	sets   map[string]*ChunkSet // by DocFilter.Key, at seq
}

// catDoc is one document's fields, lower-cased where matching ignores case,
// and its chunks.
type catDoc struct {
	id             string
	indexed        bool   // the documents table holds it; false: only chunks of it have arrived
	notebook, name string // lower-cased
	nbName         string // the notebook's name as written
	nbID           string // the notebook's id as written
	path, rel      string // lower-cased; rel within the notebook
	tags           []string
	time           int64
	chunks         []catChunk
}

// catChunk is a chunk's rowid and language code (catalog.langs).
type catChunk struct {
	row  int64
	lang uint8
}

func newCatalog() *catalog {
	return &catalog{byID: map[string]uint32{}, codes: map[string]uint8{}, sets: map[string]*ChunkSet{}}
}

// docsIn restricts a catalog query to the documents of a JSON list.
const docsIn = ` WHERE doc_id IN (SELECT value FROM json_each(?))`

// readCatalog reads, in tx, the documents of the JSON list ids (all of
// them for ""), their tags and their chunks, as of scope_seq = seq.
func readCatalog(ctx context.Context, tx *sql.Tx, seq int64, ids string) (*catalog, error) {
	c := newCatalog()
	c.seq = seq
	where, args := "", []any(nil)
	if ids != "" {
		where, args = docsIn, []any{ids}
	} else if err := c.reserve(ctx, tx); err != nil {
		return nil, fmt.Errorf("read scope catalog: %w", err)
	}
	if err := c.loadDocs(ctx, tx, where, args); err != nil {
		return nil, fmt.Errorf("read scope catalog: documents: %w", err)
	}
	if err := c.loadTags(ctx, tx, where, args); err != nil {
		return nil, fmt.Errorf("read scope catalog: tags: %w", err)
	}
	if err := c.loadChunks(ctx, tx, where, args); err != nil {
		return nil, fmt.Errorf("read scope catalog: chunks: %w", err)
	}
	return c, nil
}

// reserve sizes c for all the documents tx holds.
func (c *catalog) reserve(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM documents`).Scan(&n); err != nil {
		return err
	}
	c.docs, c.byID = make([]catDoc, 0, n), make(map[string]uint32, n)
	return nil
}

func (c *catalog) loadDocs(ctx context.Context, tx *sql.Tx, where string, args []any) error {
	rows, err := tx.QueryContext(ctx, `SELECT doc_id, source, notebook, notebook_name, path, doc_time, chunk_count FROM documents`+where, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d := catDoc{indexed: true}
		var source string
		var n int
		if err := rows.Scan(&d.id, &source, &d.notebook, &d.name, &d.path, &d.time, &n); err != nil {
			return err
		}
		d.nbName, d.nbID = d.name, d.notebook
		d.notebook, d.name, d.path = strings.ToLower(d.notebook), strings.ToLower(d.name), strings.ToLower(d.path)
		d.rel = relPath(source, d.path, d.notebook, d.name)
		d.chunks = make([]catChunk, 0, min(max(n, 0), 1<<12))
		c.add(d)
	}
	return rows.Err()
}

// relPath is a document's path within its notebook (all lower-case): a
// Markdown file's path below its root folder, a SiYuan path without the
// notebook's name.
func relPath(source, path, notebook, name string) string {
	switch {
	case notebook != "" && strings.HasPrefix(path, notebook+"/"):
		return path[len(notebook)+1:]
	case source == schemas.SourceSiYuan && name != "" && strings.HasPrefix(path, name+"/"):
		return path[len(name)+1:]
	}
	return path
}

func (c *catalog) loadTags(ctx context.Context, tx *sql.Tx, where string, args []any) error {
	rows, err := tx.QueryContext(ctx, `SELECT doc_id, tag FROM doc_tags`+where, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, tag string
		if err := rows.Scan(&id, &tag); err != nil {
			return err
		}
		if i, ok := c.byID[id]; ok {
			c.docs[i].tags = append(c.docs[i].tags, tag)
		}
	}
	return rows.Err()
}

// loadChunks adds each chunk to its document; a chunk whose document's
// structure has not arrived yet goes to an entry not indexed, which no
// scope matches until the structure comes.
func (c *catalog) loadChunks(ctx context.Context, tx *sql.Tx, where string, args []any) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, doc_id, lang FROM chunks`+where, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var id int64
	var docID, lang sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &docID, &lang); err != nil {
			return err
		}
		i, ok := c.byID[string(docID)]
		if !ok {
			i = c.add(catDoc{id: string(docID)})
		}
		d := &c.docs[i]
		d.chunks = append(d.chunks, catChunk{row: id, lang: c.code(string(lang))})
		c.max = max(c.max, id)
	}
	return rows.Err()
}

// code is lang's code, given it the first time (past 255 languages the
// rest share code 0).
func (c *catalog) code(lang string) uint8 {
	code, ok := c.codes[lang]
	if !ok && len(c.langs) < 255 {
		code = uint8(len(c.langs))
		c.codes[lang] = code
		c.langs = append(c.langs, lang)
	}
	return code
}

// add appends d and returns its index.
func (c *catalog) add(d catDoc) uint32 {
	i := uint32(len(c.docs))
	c.byID[d.id] = i
	c.docs = append(c.docs, d)
	return i
}

// remove takes document id out (the last document moves into its place).
func (c *catalog) remove(id string) {
	i, ok := c.byID[id]
	if !ok {
		return
	}
	last := uint32(len(c.docs) - 1)
	if i != last {
		c.docs[i] = c.docs[last]
		c.byID[c.docs[i].id] = i
	}
	c.docs[last] = catDoc{}
	c.docs = c.docs[:last]
	delete(c.byID, id)
}

// apply replaces the documents ids with what delta (read for exactly those
// ids) holds of them, moves to delta's seq and drops the cached sets.
func (c *catalog) apply(delta *catalog, ids []string) {
	for _, id := range ids {
		c.remove(id)
	}
	for i := range delta.docs {
		d := delta.docs[i]
		for j := range d.chunks {
			d.chunks[j].lang = c.code(delta.langs[d.chunks[j].lang])
		}
		c.add(d)
	}
	c.seq, c.max = delta.seq, max(c.max, delta.max)
	clear(c.sets)
}

// allowed evaluates f: each document's fields, then its chunks' languages.
func (c *catalog) allowed(f *DocFilter) *ChunkSet {
	m := newDocMatcher(f)
	set := &ChunkSet{docs: map[string]struct{}{}, rows: make([]uint64, c.max/64+1)}
	var langs []string
	for _, l := range f.Langs {
		langs = append(langs, strings.ToLower(strings.TrimSpace(l)))
	}
	langOK := make([]bool, len(c.langs))
	for i, l := range c.langs {
		langOK[i] = langs == nil || slices.Contains(langs, strings.ToLower(l))
	}
	set.langs = langs
	for i := range c.docs {
		d := &c.docs[i]
		if !d.indexed || !m.match(d) {
			continue
		}
		set.docs[d.id] = struct{}{}
		for _, ch := range d.chunks {
			if langOK[ch.lang] {
				set.rows[ch.row>>6] |= 1 << (uint64(ch.row) & 63)
				set.n++
			}
		}
	}
	return set
}

// docMatcher is a DocFilter's document fields, normalised once.
type docMatcher struct {
	f                   *DocFilter
	notebooks, notNbs   []string // lower-cased
	prefixes, notPrefix []string // as given, none empty (schemas.PathForms)
	tags, notTags       []string // normalised
	ids, notIDs         map[string]bool
	since, until        int64
}

func newDocMatcher(f *DocFilter) *docMatcher {
	m := &docMatcher{f: f, notebooks: lowerAll(f.Notebooks), notNbs: lowerAll(f.NotNotebooks),
		prefixes: paths(f.PathPrefixes), notPrefix: paths(f.NotPathPrefixes),
		tags: normTags(f.Tags), notTags: normTags(f.NotTags), ids: setOf(f.DocIDs), notIDs: setOf(f.NotDocIDs)}
	if !f.Since.IsZero() {
		m.since = f.Since.UnixNano()
	}
	if !f.Until.IsZero() {
		m.until = f.Until.UnixNano()
	}
	return m
}

func (m *docMatcher) match(d *catDoc) bool {
	switch {
	case len(m.ids) > 0 && !m.ids[d.id], m.notIDs[d.id]:
		return false
	case len(m.notebooks) > 0 && !d.inNotebook(m.notebooks), d.inNotebook(m.notNbs):
		return false
	case len(m.prefixes) > 0 && !d.underPath(m.prefixes), d.underPath(m.notPrefix):
		return false
	case len(m.tags) > 0 && !d.tagged(m.tags), d.tagged(m.notTags):
		return false
	case (m.since != 0 || m.until != 0) && d.time == 0:
		return false
	case m.since != 0 && d.time < m.since, m.until != 0 && d.time >= m.until:
		return false
	}
	return true
}

func (d *catDoc) inNotebook(nbs []string) bool {
	for _, nb := range nbs {
		if nb == d.notebook || (d.name != "" && nb == d.name) {
			return true
		}
	}
	return false
}

func (d *catDoc) underPath(prefixes []string) bool {
	for _, p := range prefixes {
		forms := schemas.PathForms(p)
		if schemas.UnderPath(d.path, forms) || schemas.UnderPath(d.rel, forms) {
			return true
		}
	}
	return false
}

func (d *catDoc) tagged(tags []string) bool {
	for _, want := range tags {
		for _, t := range d.tags {
			if t == want || (strings.HasPrefix(t, want) && t[len(want)] == '/') {
				return true
			}
		}
	}
	return false
}

// paths are the path scopes that name something (an empty path or "/"
// narrows nothing, as on the vector stores).
func paths(v []string) []string {
	var out []string
	for _, p := range v {
		if schemas.PathForms(p) != nil {
			out = append(out, p)
		}
	}
	return out
}

func lowerAll(v []string) []string {
	var out []string
	for _, s := range v {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func normTags(v []string) []string {
	var out []string
	for _, s := range v {
		if t := schemas.NormalizeTag(s); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func setOf(v []string) map[string]bool {
	if len(v) == 0 {
		return nil
	}
	m := make(map[string]bool, len(v))
	for _, s := range v {
		m[s] = true
	}
	return m
}

// monthOf is the "2006-01" (UTC) of a unix-nanosecond time.
func monthOf(t int64) string { return time.Unix(0, t).UTC().Format("2006-01") }
