package research

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// StoreBlocks reads blocks' text from the index: each block's own text cut
// from its chunk at the chunk's block spans (the whole chunk for a chunk
// indexed before block spans).
type StoreBlocks struct {
	Store *store.Store
}

// Blocks returns a context holding each known block alone.
func (s StoreBlocks) Blocks(ctx context.Context, ids []string) (map[string]schemas.Context, error) {
	chunkOf, err := s.Store.ChunksOfBlocks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	var chunks []string
	for _, c := range chunkOf {
		if !slices.Contains(chunks, c) {
			chunks = append(chunks, c)
		}
	}
	hits, err := s.Store.Passages(ctx, chunks)
	if err != nil {
		return nil, fmt.Errorf("blocks: %w", err)
	}
	byChunk := map[string]store.Hit{}
	for _, h := range hits {
		byChunk[h.ChunkID] = h
	}
	out := map[string]schemas.Context{}
	for _, id := range ids {
		h, ok := byChunk[chunkOf[id]]
		if !ok {
			continue
		}
		var parts []string
		for _, sp := range h.BlockSpans {
			if sp.ID == id && sp.Start >= 0 && sp.End <= len(h.Text) && sp.Start < sp.End {
				parts = append(parts, h.Text[sp.Start:sp.End])
			}
		}
		text := strings.Join(parts, "\n")
		if len(h.BlockSpans) == 0 {
			text = h.Text
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		out[id] = schemas.Context{Passage: schemas.Passage{ChunkID: h.ChunkID, DocID: h.DocID, Title: h.Title, Path: h.Path,
			SectionPath: h.SectionPath, BlockID: id, BlockIDs: []string{id}, Lang: h.Lang, Text: text,
			BlockSpans: []schemas.BlockSpan{{ID: id, Start: 0, End: len(text)}}}}
	}
	return out, nil
}
