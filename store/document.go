package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// Document is an indexed document as a reader sees it: its metadata and all
// its blocks in document order, each with its own text.
type Document struct {
	DocID    string
	Source   string // schemas.SourceMarkdown or schemas.SourceSiYuan
	Path     string // the Markdown file, or SiYuan's notebook/hpath
	Notebook string
	Title    string
	// TitlePath is the chain of titles from the top of the notebook down to
	// the document (SiYuan); a Markdown note's is its title.
	TitlePath   []string
	ParentDocID string
	Version     int64
	UpdatedAt   string // RFC 3339, when the index wrote the document
	Blocks      []DocBlock
}

// DocBlock is one block of a Document.
type DocBlock struct {
	BlockID  string
	Type     string // a schemas.Block* type; "" for a block the structure does not list
	ParentID string
	ChunkID  string
	// Text is the block's own text as its chunks hold it: Markdown-ish, a
	// heading as "## Heading", a list item's first text after its "- "
	// marker (indented by depth). A block split across chunks is joined; a
	// container without text of its own has none.
	Text string
	// Lang is the language of the chunk holding the block ("" unknown).
	Lang string
	// SectionPath is the document's title path and the headings in force
	// at the block (a heading's own title is not in its path).
	SectionPath []string
}

// Document returns the document docID with its blocks in order, or
// ErrNotFound when the index has no such document (never indexed, deleted,
// or its structure has not arrived yet).
//
// The blocks are those of the document's structure, in its order; their
// text is cut from the document's current chunks at the chunks' block
// spans. The overlap a chunk repeats from the one before is left out (see
// overlapEnd). A chunk indexed before block spans existed gives its
// whole text to its first block.
func (s *Store) Document(ctx context.Context, docID string) (*Document, error) {
	d, chunkIDs, err := s.documentRow(ctx, docID)
	if err != nil {
		return nil, err
	}
	at, err := s.docBlocks(ctx, d)
	if err != nil {
		return nil, err
	}
	chunks, err := s.docChunks(ctx, docID, chunkIDs)
	if err != nil {
		return nil, err
	}
	t := blockTexts{at: at, parts: map[string][]string{}, langs: map[string]string{}}
	t.collect(chunks)
	for _, id := range t.extra {
		at[id] = len(d.Blocks)
		d.Blocks = append(d.Blocks, DocBlock{BlockID: id})
	}
	for i := range d.Blocks {
		b := &d.Blocks[i]
		sep := " " // the parts of a block split at sentences
		switch b.Type {
		case schemas.BlockCode, schemas.BlockTable, schemas.BlockMath, schemas.BlockHTML:
			sep = "\n"
		}
		b.Text, b.Lang = strings.Join(t.parts[b.BlockID], sep), t.langs[b.BlockID]
	}
	d.sectionPaths()
	return d, nil
}

// documentRow reads a document's row: the document without its blocks, and
// the ids of its chunks.
func (s *Store) documentRow(ctx context.Context, docID string) (*Document, []string, error) {
	d := Document{DocID: docID}
	var titlePath, chunkIDs string
	err := s.r.QueryRowContext(ctx, `
SELECT source, path, notebook, title, title_path, parent_doc_id, version, updated_at, chunk_ids
FROM documents WHERE doc_id = ?`, docID).Scan(&d.Source, &d.Path, &d.Notebook, &d.Title, &titlePath,
		&d.ParentDocID, &d.Version, &d.UpdatedAt, &chunkIDs)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("document %s: %w", docID, ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("document %s: %w", docID, err)
	}
	d.TitlePath = parseList(titlePath)
	return &d, parseList(chunkIDs), nil
}

// docBlocks reads d's blocks, in order and without text, into d.Blocks and
// returns each block's index there by id.
func (s *Store) docBlocks(ctx context.Context, d *Document) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `
SELECT block_id, type, parent_id, chunk_id FROM blocks WHERE doc_id = ? ORDER BY ordinal, block_id`, d.DocID)
	if err != nil {
		return nil, fmt.Errorf("blocks of document %s: %w", d.DocID, err)
	}
	defer rows.Close()
	at := map[string]int{}
	for rows.Next() {
		var b DocBlock
		if err := rows.Scan(&b.BlockID, &b.Type, &b.ParentID, &b.ChunkID); err != nil {
			return nil, fmt.Errorf("blocks of document %s: %w", d.DocID, err)
		}
		at[b.BlockID] = len(d.Blocks)
		d.Blocks = append(d.Blocks, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("blocks of document %s: %w", d.DocID, err)
	}
	return at, nil
}

// blockTexts gathers each block's text from a document's chunks.
type blockTexts struct {
	at    map[string]int      // the blocks the structure lists, by id
	parts map[string][]string // each block's pieces of text, in order
	langs map[string]string   // each block's language (its first chunk's)
	extra []string            // blocks the chunks hold that the structure does not list
}

