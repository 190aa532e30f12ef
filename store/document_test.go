package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// indexDoc cuts doc with the real chunker (small chunks, so there are
// several, with overlap) and writes its chunks and structure as the index
// stage does. It returns the pieces.
func indexDoc(t *testing.T, s *store.Store, doc *schemas.DocChanged, cfg chunking.Config) []chunking.Piece {
	t.Helper()
	ctx := context.Background()
	pieces := chunking.Split(doc, cfg)
	ds := &schemas.DocStructure{DocID: doc.DocID, Source: doc.Source, Path: doc.Path, Notebook: doc.Notebook,
		Title: doc.Title, TitlePath: doc.TitlePath, Hash: doc.Hash, Version: doc.Version}
	chunkOf := map[string]string{}
	for _, p := range pieces {
		ds.ChunkIDs = append(ds.ChunkIDs, p.ID)
		for _, id := range p.BlockIDs {
			if _, ok := chunkOf[id]; !ok {
				chunkOf[id] = p.ID
			}
		}
		if _, err := s.UpsertChunk(ctx, &schemas.ChunkCreated{ChunkID: p.ID, DocID: doc.DocID, DocVersion: doc.Version,
			Ordinal: p.Ordinal, Hash: p.Hash, Text: p.Text, SectionPath: p.SectionPath, Lang: p.Lang,
			BlockIDs: p.BlockIDs, BlockSpans: p.BlockSpans, Tokens: p.Tokens}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range doc.Blocks {
		ds.Blocks = append(ds.Blocks, schemas.BlockNode{ID: b.ID, Type: b.Type, ParentID: b.ParentID, ChunkID: chunkOf[b.ID]})
	}
	if _, err := s.ApplyStructure(ctx, ds); err != nil {
		t.Fatal(err)
	}
	return pieces
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func hashText(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// long is a paragraph several chunks long, of whole sentences.
func long(sentence string, n int) string {
	return strings.TrimSpace(strings.Repeat(sentence+" ", n))
}

func TestADocumentComesBackWithEveryBlockOnceInOrderWithItsOwnText(t *testing.T) {
	cases := []struct {
		name  string
		doc   *schemas.DocChanged
		texts map[string]string // block id -> wanted text ("" for a container)
		// sections: block id -> wanted section path
		sections map[string]string
	}{
		{
			name: "an English Markdown note with a heading, a nested list and a paragraph split across chunks",
			doc: &schemas.DocChanged{DocID: "md-1", Source: schemas.SourceMarkdown, Path: "/notes/birds.md", Title: "Birds", Version: 1,
				Blocks: []schemas.Block{
					{ID: "h1", Type: schemas.BlockHeading, Level: 1, Text: "Birds"},
					{ID: "p1", Type: schemas.BlockParagraph, Text: "Ravens and crows use tools to get food."},
					{ID: "h2", Type: schemas.BlockHeading, Level: 2, Text: "Songbirds"},
					{ID: "l1", Type: schemas.BlockList},
					{ID: "i1", Type: schemas.BlockListItem, ParentID: "l1", Text: "Robins sing at dawn."},
					{ID: "l2", Type: schemas.BlockList, ParentID: "i1"},
					{ID: "i2", Type: schemas.BlockListItem, ParentID: "l2", Text: "Blackbirds sing at dusk."},
					{ID: "p2", Type: schemas.BlockParagraph, Text: long("Wrens build several nests before the female picks one of them.", 12)},
					{ID: "p3", Type: schemas.BlockParagraph, Text: "Owls hunt at night."},
				}},
			texts: map[string]string{"h1": "# Birds", "p1": "Ravens and crows use tools to get food.", "h2": "## Songbirds", "l1": "",
				"i1": "- Robins sing at dawn.", "l2": "", "i2": "- Blackbirds sing at dusk.",
				"p2": long("Wrens build several nests before the female picks one of them.", 12), "p3": "Owls hunt at night."},
			sections: map[string]string{"h1": "Birds", "p1": "Birds", "h2": "Birds", "i2": "Birds > Songbirds", "p3": "Birds > Songbirds"},
		},
		{
			name: "a Russian SiYuan note under a parent document, its list items' text in paragraphs",
			doc: &schemas.DocChanged{DocID: "20260101120000-doc0001", Source: schemas.SourceSiYuan, Path: "Заметки/Птицы/Вороны",
				Notebook: "20260101120000-box0001", Title: "Вороны", TitlePath: []string{"Птицы", "Вороны"}, Version: 1,
				Blocks: []schemas.Block{
					{ID: "20260101120000-par0001", Type: schemas.BlockParagraph, Text: long("Вороны запоминают лица людей на долгие годы.", 10)},
					{ID: "20260101120000-hea0001", Type: schemas.BlockHeading, Level: 2, Text: "Орудия"},
					{ID: "20260101120000-lst0001", Type: schemas.BlockList},
					{ID: "20260101120000-itm0001", Type: schemas.BlockListItem, ParentID: "20260101120000-lst0001"},
					{ID: "20260101120000-par0002", Type: schemas.BlockParagraph, ParentID: "20260101120000-itm0001", Text: "Гнут проволоку в крючки."},
					{ID: "20260101120000-hea0002", Type: schemas.BlockHeading, Level: 3, Text: "Память"},
					{ID: "20260101120000-par0003", Type: schemas.BlockParagraph, Text: "Узнают обидчиков."},
				}},
			texts: map[string]string{"20260101120000-par0001": long("Вороны запоминают лица людей на долгие годы.", 10),
				"20260101120000-hea0001": "## Орудия", "20260101120000-lst0001": "", "20260101120000-itm0001": "",
				"20260101120000-par0002": "- Гнут проволоку в крючки.", "20260101120000-hea0002": "### Память",
				"20260101120000-par0003": "Узнают обидчиков."},
			sections: map[string]string{"20260101120000-par0001": "Птицы > Вороны", "20260101120000-par0002": "Птицы > Вороны > Орудия",
				"20260101120000-par0003": "Птицы > Вороны > Орудия > Память"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t)
			c.doc.Hash = hashText(c.name)
			pieces := indexDoc(t, s, c.doc, chunking.Config{MinTokens: 20, MaxTokens: 40, OverlapTokens: 10})
			// The chunker did what the test is about: several chunks, one
			// starting with an overlap, a block split across two.
			overlapped, split := false, false
			seen := map[string]bool{}
			for _, p := range pieces {
				spans := map[string]int{}
				for _, sp := range p.BlockSpans {
					spans[sp.ID]++
					// A span of a block the chunk does not cover, or a
					// second span of a split block: the overlap.
					if !slices.Contains(p.BlockIDs, sp.ID) || spans[sp.ID] > 1 {
						overlapped = true
					}
				}
				for _, id := range p.BlockIDs {
					split = split || seen[id]
					seen[id] = true
				}
			}
			if len(pieces) < 3 || !overlapped || !split {
				t.Fatalf("the chunker cut %d chunks (overlap %v, split block %v): the test needs several, with both", len(pieces), overlapped, split)
			}

			d, err := s.Document(context.Background(), c.doc.DocID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Title != c.doc.Title || d.Source != c.doc.Source || d.Path != c.doc.Path || d.Notebook != c.doc.Notebook {
				t.Errorf("document %+v, want the title, source, path and notebook it was indexed with", d)
			}
			var ids []string
			for _, b := range d.Blocks {
				ids = append(ids, b.BlockID)
				if want := c.texts[b.BlockID]; b.Text != want {
					t.Errorf("block %s text %q, want %q", b.BlockID, b.Text, want)
				}
				if want, ok := c.sections[b.BlockID]; ok && strings.Join(b.SectionPath, " > ") != want {
					t.Errorf("block %s section %q, want %q", b.BlockID, strings.Join(b.SectionPath, " > "), want)
				}
			}
			var want []string
			for _, b := range c.doc.Blocks {
				want = append(want, b.ID)
			}
			if !slices.Equal(ids, want) {
				t.Errorf("blocks %v, want %v (the document's order)", ids, want)
			}
			for _, b := range d.Blocks {
				if i := slices.IndexFunc(c.doc.Blocks, func(x schemas.Block) bool { return x.ID == b.BlockID }); i >= 0 &&
					(b.Type != c.doc.Blocks[i].Type || b.ParentID != c.doc.Blocks[i].ParentID) {
					t.Errorf("block %s type %q parent %q, want %q %q", b.BlockID, b.Type, b.ParentID, c.doc.Blocks[i].Type, c.doc.Blocks[i].ParentID)
				}
			}
		})
	}
}

func TestAChunkWithoutBlockSpansGivesItsTextToItsFirstBlock(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	text := "Backups run every night. Restore puts them back."
	if _, err := s.UpsertChunk(ctx, &schemas.ChunkCreated{ChunkID: "d1:c1", DocID: "d1", DocVersion: 1, Hash: hashText(text),
		Text: text, BlockIDs: []string{"b1", "b2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyStructure(ctx, &schemas.DocStructure{DocID: "d1", Title: "Ops", Hash: "h", Version: 1, ChunkIDs: []string{"d1:c1"},
		Blocks: []schemas.BlockNode{{ID: "b1", Type: schemas.BlockParagraph, ChunkID: "d1:c1"}, {ID: "b2", Type: schemas.BlockParagraph, ChunkID: "d1:c1"}}}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Document(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Blocks) != 2 || d.Blocks[0].Text != text || d.Blocks[1].Text != "" {
		t.Errorf("blocks %+v: want b1 with the chunk's text, b2 listed without", d.Blocks)
	}
}

func TestADocumentTheIndexDoesNotHoldIsNotFound(t *testing.T) {
	s := openStore(t)
	for _, id := range []string{"md-unknown", "20260101120000-nothere"} {
		if _, err := s.Document(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Document(%s) = %v, want ErrNotFound", id, err)
		}
	}
}
