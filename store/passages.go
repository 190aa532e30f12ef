package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Passages returns the chunks with the given ids, with their documents'
// titles and paths, in the order of ids; ids not in the index are left out
// (a vector store can briefly hold a chunk the index has just removed), and
// so are chunks whose document's structure has not arrived.
func (s *Store) Passages(ctx context.Context, ids []string) ([]Hit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	byID := make(map[string]Hit, len(ids))
	// SQLite allows 32766 variables; stay far below in slices.
	const slice = 500
	for lo := 0; lo < len(ids); lo += slice {
		part := ids[lo:min(lo+slice, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := s.r.QueryContext(ctx, `
SELECT c.chunk_id, c.doc_id, coalesce(d.title, ''), coalesce(d.path, ''), c.section_path, c.block_ids, c.lang, c.text,
	c.block_spans, coalesce(d.meta, ''), exists(SELECT 1 FROM report_docs r WHERE r.doc_id = c.doc_id)
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.chunk_id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("passages: %w", err)
		}
		for rows.Next() {
			var h Hit
			var section, blocks string
			var spans sql.NullString
			var meta string
			if err := rows.Scan(&h.ChunkID, &h.DocID, &h.Title, &h.Path, &section, &blocks, &h.Lang, &h.Text, &spans, &meta, &h.Report); err != nil {
				rows.Close()
				return nil, fmt.Errorf("passages: %w", err)
			}
			h.SectionPath, h.BlockIDs = parseList(section), parseList(blocks)
			h.BlockSpans = parseSpans(spans)
			h.IndexTitle = titleText(h.Title, parseMeta(meta))
			if len(h.BlockIDs) > 0 {
				h.BlockID = h.BlockIDs[0]
			}
			byID[h.ChunkID] = h
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("passages: %w", err)
		}
	}
	out := make([]Hit, 0, len(byID))
	for _, id := range ids {
		if h, ok := byID[id]; ok {
			out = append(out, h)
			delete(byID, id) // a repeated id comes out once
		}
	}
	return out, nil
}

// ReportDocs maps each document that is a saved research report (front
// matter "exocortex: report", SiYuan custom-exocortex-report; see
// schemas.IsReportMeta) to its number of indexed chunks. Retrieval leaves
// these documents out by default and asks each retriever for that many
// more candidates, so the results it keeps are still as many as asked.
func (s *Store) ReportDocs(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `
SELECT r.doc_id, (SELECT count(*) FROM chunks c WHERE c.doc_id = r.doc_id) FROM report_docs r`)
	if err != nil {
		return nil, fmt.Errorf("report documents: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("report documents: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("report documents: %w", err)
	}
	return out, nil
}

// ChunksOfBlocks maps block ids to the chunks that hold them (blocks the
// index does not know are left out).
func (s *Store) ChunksOfBlocks(ctx context.Context, blockIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(blockIDs))
	if len(blockIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(blockIDs))
	for i, id := range blockIDs {
		args[i] = id
	}
	rows, err := s.r.QueryContext(ctx, `SELECT block_id, chunk_id FROM blocks WHERE chunk_id != '' AND block_id IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(blockIDs)), ",")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("chunks of blocks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b, c string
		if err := rows.Scan(&b, &c); err != nil {
			return nil, fmt.Errorf("chunks of blocks: %w", err)
		}
		out[b] = c
	}
	return out, rows.Err()
}

// FirstChunksOfDocs maps document ids to each document's first chunk (the
// lowest ordinal); ids that are not documents with chunks are left out. A
// reference to a whole note (a Markdown wikilink, a SiYuan document ref)
// names a document id, not a block, and resolves through this.
func (s *Store) FirstChunksOfDocs(ctx context.Context, docIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(docIDs))
	const slice = 500
	for lo := 0; lo < len(docIDs); lo += slice {
		part := docIDs[lo:min(lo+slice, len(docIDs))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		// SQLite takes the bare chunk_id from the row holding min(ordinal).
		rows, err := s.r.QueryContext(ctx, `SELECT doc_id, chunk_id, min(ordinal) FROM chunks WHERE doc_id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+`) GROUP BY doc_id`, args...)
		if err != nil {
			return nil, fmt.Errorf("first chunks of docs: %w", err)
		}
		for rows.Next() {
			var d, c string
			var ord int
			if err := rows.Scan(&d, &c, &ord); err != nil {
				rows.Close()
				return nil, fmt.Errorf("first chunks of docs: %w", err)
			}
			out[d] = c
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("first chunks of docs: %w", err)
		}
	}
	return out, nil
}

// DocChunkIDs lists the chunk ids the index holds for a document.
func (s *Store) DocChunkIDs(ctx context.Context, docID string) ([]string, error) {
	q := s.r.QueryContext
	if tx, ok := ctx.Value(batchKey{}).(*sql.Tx); ok {
		q = tx.QueryContext
	}
	rows, err := q(ctx, `SELECT chunk_id FROM chunks WHERE doc_id = ? ORDER BY ordinal`, docID)
	if err != nil {
		return nil, fmt.Errorf("chunks of doc %s: %w", docID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("chunks of doc %s: %w", docID, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ChunkHash returns the content hash the index holds for a chunk, or
// ErrNotFound. Inside Batch it reads through the batch's transaction, so it
// sees chunks written earlier in the same batch.
func (s *Store) ChunkHash(ctx context.Context, chunkID string) (string, error) {
	row := s.r.QueryRowContext
	if tx, ok := ctx.Value(batchKey{}).(*sql.Tx); ok {
		row = tx.QueryRowContext
	}
	var h string
	err := row(ctx, `SELECT hash FROM chunks WHERE chunk_id = ?`, chunkID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("chunk %s: %w", chunkID, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("chunk %s: %w", chunkID, err)
	}
	return h, nil
}
