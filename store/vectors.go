package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/exocortex/exocortex/schemas"
)

// EmbedState says what to do with a vector computed for a chunk's content.
type EmbedState int

const (
	// EmbedCurrent: the chunk holds that content; the vector belongs in the store.
	EmbedCurrent EmbedState = iota
	// EmbedStale: the chunk has changed since; its new content gets its own vector.
	EmbedStale
	// EmbedMissing: the index does not hold the chunk (not yet, or no longer).
	EmbedMissing
)

// MarkEmbedded records that the vector store holds a vector of the chunk's
// content hash from model, if the index still holds that content; it
// returns what the caller should do with the vector. Inside Batch it joins
// the batch's transaction.
func (s *Store) MarkEmbedded(ctx context.Context, chunkID, hash, model string) (EmbedState, error) {
	state := EmbedMissing
	err := s.write(ctx, func(tx *sql.Tx) error {
		var have string
		err := tx.QueryRowContext(ctx, `SELECT hash FROM chunks WHERE chunk_id = ?`, chunkID).Scan(&have)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		case have != hash:
			state = EmbedStale
			return nil
		}
		state = EmbedCurrent
		_, err = tx.ExecContext(ctx, `INSERT INTO chunk_vectors (chunk_id, hash, model) VALUES (?, ?, ?)
ON CONFLICT (chunk_id) DO UPDATE SET hash = excluded.hash, model = excluded.model`, chunkID, hash, model)
		return err
	})
	if err != nil {
		return state, fmt.Errorf("mark chunk %s embedded: %w", chunkID, err)
	}
	return state, nil
}

// EmbedCounts returns how many chunks have a vector of their current content
// from model, and how many chunks there are.
func (s *Store) EmbedCounts(ctx context.Context, model string) (embedded, total int, err error) {
	err = s.r.QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM chunks c JOIN chunk_vectors v ON v.chunk_id = c.chunk_id AND v.hash = c.hash AND v.model = ?),
       (SELECT count(*) FROM chunks)`, model).Scan(&embedded, &total)
	if err != nil {
		return 0, 0, fmt.Errorf("embed counts: %w", err)
	}
	return embedded, total, nil
}

// Unembedded returns up to limit chunks, after the chunk id after, that
// have no vector of their current content from model, as the events that
// would have them embedded (the embed stage's input).
func (s *Store) Unembedded(ctx context.Context, model, after string, limit int) ([]*schemas.ChunkCreated, error) {
	rows, err := s.r.QueryContext(ctx, `
SELECT c.chunk_id, c.doc_id, c.version, c.ordinal, c.hash, c.text, c.section_path, c.lang, c.block_ids, c.refs, c.tokens
FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.chunk_id AND v.hash = c.hash AND v.model = ?
WHERE v.chunk_id IS NULL AND c.chunk_id > ?
ORDER BY c.chunk_id LIMIT ?`, model, after, limit)
	if err != nil {
		return nil, fmt.Errorf("unembedded chunks: %w", err)
	}
	defer rows.Close()
	var out []*schemas.ChunkCreated
	for rows.Next() {
		c := &schemas.ChunkCreated{}
		var section, blocks, refs string
		if err := rows.Scan(&c.ChunkID, &c.DocID, &c.DocVersion, &c.Ordinal, &c.Hash, &c.Text, &section, &c.Lang,
			&blocks, &refs, &c.Tokens); err != nil {
			return nil, fmt.Errorf("unembedded chunks: %w", err)
		}
		c.SectionPath, c.BlockIDs, c.Refs = parseList(section), parseList(blocks), parseList(refs)
		out = append(out, c)
	}
	return out, rows.Err()
}
