package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// loadCatalog reads the catalog in one read transaction, so its seq is
// the state its rows show.
func (s *Store) loadCatalog(ctx context.Context) (*catalog, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read scope catalog: %w", err)
	}
	defer tx.Rollback()
	c := &catalog{byID: map[string]uint32{}, sets: map[string]*ChunkSet{}}
	if err := tx.QueryRowContext(ctx, `SELECT n FROM scope_seq`).Scan(&c.seq); err != nil {
		return nil, fmt.Errorf("read scope catalog: %w", err)
	}
	if err := c.loadDocs(ctx, tx); err != nil {
		return nil, fmt.Errorf("read scope catalog: documents: %w", err)
	}
	if err := c.loadTags(ctx, tx); err != nil {
		return nil, fmt.Errorf("read scope catalog: tags: %w", err)
	}
	if err := c.loadChunks(ctx, tx); err != nil {
		return nil, fmt.Errorf("read scope catalog: chunks: %w", err)
	}
	return c, nil
}

func (c *catalog) loadDocs(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT doc_id, source, notebook, notebook_name, path, doc_time FROM documents`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d catDoc
		var source string
		if err := rows.Scan(&d.id, &source, &d.notebook, &d.name, &d.path, &d.time); err != nil {
			return err
		}
		d.nbName, d.nbID = d.name, d.notebook
		d.notebook, d.name, d.path = strings.ToLower(d.notebook), strings.ToLower(d.name), strings.ToLower(d.path)
		d.rel = relPath(source, d.path, d.notebook, d.name)
		c.byID[d.id] = uint32(len(c.docs))
		c.docs = append(c.docs, d)
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

func (c *catalog) loadTags(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT doc_id, tag FROM doc_tags`)
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

func (c *catalog) loadChunks(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&n); err != nil {
		return err
	}
	c.rows, c.doc, c.lang = make([]int64, 0, n), make([]uint32, 0, n), make([]uint8, 0, n)
	codes := map[string]uint8{}
	rows, err := tx.QueryContext(ctx, `SELECT id, doc_id, lang FROM chunks`)
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
		lastDoc, ok := c.byID[string(docID)]
		if !ok {
			lastDoc = noDoc // held until its document's structure arrives
		}
		code, ok := codes[string(lang)]
		if !ok && len(c.langs) < 255 {
			code = uint8(len(c.langs))
			codes[string(lang)] = code
			c.langs = append(c.langs, string(lang))
		}
		c.rows, c.doc, c.lang = append(c.rows, id), append(c.doc, lastDoc), append(c.lang, code)
		c.max = max(c.max, id)
	}
	return rows.Err()
}

// allowed evaluates f: the documents first, then a pass over the chunks.
func (c *catalog) allowed(f *DocFilter) *ChunkSet {
	m := newDocMatcher(f)
	ok := make([]bool, len(c.docs))
	set := &ChunkSet{docs: map[string]struct{}{}, rows: make([]uint64, c.max/64+1)}
	for i := range c.docs {
		if m.match(&c.docs[i]) {
			ok[i] = true
			set.docs[c.docs[i].id] = struct{}{}
		}
	}
	var langs []string
	for _, l := range f.Langs {
		langs = append(langs, strings.ToLower(strings.TrimSpace(l)))
	}
	langOK := make([]bool, len(c.langs))
	for i, l := range c.langs {
		langOK[i] = langs == nil || slices.Contains(langs, strings.ToLower(l))
	}
	set.langs = langs
	for i, row := range c.rows {
		if d := c.doc[i]; d != noDoc && ok[d] && langOK[c.lang[i]] {
			set.rows[row>>6] |= 1 << (uint64(row) & 63)
			set.n++
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