// collect adds the text of each chunk's blocks, leaving out what a chunk
// repeats of the one before it (the overlap).
func (t *blockTexts) collect(chunks []Chunk) {
	for k := range chunks {
		c := &chunks[k]
		var prev *Chunk
		if k > 0 && chunks[k-1].Ordinal == c.Ordinal-1 {
			prev = &chunks[k-1]
		}
		from := overlapEnd(prev, c)
		n := 0
		for _, sp := range c.BlockSpans {
			if sp.ID != "" && sp.Start >= 0 && sp.Start < sp.End && sp.End <= len(c.Text) {
				n++
				if sp.End > from {
					t.add(sp.ID, c.Text[sp.Start:sp.End], c.Lang)
				}
			}
		}
		if n == 0 && len(c.BlockIDs) > 0 {
			t.add(c.BlockIDs[0], c.Text, c.Lang)
		}
	}
}

// add appends a piece of block id's text in language lang.
func (t *blockTexts) add(id, text, lang string) {
	text = strings.TrimSpace(text)
	if id == "" || text == "" {
		return
	}
	if _, ok := t.at[id]; !ok && len(t.parts[id]) == 0 {
		t.extra = append(t.extra, id)
	}
	t.parts[id] = append(t.parts[id], text)
	if t.langs[id] == "" {
		t.langs[id] = lang
	}
}

// docChunks reads the document's chunks in order: those its structure lists
// (when it lists any), else all the index holds for it.
func (s *Store) docChunks(ctx context.Context, docID string, listed []string) ([]Chunk, error) {
	rows, err := s.r.QueryContext(ctx, `
SELECT chunk_id, ordinal, text, lang, block_ids, block_spans FROM chunks WHERE doc_id = ? ORDER BY ordinal, chunk_id`, docID)
	if err != nil {
		return nil, fmt.Errorf("chunks of document %s: %w", docID, err)
	}
	defer rows.Close()
	var out []Chunk
	for rows.Next() {
		c := Chunk{DocID: docID}
		var blocks string
		var spans sql.NullString
		if err := rows.Scan(&c.ChunkID, &c.Ordinal, &c.Text, &c.Lang, &blocks, &spans); err != nil {
			return nil, fmt.Errorf("chunks of document %s: %w", docID, err)
		}
		if len(listed) > 0 && !slices.Contains(listed, c.ChunkID) {
			continue // cut from a newer version whose structure has not arrived
		}
		c.BlockIDs, c.BlockSpans = parseList(blocks), parseSpans(spans)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("chunks of document %s: %w", docID, err)
	}
	return out, nil
}

// overlapEnd is where the overlap that c repeats from prev (the chunk
// before it) ends in c's text; 0 when c has none. The chunk stage starts a
// chunk that continues a section with the tail of the previous chunk: the
// previous chunk's last spans, the first one clipped, then a separator
// ("\n\n", or " " when the same block goes on). The overlap is the
// shortest run of c's first spans that is such a tail, offsets and all.
func overlapEnd(prev, c *Chunk) int {
	if prev == nil || len(prev.BlockSpans) == 0 {
		return 0
	}
	for j, last := range c.BlockSpans {
		m := j + 1
		end := last.End
		if m > len(prev.BlockSpans) || end <= 0 || end > len(c.Text) || !strings.HasSuffix(prev.Text, c.Text[:end]) {
			continue
		}
		if rest := c.Text[end:]; !strings.HasPrefix(rest, "\n\n") && !strings.HasPrefix(rest, " ") {
			continue
		}
		shift := len(prev.Text) - end
		tail := prev.BlockSpans[len(prev.BlockSpans)-m:]
		ok := true
		for i, a := range c.BlockSpans[:m] {
			b := tail[i]
			if a.ID != b.ID || a.End+shift != b.End || a.Start+shift < b.Start || (i > 0 && a.Start+shift != b.Start) {
				ok = false
				break
			}
		}
		if ok {
			return end
		}
	}
	return 0
}

// sectionPaths sets each block's section path: the title path (or the
// title), then the headings above it. A first heading that reads as the
// title (a Markdown note's "# Title") is not repeated, as the chunk stage
// does.
func (d *Document) sectionPaths() {
	base := d.TitlePath
	if len(base) == 0 && d.Title != "" {
		base = []string{d.Title}
	}
	type heading struct {
		level int
		text  string
	}
	var stack []heading
	for i := range d.Blocks {
		b := &d.Blocks[i]
		path := slices.Clone(base)
		for _, h := range stack {
			path = append(path, h.text)
		}
		b.SectionPath = path
		if b.Type != schemas.BlockHeading && b.Type != "" {
			continue
		}
		m := headingLine.FindStringSubmatch(strings.TrimSpace(b.Text))
		if m == nil || strings.Contains(b.Text, "\n") {
			continue
		}
		level, text := len(m[1]), m[2]
		if len(stack) == 0 && len(base) > 0 && strings.EqualFold(strings.TrimSpace(text), strings.TrimSpace(base[len(base)-1])) {
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, heading{level, text})
	}
}
