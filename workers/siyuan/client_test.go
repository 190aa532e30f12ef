package siyuan_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

const box = "20261121100831-kt25p1g"

// bigDoc has a heading tree, a list, a reference and n paragraphs.
func bigDoc(n int) []siyuantest.Block {
	bs := []siyuantest.Block{
		{ID: "20261121100900-top0001", Type: "h", Subtype: "h1", Content: "Top", Markdown: "# Top"},
		{ID: "20261121100900-list001", Type: "l", Subtype: "u", Content: "item", Markdown: "- item"},
		{ID: "20261121100900-item001", Type: "i", Subtype: "u", Content: "item", Markdown: "- item", Parent: "20261121100900-list001"},
		{ID: "20261121100900-ipar001", Type: "p", Content: "item text with ref Target", Markdown: "item text with ref ((20261121100800-target1 'Target'))",
			Parent: "20261121100900-item001", Refs: []string{"20261121100800-target1"}},
		{ID: "20261121100900-mid0001", Type: "h", Subtype: "h2", Content: "Mid", Markdown: "## Mid"},
	}
	for i := 0; i < n; i++ {
		// Ids that do not sort in document order, as after inserts.
		bs = append(bs, siyuantest.Block{ID: fmt.Sprintf("20261121100%03d-para%03d", 999-i, i), Type: "p",
			Content: fmt.Sprintf("Paragraph %d.", i), Markdown: fmt.Sprintf("Paragraph **%d**.", i)})
	}
	return bs
}

func TestFetchDocReadsMoreThan64BlocksInOrderOnceEach(t *testing.T) {
	k := siyuantest.New(t, "secret-token")
	k.SetSQLDelay(0) // this test reads SQL right after each write
	k.AddNotebook(box, "RAG Probe")
	if err := k.PutDoc(box, "20261121100800-target1", "", "/Target"); err != nil {
		t.Fatal(err)
	}
	const id = "20261121100831-xs0m89b"
	if err := k.PutDoc(box, id, "20261121100800-target1", "/Target/Probe Doc", bigDoc(150)...); err != nil {
		t.Fatal(err)
	}
	for _, dup := range []string{id, "20261121100999-para000", "20261121100900-mid0001"} {
		if err := k.Duplicate(dup); err != nil {
			t.Fatal(err)
		}
	}
	c := siyuan.NewClient(k.URL(), "secret-token")
	ctx := context.Background()
	doc, err := c.FetchDoc(ctx, id, map[string]string{box: "RAG Probe"})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Blocks) != 155 {
		t.Fatalf("%d blocks, want 155 (5 + 150 paragraphs, each once)", len(doc.Blocks))
	}
	if doc.DocID != id || doc.Title != "Probe Doc" || doc.ParentDocID != "20261121100800-target1" || doc.Notebook != box ||
		strings.Join(doc.TitlePath, "/") != "RAG Probe/Target/Probe Doc" || doc.Version == 0 || doc.Hash == "" {
		t.Errorf("doc = %+v", doc)
	}
	want := []struct{ id, typ, parent string }{
		{"20261121100900-top0001", schemas.BlockHeading, ""},
		{"20261121100900-list001", schemas.BlockList, ""},
		{"20261121100900-item001", schemas.BlockListItem, "20261121100900-list001"},
		{"20261121100900-ipar001", schemas.BlockParagraph, "20261121100900-item001"},
		{"20261121100900-mid0001", schemas.BlockHeading, ""},
		{"20261121100999-para000", schemas.BlockParagraph, ""},
		{"20261121100998-para001", schemas.BlockParagraph, ""},
	}
	for i, w := range want {
		if b := doc.Blocks[i]; b.ID != w.id || b.Type != w.typ || b.ParentID != w.parent {
			t.Errorf("block %d = %+v, want %+v", i, b, w)
		}
	}
	if b := doc.Blocks[4]; b.Level != 2 || b.Text != "Mid" {
		t.Errorf("heading = %+v", b)
	}
	if b := doc.Blocks[3]; len(b.Refs) != 1 || b.Refs[0] != "20261121100800-target1" || b.Text != "item text with ref Target" {
		t.Errorf("the referring block = %+v", b)
	}
	if last := doc.Blocks[154]; last.ID != "20261121100850-para149" || last.Text != "Paragraph 149." {
		t.Errorf("last block = %+v", last)
	}

	docs, err := c.Docs(ctx, nil)
	if err != nil || len(docs) != 2 {
		t.Fatalf("docs %+v, %v", docs, err)
	}
	// Fetching again gives the same hash; an edit changes it.
	again, _ := c.FetchDoc(ctx, id, map[string]string{box: "RAG Probe"})
	if again.Hash != doc.Hash {
		t.Error("the same document hashed differently")
	}
	if err := k.EditDoc(id, func(bs []siyuantest.Block) []siyuantest.Block {
		bs[5].Content = "Paragraph zero, edited."
		return bs
	}); err != nil {
		t.Fatal(err)
	}
	edited, _ := c.FetchDoc(ctx, id, nil)
	if edited.Hash == doc.Hash || edited.Version <= doc.Version || edited.Blocks[5].Text != "Paragraph zero, edited." {
		t.Errorf("after an edit: hash same %v, version %d -> %d, block %+v", edited.Hash == doc.Hash, doc.Version, edited.Version, edited.Blocks[5])
	}
	if _, err := k.RemoveDoc("20261121100800-target1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FetchDoc(ctx, id, nil); !errors.Is(err, siyuan.ErrGone) {
		t.Errorf("a child of a removed document: %v", err)
	}
}

