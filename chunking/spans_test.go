package chunking_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
)

// ownText is a block's rendered text without its Markdown marks: a list
// item's "- " (and indentation), a heading's "#"s.
func ownText(t string) string {
	t = strings.TrimLeft(t, " ")
	t = strings.TrimPrefix(t, "- ")
	if h := strings.TrimLeft(t, "#"); len(h) < len(t) && len(t)-len(h) <= 6 && strings.HasPrefix(h, " ") {
		t = h[1:]
	}
	return t
}

// checkSpans checks the block spans of a split:
//   - in every chunk, spans are in order, inside the text, and do not overlap;
//   - every span's text (marks aside) is part of its block's text;
//   - a block in one chunk only has a span there whose text is its whole text;
//   - every block with text that a chunk lists has a span in that chunk;
//   - every byte of a chunk's text that is not space is inside a span.
//
// It returns how many spans were of parts or overlaps (not a whole block).
func checkSpans(t *testing.T, name string, doc *schemas.DocChanged, pieces []chunking.Piece) (partial int) {
	t.Helper()
	text := map[string]string{}
	for _, b := range doc.Blocks {
		if tt := strings.TrimSpace(b.Text); tt != "" {
			text[b.ID] = tt
		}
	}
	chunksOf := map[string]int{}
	for _, p := range pieces {
		for _, id := range p.BlockIDs {
			chunksOf[id]++
		}
	}
	for _, p := range pieces {
		covered := make([]bool, len(p.Text))
		last := 0
		whole := map[string]bool{}
		for i, s := range p.BlockSpans {
			if s.Start < last || s.End <= s.Start || s.End > len(p.Text) {
				t.Errorf("%s chunk %d: span %d %+v is out of order or outside the text (%d bytes; previous ends at %d)",
					name, p.Ordinal, i, s, len(p.Text), last)
				continue
			}
			last = s.End
			for k := s.Start; k < s.End; k++ {
				covered[k] = true
			}
			bt, ok := text[s.ID]
			if !ok {
				t.Errorf("%s chunk %d: span %+v names a block without text", name, p.Ordinal, s)
				continue
			}
			got := ownText(p.Text[s.Start:s.End])
			switch {
			case got == bt:
				whole[s.ID] = true
			case strings.Contains(bt, got):
				partial++
			default:
				t.Errorf("%s chunk %d: span %+v holds %q, which is not in block %s's text %.200q",
					name, p.Ordinal, s, p.Text[s.Start:s.End], s.ID, bt)
			}
		}
		for _, id := range p.BlockIDs {
			if _, ok := text[id]; !ok {
				continue
			}
			if !slices.ContainsFunc(p.BlockSpans, func(s schemas.BlockSpan) bool { return s.ID == id }) {
				t.Errorf("%s chunk %d: block %s has text but no span", name, p.Ordinal, id)
			}
			if chunksOf[id] == 1 && !whole[id] {
				t.Errorf("%s chunk %d: block %s is whole in the chunk but no span holds its whole text", name, p.Ordinal, id)
			}
		}
		for k, r := range p.Text {
			if !covered[k] && !unicode.IsSpace(r) {
				t.Errorf("%s chunk %d: byte %d (%q) is in no span: ...%q...", name, p.Ordinal, k, r,
					p.Text[max(0, k-20):min(len(p.Text), k+20)])
				break
			}
		}
	}
	return partial
}

// builder makes fixtures block by block.
type builder struct {
	doc schemas.DocChanged
	n   int
}

func (b *builder) add(typ, parent string, level int, text string) string {
	b.n++
	id := fmt.Sprintf("b%03d", b.n)
	b.doc.Blocks = append(b.doc.Blocks, schemas.Block{ID: id, Type: typ, ParentID: parent, Level: level, Text: text})
	return id
}

func sentences(prefix string, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s sentence %d tells about blocks, spans and citations in a long note.", prefix, i)
	}
	return strings.Join(out, " ")
}

