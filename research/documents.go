// Package research holds what the research stages need beyond the bus: the
// plan's prompt and parser, the documents a task reads, the fact step's
// prompt and parser, and the accumulation of verified facts.
package research

import (
	"strings"

	"github.com/exocortex/exocortex/schemas"
)

// Document is one note a task reads: its chunks (contexts) in order.
type Document struct {
	DocID string `json:"doc_id"`
	Title string `json:"title,omitempty"`
	Path  string `json:"path,omitempty"`
	// Updated is the note's own time (RFC 3339; store.DocTimes: its front
	// matter's date, else its source's update time), empty when unknown:
	// the facts read from it carry it (schemas.Fact.Updated).
	Updated  string            `json:"updated,omitempty"`
	Contexts []schemas.Context `json:"contexts"`
}

// GroupDocuments groups retrieved contexts by document, the documents in
// the order of their best context, at most max of them (0: no bound); a
// document's contexts keep their retrieved order.
func GroupDocuments(contexts []schemas.Context, max int) []Document {
	var out []Document
	at := map[string]int{}
	for _, c := range contexts {
		if c.DocID == "" {
			continue
		}
		i, ok := at[c.DocID]
		if !ok {
			if max > 0 && len(out) >= max {
				continue
			}
			i = len(out)
			at[c.DocID] = i
			out = append(out, Document{DocID: c.DocID, Title: c.Title, Path: c.Path})
		}
		dup := false
		for _, have := range out[i].Contexts {
			if have.ChunkID == c.ChunkID {
				dup = true
				break
			}
		}
		if !dup {
			out[i].Contexts = append(out[i].Contexts, c)
		}
	}
	return out
}

// Blocks are the document's blocks, each as its own context (BlockID and
// Text: the block's own text; the chunk's title, section path and path), in
// order of first appearance. A block split across chunks is joined; a chunk
// without block spans (indexed before them) is one block: its first.
func (d Document) Blocks() []schemas.Context {
	var out []schemas.Context
	at := map[string]int{}
	add := func(c schemas.Context, id, text string) {
		text = strings.TrimSpace(text)
		if id == "" || text == "" {
			return
		}
		if i, ok := at[id]; ok {
			if !strings.Contains(out[i].Text, text) {
				out[i].Text += " " + text
			}
			return
		}
		b := schemas.Context{Passage: schemas.Passage{ChunkID: c.ChunkID, DocID: c.DocID, Title: c.Title, Path: c.Path,
			SectionPath: c.SectionPath, BlockID: id, BlockIDs: []string{id}, Lang: c.Lang, Text: text}, Rank: c.Rank, Source: c.Source}
		at[id] = len(out)
		out = append(out, b)
	}
	for _, c := range d.Contexts {
		spans := 0
		for _, s := range c.BlockSpans {
			if s.ID != "" && s.Start >= 0 && s.Start < s.End && s.End <= len(c.Text) {
				add(c, s.ID, c.Text[s.Start:s.End])
				spans++
			}
		}
		if spans == 0 {
			id := c.BlockID
			if id == "" && len(c.BlockIDs) > 0 {
				id = c.BlockIDs[0]
			}
			add(c, id, c.Text)
		}
	}
	return out
}
