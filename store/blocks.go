package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// BlockInfo is an indexed block: its document, type, the chunk that holds
// it and the block's own text (the whole chunk's text when the chunk was
// indexed before block spans existed).
type BlockInfo struct {
	BlockID     string
	DocID       string
	Type        string
	ParentID    string
	ChunkID     string
	Title       string
	Path        string
	SectionPath []string
	Lang        string
	Text        string
}

// Block returns the block with id blockID, or ErrNotFound. A document id is
// a block too (the document's root): its text is its first chunk's.
func (s *Store) Block(ctx context.Context, blockID string) (*BlockInfo, error) {
	b := BlockInfo{BlockID: blockID}
	err := s.r.QueryRowContext(ctx, `
SELECT b.doc_id, b.type, b.parent_id, b.chunk_id, coalesce(d.title, ''), coalesce(d.path, '')
FROM blocks b LEFT JOIN documents d ON d.doc_id = b.doc_id WHERE b.block_id = ?`, blockID).
		Scan(&b.DocID, &b.Type, &b.ParentID, &b.ChunkID, &b.Title, &b.Path)
	if errors.Is(err, sql.ErrNoRows) {
		// A document's root: no blocks row, a documents row.
		err = s.r.QueryRowContext(ctx, `SELECT doc_id, title, path FROM documents WHERE doc_id = ?`, blockID).
			Scan(&b.DocID, &b.Title, &b.Path)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("block %s: %w", blockID, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", blockID, err)
		}
		b.Type = "d"
		ids, err := s.FirstChunksOfDocs(ctx, []string{blockID})
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", blockID, err)
		}
		b.ChunkID = ids[blockID]
	} else if err != nil {
		return nil, fmt.Errorf("block %s: %w", blockID, err)
	}
	if b.ChunkID == "" {
		return &b, nil
	}
	c, err := s.Chunk(ctx, b.ChunkID)
	if errors.Is(err, ErrNotFound) {
		return &b, nil // the chunk is being rewritten
	}
	if err != nil {
		return nil, fmt.Errorf("block %s: %w", blockID, err)
	}
	b.SectionPath, b.Lang, b.Text = c.SectionPath, c.Lang, c.Text
	for _, sp := range c.BlockSpans {
		if sp.ID == blockID && sp.Start >= 0 && sp.End <= len(c.Text) && sp.Start < sp.End {
			b.Text = c.Text[sp.Start:sp.End]
			b.SectionPath = sectionAt(c.SectionPath, c.Text[:sp.Start])
			break
		}
	}
	return &b, nil
}

var headingLine = regexp.MustCompile(`^(#{1,6})[ \t]+(.+?)[ \t#]*$`)

// sectionAt is the section path at the end of before (a chunk's text up to
// a block), starting from the chunk's own path: each Markdown heading of
// level n keeps the first n-1 entries and adds its title.
func sectionAt(path []string, before string) []string {
	out := append([]string(nil), path...)
	for _, line := range strings.Split(before, "\n") {
		m := headingLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		out = append(out[:min(len(out), len(m[1])-1)], m[2])
	}
	return out
}