func TestBlockSpansHoldEachBlocksText(t *testing.T) {
	cfg := chunking.Config{MinTokens: 60, MaxTokens: 100, OverlapTokens: 15}

	// Lists nested in lists, a quote holding paragraphs, a container with
	// text of its own and children, an oversize paragraph cut into parts,
	// and sections long enough to need overlaps.
	b := &builder{doc: schemas.DocChanged{DocID: "doc", Title: "Spans", Version: 1, Hash: "h"}}
	b.add(schemas.BlockHeading, "", 1, "Spans")
	b.add(schemas.BlockParagraph, "", 0, sentences("Intro", 3))
	b.add(schemas.BlockHeading, "", 2, "Lists")
	l := b.add(schemas.BlockList, "", 0, "")
	for i := range 6 {
		li := b.add(schemas.BlockListItem, l, 0, "")
		b.add(schemas.BlockParagraph, li, 0, fmt.Sprintf("Item %d is a short item of the list.", i))
		if i%2 == 1 {
			sub := b.add(schemas.BlockList, li, 0, "")
			for j := range 2 {
				sli := b.add(schemas.BlockListItem, sub, 0, "")
				b.add(schemas.BlockParagraph, sli, 0, fmt.Sprintf("Nested %d.%d under the item.", i, j))
			}
		}
	}
	q := b.add(schemas.BlockQuote, "", 0, "")
	b.add(schemas.BlockParagraph, q, 0, sentences("Quoted", 2))
	b.add(schemas.BlockParagraph, q, 0, sentences("Quoted again", 2))
	b.add(schemas.BlockHeading, "", 2, "Long")
	b.add(schemas.BlockParagraph, "", 0, sentences("Oversize", 30))
	for i := range 8 {
		b.add(schemas.BlockParagraph, "", 0, sentences(fmt.Sprintf("Paragraph %d", i), 2))
	}
	b.add(schemas.BlockHeading, "", 2, "Русский раздел")
	for i := range 6 {
		b.add(schemas.BlockParagraph, "", 0, fmt.Sprintf("Абзац %d рассказывает о блоках, фрагментах и цитатах в длинной заметке. Ещё одно предложение о ссылках.", i))
	}

	pieces := chunking.Split(&b.doc, cfg)
	if len(pieces) < 5 {
		t.Fatalf("the fixture gives only %d chunks", len(pieces))
	}
	partial := checkSpans(t, "synthetic", &b.doc, pieces)
	if partial == 0 {
		t.Error("no span is a part or an overlap: the fixture does not test them")
	}
	// The oversize paragraph is in several chunks, one span each with its id.
	split := 0
	for _, p := range pieces {
		for _, s := range p.BlockSpans {
			if s.ID == "b028" || strings.HasPrefix(p.Text[s.Start:s.End], "Oversize") {
				split++
				break
			}
		}
	}
	if split < 2 {
		t.Errorf("the oversize paragraph has spans in %d chunks, want several", split)
	}
}

func TestBlockSpansOfMarkdownAndSiYuanFiles(t *testing.T) {
	cfg := chunking.DefaultConfig()
	small := chunking.Config{MinTokens: 40, MaxTokens: 80, OverlapTokens: 12}
	var docs []*schemas.DocChanged
	vault := filepath.Join("..", "notes", "testdata", "vault")
	err := filepath.WalkDir(vault, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".md" || strings.Contains(path, "broken") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := notes.ParseMarkdown(path, data, vault)
		if err != nil {
			return err
		}
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	guide := filepath.Join("..", "..", "shared", "eval", "siyuan-guide", "20210808180117-6v0mkxr")
	if _, err := os.Stat(guide); err != nil {
		t.Logf("no SiYuan guide at %s (%v): only the Markdown vault", guide, err)
	} else {
		nb, err := notes.LoadNotebook(guide)
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(guide, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".sy" {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			doc, err := notes.ParseSiYuan(path, data, nb)
			if err != nil {
				return err
			}
			docs = append(docs, doc)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	chunks, spans, partial := 0, 0, 0
	for _, doc := range docs {
		for _, c := range []chunking.Config{cfg, small} {
			pieces := chunking.Split(doc, c)
			partial += checkSpans(t, fmt.Sprintf("%s (max %d)", doc.Path, c.MaxTokens), doc, pieces)
			chunks += len(pieces)
			for _, p := range pieces {
				spans += len(p.BlockSpans)
			}
		}
	}
	t.Logf("%d documents, %d chunks, %d spans (%d parts or overlaps)", len(docs), chunks, spans, partial)
	if len(docs) < 3 || partial == 0 {
		t.Errorf("%d documents and %d partial spans: the fixtures test too little", len(docs), partial)
	}
}