func TestAnInvalidTokenIsAClearErrorWithoutTheToken(t *testing.T) {
	k := siyuantest.New(t, "right")
	c := siyuan.NewClient(k.URL(), "wrong-token-xyz")
	err := c.Check(context.Background())
	if !errors.Is(err, siyuan.ErrAuth) || strings.Contains(err.Error(), "wrong-token-xyz") || !strings.Contains(err.Error(), "API token") {
		t.Fatalf("err = %v", err)
	}
	if err := siyuan.NewClient(k.URL(), "right").Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestASQLStatementWithoutLimitIsRefused(t *testing.T) {
	k := siyuantest.New(t, "t")
	k.SetSQLDelay(0)
	if err := k.PutDoc(box, "20261121100831-xs0m89b", "", "/Probe", bigDoc(100)...); err != nil {
		t.Fatal(err)
	}
	c := siyuan.NewClient(k.URL(), "t")
	// The kernel cuts a statement without LIMIT at 64 rows and says nothing.
	var rows []siyuan.Row
	if err := c.Call(context.Background(), "/api/query/sql", map[string]string{"stmt": "SELECT id FROM blocks"}, &rows); err != nil || len(rows) != 64 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	_, err := c.SQL(context.Background(), "SELECT * FROM blocks")
	if err == nil || !strings.Contains(err.Error(), "64") {
		t.Fatalf("err = %v", err)
	}
	all, err := c.SelectAll(context.Background(), "id", "blocks", "", "id", 64)
	if err != nil || len(all) != 106 {
		t.Fatalf("paged: %d rows, %v", len(all), err)
	}
}

func TestFetchDocCarriesTheDocumentsTagsAndAliases(t *testing.T) {
	k := siyuantest.New(t, "tok")
	k.SetSQLDelay(0)
	k.AddNotebook(box, "Notes")
	const id = "20261121100831-xs0m89b"
	if err := k.PutDoc(box, id, "", "/Birds", siyuantest.Block{ID: "20261121100831-para001", Type: "p", Content: "Crows.", Markdown: "Crows."}); err != nil {
		t.Fatal(err)
	}
	c := siyuan.NewClient(k.URL(), "tok")
	ctx := context.Background()
	before, err := c.FetchDoc(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through the API, as a user or plugin sets them.
	if err := c.Call(ctx, "/api/attr/setBlockAttrs", map[string]any{"id": id, "attrs": map[string]string{"tags": "corvids, black birds", "alias": "Ravenkind, Воронье"}}, nil); err != nil {
		t.Fatal(err)
	}

	t.Run("the kernel's columns have the real shapes", func(t *testing.T) {
		rows, err := c.SelectAll(ctx, "id, tag, alias, ial", "blocks", "id = '"+id+"'", "id", 10)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%v %v", rows, err)
		}
		if r := rows[0]; r.Str("tag") != "#corvids# #black birds#" || r.Str("alias") != "Ravenkind, Воронье" ||
			!strings.Contains(r.Str("ial"), `tags="corvids, black birds"`) {
			t.Errorf("row %v", r)
		}
	})
	t.Run("the document carries them and its hash changes", func(t *testing.T) {
		doc, err := c.FetchDoc(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Meta["tags"] != "corvids,black birds" || doc.Meta["alias"] != "Ravenkind,Воронье" {
			t.Errorf("meta %v", doc.Meta)
		}
		if doc.Hash == before.Hash {
			t.Error("the hash did not change with the tags: the change would not be sent")
		}
	})
	t.Run("removed, they are gone and the hash is the untagged one again", func(t *testing.T) {
		if err := k.SetBlockAttrs(id, map[string]string{"tags": "", "alias": ""}); err != nil {
			t.Fatal(err)
		}
		doc, err := c.FetchDoc(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Meta["tags"]; ok || doc.Hash != before.Hash {
			t.Errorf("meta %v, hash changed: %v", doc.Meta, doc.Hash != before.Hash)
		}
	})
}

func TestFetchDocCarriesTagsTimesAndTheNotebooksName(t *testing.T) {
	k := siyuantest.New(t, "tok")
	k.SetSQLDelay(0)
	k.AddNotebook(box, "Дневник")
	const id = "20240301101500-xs0m89b"
	if err := k.PutDoc(box, id, "", "/Суп",
		siyuantest.Block{ID: "20240301101501-para001", Type: "p", Content: "Варить Обед", Markdown: "Варить #Обед#"},
		siyuantest.Block{ID: "20240301101502-code001", Type: "c", Content: "#incode#", Markdown: "```\n#incode#\n```"}); err != nil {
		t.Fatal(err)
	}
	if err := k.SetBlockAttrs(id, map[string]string{"tags": "Рецепт, work/home"}); err != nil {
		t.Fatal(err)
	}
	c := siyuan.NewClient(k.URL(), "tok")
	doc, err := c.FetchDoc(context.Background(), id, map[string]string{box: "Дневник"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"work/home", "обед", "рецепт"}; strings.Join(doc.Tags, "|") != strings.Join(want, "|") {
		t.Errorf("tags %q, want %q (the attribute's and the text's, not the code's)", doc.Tags, want)
	}
	if doc.NotebookName != "Дневник" {
		t.Errorf("notebook name %q, want Дневник", doc.NotebookName)
	}
	if got := doc.Created.In(time.Local).Format("20060102150405"); got != "20240301101500" {
		t.Errorf("created %s, want 20240301101500 (the kernel's created, from the id)", got)
	}
	if doc.Updated.IsZero() || doc.Updated.UnixNano() != doc.Version {
		t.Errorf("updated %v, want the document's updated (version %d)", doc.Updated, doc.Version)
	}
}
