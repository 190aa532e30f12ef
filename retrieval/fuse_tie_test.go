package retrieval_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// recipeNotes indexes the same recipe twice, an English note (enID) and a
// Russian one (ruID), each one chunk that names the dish in both languages,
// so that the question ranks its own language's note first and the other
// second, and its translation the other way round: the two tie in the fused
// list.
func recipeNotes(t *testing.T, enID, ruID string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "exocortex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, c := range []struct{ id, lang, title, text string }{
		{enID, "en", "Buckwheat pancakes", "Buckwheat pancakes. My grandmother's гречневые блинчики. Mix buckwheat flour, milk and water in the ratio 1:2:2 by volume."},
		{ruID, "ru", "Гречневые блинчики (buckwheat pancakes)", "Гречневые блинчики (buckwheat pancakes). Рецепт бабушки. Смешайте гречневую муку, молоко и воду в пропорции 1:3:1 по объёму."},
	} {
		if _, err := st.UpsertChunk(ctx, &schemas.ChunkCreated{ChunkID: c.id + ":1", DocID: c.id, DocVersion: 1, Ordinal: 0, Hash: "h-" + c.id,
			Text: c.text, BlockIDs: []string{c.id + "#b"}, Lang: c.lang}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyStructure(ctx, &schemas.DocStructure{DocID: c.id, Title: c.title, Path: c.id + ".md", Hash: c.id, Version: 1,
			ChunkIDs: []string{c.id + ":1"}, Blocks: []schemas.BlockNode{{ID: c.id + "#b", Type: schemas.BlockParagraph, ChunkID: c.id + ":1"}}}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// A note the question itself ranks first comes before one only its
// translation ranks first when the two tie in the fused list, whichever
// note's id sorts first (a Markdown note's id is a hash of its path, so the
// order must not hang on it: research reads a task's documents in this
// order, and a fact step finds a disagreement only with the facts read
// before it).
func TestOnATieTheQuestionsOwnHitComesBeforeItsTranslationsWhateverTheIds(t *testing.T) {
	for _, tc := range []struct {
		name, question, translation string
		enID, ruID, want            string
	}{
		{"an English question, the English note's id sorting last", "How do I make buckwheat pancakes?",
			"ru: Как приготовить гречневые блинчики?", "md-f-en", "md-a-ru", "md-f-en"},
		{"an English question, the English note's id sorting first", "How do I make buckwheat pancakes?",
			"ru: Как приготовить гречневые блинчики?", "md-a-en", "md-f-ru", "md-a-en"},
		{"a Russian question, the Russian note's id sorting last", "Как приготовить гречневые блинчики?",
			"en: How do I make buckwheat pancakes?", "md-a-en", "md-f-ru", "md-f-ru"},
		{"a Russian question, the Russian note's id sorting first", "Как приготовить гречневые блинчики?",
			"en: How do I make buckwheat pancakes?", "md-f-en", "md-a-ru", "md-a-ru"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := recipeNotes(t, tc.enID, tc.ruID)
			srv := llmtest.New(t)
			srv.SetAnswer(tc.translation)
			r := &retrieval.Retriever{Index: st, Translate: retrieval.Translator(strategicOnly(t, srv))}
			out, err := r.Retrieve(context.Background(), &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: tc.question}})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Candidates) != 2 || reasonWith(out.Reasons, "translated: ") == "" {
				t.Fatalf("candidates %+v, reasons %q: want both notes, searched translated too", out.Candidates, out.Reasons)
			}
			a, b := out.Candidates[0], out.Candidates[1]
			if a.Fused != b.Fused || a.Lexical.Rank != 1 || b.Lexical.Rank != 1 {
				t.Fatalf("fused %v and %v, best ranks %d and %d: the notes must tie for the test to mean anything",
					a.Fused, b.Fused, a.Lexical.Rank, b.Lexical.Rank)
			}
			if a.DocID != tc.want {
				t.Errorf("first %s, then %s: want %s, the note the question itself ranks first", a.DocID, b.DocID, tc.want)
			}
			// Rerank keeps the fused order (no reranker), and research groups
			// the documents in it.
			rr, err := r.Rerank(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			if len(rr.Contexts) == 0 || rr.Contexts[0].DocID != tc.want {
				t.Errorf("reranked contexts %+v: want %s first", rr.Contexts, tc.want)
			}
		})
	}
}
