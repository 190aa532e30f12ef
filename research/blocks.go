package research

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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
			SectionPath: blockSection(h, id), BlockID: id, BlockIDs: []string{id}, Lang: h.Lang, Text: text,
			BlockSpans: []schemas.BlockSpan{{ID: id, Start: 0, End: len(text)}}}}
	}
	s.date(ctx, out)
	return out, nil
}

// date sets each block's Updated to its note's own time (store.DocTimes),
// for the report's sources; a failure leaves them undated.
func (s StoreBlocks) date(ctx context.Context, blocks map[string]schemas.Context) {
	var docs []string
	for _, c := range blocks {
		if !slices.Contains(docs, c.DocID) {
			docs = append(docs, c.DocID)
		}
	}
	times, err := s.Store.DocTimes(ctx, docs)
	if err != nil {
		return
	}
	for id, c := range blocks {
		if t, ok := times[c.DocID]; ok {
			c.Updated = t.UTC().Format(time.RFC3339)
			blocks[id] = c
		}
	}
}

// blockSection is the section path of a block: the chunk's (the headings in
// force at its first block), with the headings the chunk holds before the
// block in place of those after the document's title.
func blockSection(h store.Hit, id string) []string {
	type heading struct {
		level int
		text  string
	}
	var stack []heading
	found := false
	for _, sp := range h.BlockSpans {
		if sp.ID == id {
			found = true
			break
		}
		if sp.Start < 0 || sp.End > len(h.Text) || sp.Start >= sp.End {
			continue
		}
		t := strings.TrimSpace(h.Text[sp.Start:sp.End])
		level := len(t) - len(strings.TrimLeft(t, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(t[level:], " ") {
			continue
		}
		text := strings.TrimSpace(t[level:])
		if text == "" || text == h.Title {
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, heading{level, text})
	}
	if !found || len(stack) == 0 {
		return h.SectionPath
	}
	base := h.SectionPath
	k := -1
	for i, s := range base {
		if s == h.Title {
			k = i
		}
	}
	if k < 0 && len(base) > 0 {
		k = 0
	}
	path := slices.Clone(base[:k+1])
	for _, hd := range stack {
		path = append(path, hd.text)
	}
	return path
}
