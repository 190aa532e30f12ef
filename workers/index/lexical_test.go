package index

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
)

// On Qdrant the index stage writes each chunk's lexical vector and passage
// with its dense vector, holds back a vector whose document has no
// structure yet, and rewrites them when the document's title changes.
func TestOnQdrantTheIndexKeepsLexicalVectorsAndPassagesCurrent(t *testing.T) {
	ctx := context.Background()
	h, srv, vs, search := indexOnQdrant(t)

	c1, c2 := chunk("c1", "ravens are clever birds"), chunk("c2", "crows use tools")
	handle(t, h, msg(t, c1))
	handle(t, h, msg(t, c2))
	embed := &schemas.EmbedDone{Model: "m", Dim: 4, Items: []schemas.EmbeddedChunk{
		{ChunkID: "c1", DocID: "d1", Hash: c1.Hash, Lang: "en", Vector: []float32{1, 0, 0, 0}},
		{ChunkID: "c2", DocID: "d1", Hash: c2.Hash, Lang: "en", Vector: []float32{0, 1, 0, 0}}}}
	// The document's structure has not arrived: no passage to store yet,
	// the vectors wait.
	if _, err := h.Handle(ctx, msg(t, embed)); err == nil || !strings.Contains(err.Error(), "no structure yet") {
		t.Fatalf("vectors before the document's structure: %v, want a retry", err)
	}
	if n := srv.PointCount(vectors.DefaultCollection); n != 0 {
		t.Fatalf("%d points stored before the structure, want 0", n)
	}
	structure := func(version int64, title string) *schemas.DocStructure {
		return &schemas.DocStructure{DocID: "d1", Title: title, Path: "birds.md", Hash: title, Version: version,
			ChunkIDs: []string{"c1", "c2"}, Blocks: []schemas.BlockNode{{ID: "b-c1", Type: schemas.BlockParagraph},
				{ID: "b-c2", Type: schemas.BlockParagraph}}}
	}
	handle(t, h, msg(t, structure(1, "Corvids")))
	handle(t, h, msg(t, embed))
	hits := search("clever ravens")
	if len(hits) != 1 || hits[0].ChunkID != "c1" || hits[0].Title != "Corvids" || hits[0].Text != c1.Text || hits[0].BlockID != "b-c1" {
		t.Fatalf("clever ravens on Qdrant: %+v", hits)
	}
	if hits := search("corvid"); len(hits) != 2 {
		t.Fatalf("the title's word (another form) finds %d chunks, want both", len(hits))
	}

	// A new title, same content: nothing to embed, the lexical vectors and
	// passages follow.
	handle(t, h, msg(t, structure(2, "Songbirds")))
	if hits := search("corvids"); len(hits) != 0 {
		t.Errorf("the old title still finds %+v", hits)
	}
	hits = search("songbirds crows")
	if len(hits) != 2 || hits[0].ChunkID != "c2" || hits[0].Title != "Songbirds" {
		t.Fatalf("after the new title: %+v", hits)
	}
	dense, err := vs.Search(ctx, []float32{0, 1, 0, 0}, vectors.SearchOptions{K: 1})
	if err != nil || len(dense) != 1 || dense[0].ID != "c2" || dense[0].Score < 0.999 {
		t.Fatalf("the dense vectors after the refresh: %+v, %v", dense, err)
	}
}

// A vector whose document's structure has still not come by its third
// delivery is stored without a lexical vector (so the dense leg finds it);
// when the structure is applied, the stage writes the document's lexical
// vectors, so the lexical leg on Qdrant finds it too without a check.
func TestOnQdrantAVectorStoredBeforeItsStructureGetsItsLexicalVectorWithTheStructure(t *testing.T) {
	ctx := context.Background()
	h, srv, vs, search := indexOnQdrant(t)

	c1 := chunk("c1", "herons wade in shallow water")
	handle(t, h, msg(t, c1))
	embed := msg(t, &schemas.EmbedDone{Model: "m", Dim: 4, Items: []schemas.EmbeddedChunk{
		{ChunkID: "c1", DocID: "d1", Hash: c1.Hash, Lang: "en", Vector: []float32{0, 0, 1, 0}}}})
	embed.Delivered = 3
	handle(t, h, embed)
	if n := srv.PointCount(vectors.DefaultCollection); n != 1 {
		t.Fatalf("%d points after the last delivery, want the vector stored", n)
	}
	if hits := search("herons water"); len(hits) != 0 {
		t.Fatalf("lexical hits before the structure: %+v", hits)
	}
	handle(t, h, msg(t, &schemas.DocStructure{DocID: "d1", Title: "Waders", Path: "waders.md", Hash: "h1", Version: 1,
		ChunkIDs: []string{"c1"}, Blocks: []schemas.BlockNode{{ID: "b-c1", Type: schemas.BlockParagraph}}}))
	hits := search("herons water")
	if len(hits) != 1 || hits[0].ChunkID != "c1" || hits[0].Title != "Waders" || hits[0].BlockID != "b-c1" {
		t.Fatalf("lexical hits after the structure: %+v", hits)
	}
	dense, err := vs.Search(ctx, []float32{0, 0, 1, 0}, vectors.SearchOptions{K: 1})
	if err != nil || len(dense) != 1 || dense[0].ID != "c1" {
		t.Fatalf("the dense vector after the refresh: %+v, %v", dense, err)
	}
}

// indexOnQdrant is an index stage over a fresh store and the fake Qdrant
// (4-dimensional vectors), with a lexical search on Qdrant's sparse
// vectors as the retrieve stage runs it.
func indexOnQdrant(t *testing.T) (h bus.Handler, srv *qdrantfake.Server, vs vectors.Store, search func(q string) []store.Hit) {
	t.Helper()
	ctx := context.Background()
	st, _ := openStore(t)
	srv, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	vs, err = vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: 4, Qdrant: vectors.QdrantConfig{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	h, err = NewWithVectors(DefaultConfig(), st, vs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.New(analysis.Full)
	if err != nil {
		t.Fatal(err)
	}
	lex := &retrieval.VectorIndex{Store: vs.(vectors.LexicalStore), Analyzer: a}
	search = func(q string) []store.Hit {
		t.Helper()
		hits, err := lex.Search(ctx, q, store.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	return h, srv, vs, search
}
