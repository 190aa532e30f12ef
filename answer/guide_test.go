package answer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// guideDir is the SiYuan user guide notebook in the shared eval data.
const guideDir = "../../shared/eval/siyuan-guide/20210808180117-6v0mkxr"

// guideContexts chunks a document of the SiYuan guide with the chunker and
// the files reader, as ingestion does, and turns its chunks into contexts
// with block spans: each block's text located in the chunk's text.
func guideContexts(t *testing.T, rel string) []schemas.Context {
	t.Helper()
	path := filepath.Join(guideDir, rel)
	content, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the SiYuan guide is not here (%v): it lives in shared/eval/siyuan-guide", err)
	}
	nb, err := notes.LoadNotebook(guideDir)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := notes.ParseSiYuan(path, content, nb)
	if err != nil {
		t.Fatal(err)
	}
	return docContexts(doc)
}

// docContexts chunks a parsed document and turns its chunks into contexts
// with block spans.
func docContexts(doc *schemas.DocChanged) []schemas.Context {
	text := map[string]string{}
	for _, b := range doc.Blocks {
		text[b.ID] = strings.TrimSpace(b.Text)
	}
	var out []schemas.Context
	for i, p := range chunking.Split(doc, chunking.DefaultConfig()) {
		c := schemas.Context{Passage: schemas.Passage{ChunkID: p.ID, DocID: doc.DocID, Title: doc.Title, SectionPath: p.SectionPath,
			BlockID: p.BlockIDs[0], BlockIDs: p.BlockIDs, Lang: p.Lang, Text: p.Text}, Rank: i + 1, Source: "rerank"}
		cursor := 0
		for _, id := range p.BlockIDs {
			bt := text[id]
			if bt == "" {
				continue
			}
			if k := strings.Index(p.Text[cursor:], bt); k >= 0 {
				c.BlockSpans = append(c.BlockSpans, schemas.BlockSpan{ID: id, Start: cursor + k, End: cursor + k + len(bt)})
				cursor += k + len(bt)
			}
		}
		out = append(out, c)
	}
	return out
}
