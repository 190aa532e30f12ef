package siyuan_test

import (
	"context"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

// TestCreateDocWithMdMakesADocumentWhoseBlockRefsResolve creates a document
// through the kernel API as the real kernel (v3.7.3) does: titled by its
// path's last segment under a parent document made for /Research, its
// Markdown parsed into blocks, and its block references in the refs table,
// each naming the referenced block, with a static anchor as written and a
// dynamic one showing the block's text.
func TestCreateDocWithMdMakesADocumentWhoseBlockRefsResolve(t *testing.T) {
	ctx := context.Background()
	k := siyuantest.New(t, "secret-token")
	k.AddNotebook(box, "RAG Probe")
	if err := k.PutDoc(box, "20261121100800-target1", "", "/Crows",
		siyuantest.Block{ID: "20261121100800-tpara01", Type: "p", Content: "Crows use tools.", Markdown: "Crows use tools."},
		siyuantest.Block{ID: "20261121100800-tpara02", Type: "p", Content: "Crows remember faces.", Markdown: "Crows remember faces."}); err != nil {
		t.Fatal(err)
	}
	c := siyuan.NewClient(k.URL(), "secret-token")
	md := "## Summary\n\nCrows use tools ((20261121100800-tpara01 \"1\")).\n\n" +
		"## Sources\n\n1. ((20261121100800-tpara01 \"Crows\")) — «Crows use tools.»\n2. ((20261121100800-tpara02 'whatever'))\n"
	id, err := c.CreateDocWithMd(ctx, box, "/Research/What crows do", md)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDocWithMd(ctx, "no-such-box", "/Research/X", md); err == nil || !strings.Contains(err.Error(), "no-such-box") {
		t.Errorf("a missing notebook: err = %v, want the kernel's error naming it", err)
	}
	if err := c.Flush(ctx); err != nil { // the kernel indexes it about 1.3 s later otherwise
		t.Fatal(err)
	}
	rows, err := c.SQL(ctx, "SELECT id, hpath, path, content FROM blocks WHERE id = '"+id+"' LIMIT 1")
	if err != nil || len(rows) != 1 {
		t.Fatalf("the new document: %v %v", rows, err)
	}
	if rows[0].Str("hpath") != "/Research/What crows do" || rows[0].Str("content") != "What crows do" {
		t.Errorf("document row = %v, want hpath /Research/What crows do titled What crows do", rows[0])
	}
	// A second report goes under the same /Research document.
	other, err := c.CreateDocWithMd(ctx, box, "/Research/Other", "Text.")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	parent, err := c.SQL(ctx, "SELECT id FROM blocks WHERE type = 'd' AND hpath = '/Research' LIMIT 5")
	if err != nil || len(parent) != 1 {
		t.Fatalf("one parent document /Research: %v %v", parent, err)
	}
	for _, d := range []string{id, other} {
		rows, err := c.SQL(ctx, "SELECT path FROM blocks WHERE id = '"+d+"' LIMIT 1")
		if err != nil || len(rows) != 1 || !strings.HasSuffix(rows[0].Str("path"), "/"+parent[0].Str("id")+"/"+d+".sy") {
			t.Errorf("document %s is not under /Research (%s): %v %v", d, parent[0].Str("id"), rows, err)
		}
	}
	refs, err := c.SQL(ctx, `SELECT r.block_id, r.def_block_id, r.def_block_root_id, r.content, r.markdown, b.content AS def_text, s.root_id AS src_root
		FROM refs r JOIN blocks b ON b.id = r.def_block_id JOIN blocks s ON s.id = r.block_id WHERE r.root_id = '`+id+`' ORDER BY r.id LIMIT 10`)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3 {
		t.Fatalf("refs of the new document that resolve to a block = %v, want 3", refs)
	}
	want := []struct{ def, anchor, text string }{
		{"20261121100800-tpara01", "1", "Crows use tools."},
		{"20261121100800-tpara01", "Crows", "Crows use tools."},
		{"20261121100800-tpara02", "Crows remember faces.", "Crows remember faces."}, // a dynamic anchor shows the block's text
	}
	for i, w := range want {
		r := refs[i]
		if r.Str("def_block_id") != w.def || r.Str("content") != w.anchor || r.Str("def_text") != w.text ||
			r.Str("def_block_root_id") != "20261121100800-target1" || r.Str("src_root") != id || !strings.HasPrefix(r.Str("markdown"), "(("+w.def) {
			t.Errorf("ref %d = %v, want %s anchored %q", i, r, w.def, w.anchor)
		}
	}
	// The Sources list is a list of items, each holding the paragraph that refers.
	items, err := c.SQL(ctx, "SELECT p.id FROM blocks p JOIN blocks i ON i.id = p.parent_id JOIN blocks l ON l.id = i.parent_id WHERE p.root_id = '"+id+"' AND p.type = 'p' AND i.type = 'i' AND l.type = 'l' AND l.subtype = 'o' LIMIT 10")
	if err != nil || len(items) != 2 {
		t.Errorf("an ordered list of two items with a paragraph each: %v %v", items, err)
	}
}
