package store

import (
	"context"
	"fmt"
)

// This file serves exocortex check: the index's documents and chunks as
// they are, to compare with the sources, the chunk manifests and the vector
// store.

// DocRow is a document row of the index.
type DocRow struct {
	DocID, Source, Path, Title string
	Hash                       string
	Version                    int64
	ChunkIDs                   []string
}

// ChunkRow is a chunk row of the index with what goes with it: whether it
// has a full-text row, and the content hash and model of the vector the
// index recorded for it ("" when none).
type ChunkRow struct {
	ChunkID, DocID, Hash string
	Version              int64
	FTS                  bool
	VectorHash           string
	VectorModel          string
}

// CheckDocs returns every document row, in doc id order.
func (s *Store) CheckDocs(ctx context.Context) ([]DocRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc_id, source, path, title, hash, version, chunk_ids FROM documents ORDER BY doc_id`)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	defer rows.Close()
	var out []DocRow
	for rows.Next() {
		var d DocRow
		var ids string
		if err := rows.Scan(&d.DocID, &d.Source, &d.Path, &d.Title, &d.Hash, &d.Version, &ids); err != nil {
			return nil, fmt.Errorf("list documents: %w", err)
		}
		d.ChunkIDs = parseList(ids)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	return out, nil
}

// CheckChunks calls fn with every chunk row, in the order they were stored,
// paged so that a large index is never held in memory at once.
func (s *Store) CheckChunks(ctx context.Context, fn func(ChunkRow) error) error {
	const page = 2000
	last := int64(-1 << 63)
	for {
		rows, err := s.r.QueryContext(ctx, `
SELECT c.id, c.chunk_id, c.doc_id, c.hash, c.version,
	EXISTS (SELECT 1 FROM chunks_fts f WHERE f.rowid = c.id),
	coalesce(v.hash, ''), coalesce(v.model, '')
FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.chunk_id
WHERE c.id > ? ORDER BY c.id LIMIT ?`, last, page)
		if err != nil {
			return fmt.Errorf("list chunks: %w", err)
		}
		var batch []ChunkRow
		for rows.Next() {
			var c ChunkRow
			var id int64
			if err := rows.Scan(&id, &c.ChunkID, &c.DocID, &c.Hash, &c.Version, &c.FTS, &c.VectorHash, &c.VectorModel); err != nil {
				rows.Close()
				return fmt.Errorf("list chunks: %w", err)
			}
			last = id
			batch = append(batch, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list chunks: %w", err)
		}
		for _, c := range batch {
			if err := fn(c); err != nil {
				return err
			}
		}
		if len(batch) < page {
			return nil
		}
	}
}

// DeletedVersion is the version a document was deleted at, 0 when the
// index holds no deletion of it.
func (s *Store) DeletedVersion(ctx context.Context, docID string) (int64, error) {
	var v int64
	err := s.r.QueryRowContext(ctx, `SELECT coalesce((SELECT version FROM deleted_docs WHERE doc_id = ?), 0)`, docID).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("deleted version of %s: %w", docID, err)
	}
	return v, nil
}
