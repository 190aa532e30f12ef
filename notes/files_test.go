package notes

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

const guideDir = "../../shared/eval/siyuan-guide"

// walkAll walks paths and returns the documents and the errors by path.
func walkAll(t *testing.T, paths ...string) ([]*schemas.DocChanged, map[string]error) {
	t.Helper()
	var docs []*schemas.DocChanged
	errs := map[string]error{}
	err := Walk(paths, func(d *schemas.DocChanged) error {
		docs = append(docs, d)
		return nil
	}, func(p string, err error) { errs[p] = err })
	if err != nil {
		t.Fatalf("Walk(%v): %v", paths, err)
	}
	return docs, errs
}

// outline is a block reduced to what a structure test compares; Parent is the
// index of the parent block in the document, -1 at the top.
type outline struct {
	Type   string
	Level  int
	Parent int
	Text   string
}

func outlineOf(doc *schemas.DocChanged) []outline {
	index := map[string]int{}
	out := make([]outline, len(doc.Blocks))
	for i, b := range doc.Blocks {
		index[b.ID] = i
		parent := -1
		if b.ParentID != "" {
			p, ok := index[b.ParentID]
			if !ok {
				p = -2 // parent missing or after its child
			}
			parent = p
		}
		out[i] = outline{b.Type, b.Level, parent, b.Text}
	}
	return out
}

// writeFile writes content to name under dir and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// parseMD parses content as a Markdown file at the root of a temp folder.
// Every call of one test writes the same file, so ids can be compared.
func parseMD(t *testing.T, content string) *schemas.DocChanged {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "exocortex-parsemd-"+strings.ReplaceAll(t.Name(), "/", "_"))
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := writeFile(t, dir, "note.md", content)
	doc, err := ParseMarkdown(p, []byte(content), dir)
	if err != nil {
		t.Fatalf("ParseMarkdown: %v", err)
	}
	return doc
}

func TestWalkSiYuanGuide(t *testing.T) {
	if _, err := os.Stat(guideDir); err != nil {
		t.Skipf("SiYuan guide not found at %s (the shared eval data): %v", guideDir, err)
	}
	docs, errs := walkAll(t, guideDir)
	for p, err := range errs {
		t.Errorf("onErr(%s): %v", p, err)
	}
	byID := map[string]*schemas.DocChanged{}
	for _, d := range docs {
		byID[d.DocID] = d
	}
	const customAppearance = "20210808180303-axh6q1d"

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"the walk finds all 73 documents", func(t *testing.T) {
			if len(docs) != 73 || len(byID) != 73 {
				t.Errorf("got %d documents (%d distinct ids), want 73", len(docs), len(byID))
			}
		}},
		{"every document is valid and every block keeps its SiYuan id", func(t *testing.T) {
			for _, d := range docs {
				if err := d.Validate(); err != nil {
					t.Error(err)
				}
				if d.Source != schemas.SourceSiYuan || d.Notebook != "20210808180117-6v0mkxr" {
					t.Errorf("%s: source %q, notebook %q", d.DocID, d.Source, d.Notebook)
				}
				for _, b := range d.Blocks {
					if !idRe.MatchString(b.ID) {
						t.Errorf("%s: block id %q is not a SiYuan id", d.DocID, b.ID)
					}
				}
			}
		}},
		{"the block refs add up to the 193 the README counts", func(t *testing.T) {
			n := 0
			for _, d := range docs {
				for _, b := range d.Blocks {
					n += len(b.Refs)
				}
			}
			if n != 193 {
				t.Errorf("got %d refs, want 193", n)
			}
		}},
		{"every heading has a level from 1 to 6", func(t *testing.T) {
			n := 0
			for _, d := range docs {
				for _, b := range d.Blocks {
					if b.Type == schemas.BlockHeading {
						n++
						if b.Level < 1 || b.Level > 6 {
							t.Errorf("%s: heading %s has level %d", d.DocID, b.ID, b.Level)
						}
					}
				}
			}
			if n != 434 {
				t.Errorf("got %d headings, want 434", n)
			}
		}},
		{"Custom Appearance has two paragraphs that ref its child docs", func(t *testing.T) {
			d := byID[customAppearance]
			if d == nil {
				t.Fatal("document not found")
			}
			want := []schemas.Block{
				{ID: "20240508004341-z4ugefi", Type: "paragraph", Text: "Icon", Updated: "20240508004341", Refs: []string{"20200924100110-vcg96wy"}},
				{ID: "20240508004341-6pgvimp", Type: "paragraph", Text: "Theme", Updated: "20240508004341", Refs: []string{"20200924095938-a9p5450"}},
			}
			if !reflect.DeepEqual(d.Blocks, want) {
				t.Errorf("blocks:\n got %+v\nwant %+v", d.Blocks, want)
			}
		}},
		{"Custom Appearance sits under its parent with the notebook name first", func(t *testing.T) {
			d := byID[customAppearance]
			if d == nil {
				t.Fatal("document not found")
			}
			want := []string{"SiYuan User Guide", "Please Start Here", "Custom Appearance"}
			if !reflect.DeepEqual(d.TitlePath, want) {
				t.Errorf("TitlePath = %q, want %q", d.TitlePath, want)
			}
			if d.Title != "Custom Appearance" || d.ParentDocID != "20200923234011-ieuun1p" {
				t.Errorf("Title %q, ParentDocID %q", d.Title, d.ParentDocID)
			}
			if d.Meta["notebook_name"] != "SiYuan User Guide" || d.Meta["icon"] != "1f3a8" {
				t.Errorf("Meta = %v", d.Meta)
			}
			if !filepath.IsAbs(d.Path) || !strings.HasSuffix(d.Path, "20200923234011-ieuun1p/20210808180303-axh6q1d.sy") {
				t.Errorf("Path = %q", d.Path)
			}
		}},
		{"the version is the document's updated stamp and the hash is of the file", func(t *testing.T) {
			d := byID[customAppearance]
			if d == nil {
				t.Fatal("document not found")
			}
			if want := time.Date(2024, 5, 8, 0, 43, 41, 0, time.UTC).UnixNano(); d.Version != want {
				t.Errorf("Version = %d, want %d", d.Version, want)
			}
			data, err := os.ReadFile(d.Path)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(data); d.Hash != hex.EncodeToString(sum[:]) {
				t.Errorf("Hash = %s, not the sha256 of the file", d.Hash)
			}
		}},
		{"a code block carries its fence and language", func(t *testing.T) {
			if b := findBlock(docs, "20210104091538-xsj6knt"); b == nil || b.Text != "```js\nfunction hello() {}\n```" {
				t.Errorf("code block = %+v", b)
			}
		}},
		{"a parent document comes before its children", func(t *testing.T) {
			seen := map[string]bool{}
			for _, d := range docs {
				if d.ParentDocID != "" && !seen[d.ParentDocID] {
					t.Errorf("%s came before its parent %s", d.DocID, d.ParentDocID)
				}
				seen[d.DocID] = true
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func findBlock(docs []*schemas.DocChanged, id string) *schemas.Block {
	for _, d := range docs {
		for i := range d.Blocks {
			if d.Blocks[i].ID == id {
				return &d.Blocks[i]
			}
		}
	}
	return nil
}

func TestParseSiYuan(t *testing.T) {
	// doc wraps block JSON in a document.
	doc := func(children string) string {
		return `{"ID":"20240101000000-doc0001","Spec":"2","Type":"NodeDocument","Properties":{"id":"20240101000000-doc0001","title":"T","updated":"20240101000000"},"Children":[` + children + `]}`
	}
	tests := []struct {
		name string
		json string
		want []outline
		refs [][]string
	}{
		{
			name: "a static ref mixed with text shows its anchor and becomes a ref",
			json: doc(`{"ID":"20240101000000-p000001","Type":"NodeParagraph","Properties":{"id":"20240101000000-p000001"},"Children":[{"Type":"NodeText","Data":"Add "},{"Type":"NodeTextMark","TextMarkType":"block-ref","TextMarkBlockRefID":"20260613155453-sgecaav","TextMarkBlockRefSubtype":"s","TextMarkTextContent":"fields"}]}`),
			want: []outline{{"paragraph", 0, -1, "Add fields"}},
			refs: [][]string{{"20260613155453-sgecaav"}},
		},
		{
			name: "inline code, math and keys keep light marks and zero-width spaces go",
			json: doc(`{"ID":"20240101000000-p000001","Type":"NodeParagraph","Properties":{"id":"20240101000000-p000001"},"Children":[{"Type":"NodeText","Data":"Press "},{"Type":"NodeTextMark","TextMarkType":"kbd","TextMarkTextContent":"Ctrl"},{"Type":"NodeText","Data":"\u200b for "},{"Type":"NodeTextMark","TextMarkType":"strong code","TextMarkTextContent":"x"},{"Type":"NodeText","Data":" and "},{"Type":"NodeTextMark","TextMarkType":"inline-math","TextMarkInlineMathContent":"a^2"}]}`),
			want: []outline{{"paragraph", 0, -1, "Press Ctrl for `x` and $a^2$"}},
			refs: [][]string{nil},
		},
		{
			name: "a list keeps SiYuan's items and paragraphs and drops the task marker",
			json: doc(`{"ID":"20240101000000-l000001","Type":"NodeList","ListData":{},"Properties":{"id":"20240101000000-l000001"},"Children":[{"ID":"20240101000000-i000001","Type":"NodeListItem","Properties":{"id":"20240101000000-i000001"},"Children":[{"Type":"NodeTaskListItemMarker","Data":"[X]"},{"ID":"20240101000000-p000001","Type":"NodeParagraph","Properties":{"id":"20240101000000-p000001"},"Children":[{"Type":"NodeText","Data":"done"}]}]}]}`),
			want: []outline{{"list", 0, -1, ""}, {"list_item", 0, 0, ""}, {"paragraph", 0, 1, "done"}},
			refs: [][]string{nil, nil, nil},
		},
		{
			name: "a table becomes one block of cell | cell rows",
			json: doc(`{"ID":"20240101000000-t000001","Type":"NodeTable","Properties":{"id":"20240101000000-t000001"},"Children":[{"Type":"NodeTableHead","Children":[{"Type":"NodeTableRow","Children":[{"Type":"NodeTableCell","Children":[{"Type":"NodeText","Data":"A"}]},{"Type":"NodeTableCell","Children":[{"Type":"NodeText","Data":"B"}]}]}]},{"Type":"NodeTableRow","Children":[{"Type":"NodeTableCell","Children":[{"Type":"NodeText","Data":"1"}]},{"Type":"NodeTableCell","Children":[{"Type":"NodeTextMark","TextMarkType":"block-ref","TextMarkBlockRefID":"20240101000000-x000001","TextMarkTextContent":"two"}]}]}]}`),
			want: []outline{{"table", 0, -1, "A | B\n1 | two"}},
			refs: [][]string{{"20240101000000-x000001"}},
		},
		{
			name: "an embed is its SQL and a thematic break is no block",
			json: doc(`{"ID":"20240101000000-e000001","Type":"NodeBlockQueryEmbed","Data":"{{SELECT 1}}","Properties":{"id":"20240101000000-e000001"},"Children":[{"Type":"NodeOpenBrace"},{"Type":"NodeBlockQueryEmbedScript","Data":"SELECT 1"},{"Type":"NodeCloseBrace"}]},{"ID":"20240101000000-b000001","Type":"NodeThematicBreak","Properties":{"id":"20240101000000-b000001"}}`),
			want: []outline{{"embed", 0, -1, "SELECT 1"}},
			refs: [][]string{nil},
		},
		{
			name: "a heading gets its level and loses its markers",
			json: doc(`{"ID":"20240101000000-h000001","Type":"NodeHeading","HeadingLevel":3,"Properties":{"id":"20240101000000-h000001"},"Children":[{"Type":"NodeHeadingC8hMarker","Data":"### "},{"Type":"NodeText","Data":"Title"}]}`),
			want: []outline{{"heading", 3, -1, "Title"}},
			refs: [][]string{nil},
		},
	}
	nb := Notebook{ID: "20240101000000-nb00001", Name: "NB", Dir: t.TempDir()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ParseSiYuan(filepath.Join(nb.Dir, "20240101000000-doc0001.sy"), []byte(tt.json), nb)
			if err != nil {
				t.Fatal(err)
			}
			if got := outlineOf(d); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("blocks:\n got %+v\nwant %+v", got, tt.want)
			}
			var refs [][]string
			for _, b := range d.Blocks {
				refs = append(refs, b.Refs)
			}
			if !reflect.DeepEqual(refs, tt.refs) {
				t.Errorf("refs = %q, want %q", refs, tt.refs)
			}
			if want := []string{"NB", "T"}; !reflect.DeepEqual(d.TitlePath, want) {
				t.Errorf("TitlePath = %q, want %q", d.TitlePath, want)
			}
		})
	}

	t.Run("a document without an updated stamp takes the file's mtime", func(t *testing.T) {
		content := `{"ID":"20240101000000-doc0002","Type":"NodeDocument","Properties":{"title":"No stamp"}}`
		p := writeFile(t, nb.Dir, "20240101000000-doc0002.sy", content)
		mtime := time.Date(2023, 3, 4, 5, 6, 7, 0, time.UTC)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		d, err := ParseSiYuan(p, []byte(content), nb)
		if err != nil {
			t.Fatal(err)
		}
		if d.Version != mtime.UnixNano() {
			t.Errorf("Version = %d, want %d", d.Version, mtime.UnixNano())
		}
	})
	t.Run("a file that is not a SiYuan document is an error naming it", func(t *testing.T) {
		_, err := ParseSiYuan("/x/broken.sy", []byte(`{"Type":"NodeParagraph"}`), nb)
		if err == nil || !strings.Contains(err.Error(), "/x/broken.sy") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestWalkMarkdownVault(t *testing.T) {
	docs, errs := walkAll(t, "testdata/vault")
	root, err := filepath.Abs("testdata/vault")
	if err != nil {
		t.Fatal(err)
	}
	byRel := map[string]*schemas.DocChanged{}
	var order []string
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d.Path)
		byRel[filepath.ToSlash(rel)] = d
		order = append(order, filepath.ToSlash(rel))
	}
	id := func(rel string) string { return MarkdownDocID(filepath.Join(root, filepath.FromSlash(rel))) }
	index := byRel["index.md"]
	if index == nil {
		t.Fatalf("index.md not walked; got %v", order)
	}

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"the walk yields the notes in sorted order and skips hidden and other files", func(t *testing.T) {
			// latin1.md is not UTF-8: it is read with its bad bytes replaced;
			// bad-front-matter.md is read with its front matter as text.
			want := []string{"broken/bad-front-matter.md", "broken/latin1.md", "index.md", "other.md", "sub/deep.md", "заметка.md"}
			if !reflect.DeepEqual(order, want) {
				t.Errorf("documents = %q, want %q", order, want)
			}
			if len(errs) != 0 {
				t.Errorf("errors %v, want none", errs)
			}
		}},
		{"a front matter that does not parse is kept as the first block's text", func(t *testing.T) {
			d := byRel["broken/bad-front-matter.md"]
			if got := outlineOf(d); !reflect.DeepEqual(got, []outline{{"paragraph", 0, -1, "title: [unclosed"}, {"paragraph", 0, -1, "Body"}}) || len(d.Meta) != 0 || d.Title != "bad-front-matter" {
				t.Errorf("blocks %v, meta %v, title %q", got, d.Meta, d.Title)
			}
		}},
		{"every document is valid, rooted at the vault and hashed", func(t *testing.T) {
			for rel, d := range byRel {
				if err := d.Validate(); err != nil {
					t.Error(err)
				}
				if d.DocID != id(rel) || d.Source != schemas.SourceMarkdown || d.Notebook != root {
					t.Errorf("%s: DocID %s, Source %s, Notebook %s", rel, d.DocID, d.Source, d.Notebook)
				}
				if len(d.Hash) != 64 || d.Version == 0 {
					t.Errorf("%s: Hash %q, Version %d", rel, d.Hash, d.Version)
				}
			}
		}},
		{"front matter gives the title, tags, aliases and other scalars", func(t *testing.T) {
			want := map[string]string{"title": "Главная страница", "tags": "notes,russian", "aliases": "Home,Старт", "created": "2024-01-05"}
			if index.Title != "Главная страница" || !reflect.DeepEqual(index.Meta, want) {
				t.Errorf("Title %q, Meta %v", index.Title, index.Meta)
			}
		}},
		{"the title falls back to the first H1, then the file name", func(t *testing.T) {
			if got := byRel["заметка.md"].Title; got != "Заметка о погоде" {
				t.Errorf("заметка.md title = %q", got)
			}
			if got := byRel["other.md"].Title; got != "other" {
				t.Errorf("other.md title = %q", got)
			}
		}},
		{"the title path starts with the folders under the root", func(t *testing.T) {
			if got := byRel["sub/deep.md"].TitlePath; !reflect.DeepEqual(got, []string{"sub", "Deep"}) {
				t.Errorf("TitlePath = %q", got)
			}
		}},
		{"the blocks follow the document's structure", func(t *testing.T) {
			want := []outline{
				{"heading", 1, -1, "Заголовок документа"},
				{"paragraph", 0, -1, "Это первый абзац о погоде в Москве и other > Section.\nВторая строка ссылается на глубокую заметку, на пропавшую, на Nowhere и на сайт."},
				{"heading", 2, -1, "Списки"},
				{"list", 0, -1, ""},
				{"list_item", 0, 3, "Первый пункт"},
				{"list_item", 0, 3, "Второй пункт\nсо второй строкой"},
				{"list", 0, 5, ""},
				{"list_item", 0, 6, "Вложенный пункт про other"},
				{"list_item", 0, 6, "Ещё один вложенный"},
				{"list_item", 0, 3, "Третий пункт"},
				{"list", 0, -1, ""},
				{"list_item", 0, 10, "Ordered one"},
				{"list_item", 0, 10, "Ordered two"},
				{"code", 0, -1, "```go\n# not a heading\nfmt.Println(\"привет\")\n```"},
				{"table", 0, -1, "| Город | Температура |\n| Москва | -5 |\n| Заметка | 0 |"},
				{"blockquote", 0, -1, ""},
				{"paragraph", 0, 15, "Цитата из книги.\nВторая строка цитаты."},
				{"html", 0, -1, `<div class="note">Raw HTML</div>`},
			}
			got := outlineOf(index)
			if len(got) != len(want) {
				t.Fatalf("got %d blocks, want %d:\n%+v", len(got), len(want), got)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("block %d = %+v, want %+v", i, got[i], want[i])
				}
			}
		}},
		{"wikilinks, aliases, headings and relative links resolve; missing targets are dropped", func(t *testing.T) {
			want := []string{id("заметка.md"), id("other.md"), id("sub/deep.md")}
			if got := index.Blocks[1].Refs; !reflect.DeepEqual(got, want) {
				t.Errorf("paragraph refs = %q, want %q", got, want)
			}
			if got := index.Blocks[7].Refs; !reflect.DeepEqual(got, []string{id("other.md")}) {
				t.Errorf("nested item refs = %q", got)
			}
			if got := index.Blocks[14].Refs; !reflect.DeepEqual(got, []string{id("заметка.md")}) {
				t.Errorf("table refs = %q", got)
			}
		}},
		{"a link out of a subfolder and a case-insensitive Cyrillic wikilink resolve", func(t *testing.T) {
			want := []string{id("other.md"), id("заметка.md")}
			if got := byRel["sub/deep.md"].Blocks[0].Refs; !reflect.DeepEqual(got, want) {
				t.Errorf("refs = %q, want %q", got, want)
			}
		}},
		{"markdown block ids hang off the document id", func(t *testing.T) {
			re := regexp.MustCompile(`^md-[0-9a-f]{16}#[0-9a-f]{12}(-\d+)?$`)
			for _, d := range docs {
				for _, b := range d.Blocks {
					if !re.MatchString(b.ID) || !strings.HasPrefix(b.ID, d.DocID+"#") {
						t.Errorf("%s: block id %q", d.DocID, b.ID)
					}
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestParseMarkdownBlocks(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []outline
	}{
		{
			name: "a tilde fence also hides a hash line, and its language stays",
			md:   "~~~python\n# comment\n~~~\n",
			want: []outline{{"code", 0, -1, "~~~python\n# comment\n~~~"}},
		},
		{
			name: "an unclosed fence runs to the end of the document",
			md:   "```\ncode\n\n# still code\n",
			want: []outline{{"code", 0, -1, "```\ncode\n\n# still code\n"}},
		},
		{
			name: "setext underlines make headings and a lone break is skipped",
			md:   "Title\n=====\n\nSub\n---\n\n***\n\ntext #not-heading\n",
			want: []outline{{"heading", 1, -1, "Title"}, {"heading", 2, -1, "Sub"}, {"paragraph", 0, -1, "text #not-heading"}},
		},
		{
			name: "closing hashes of an ATX heading are dropped",
			md:   "### Three ###\n#hashtag\n",
			want: []outline{{"heading", 3, -1, "Three"}, {"paragraph", 0, -1, "#hashtag"}},
		},
		{
			name: "a list item keeps its own line and its code as a child",
			md:   "* item\n\n  ```sh\n  ls\n  ```\n* next\n",
			want: []outline{{"list", 0, -1, ""}, {"list_item", 0, 0, "item"}, {"code", 0, 1, "```sh\nls\n```"}, {"list_item", 0, 0, "next"}},
		},
		{
			name: "a different bullet starts a new list",
			md:   "- a\n+ b\n",
			want: []outline{{"list", 0, -1, ""}, {"list_item", 0, 0, "a"}, {"list", 0, -1, ""}, {"list_item", 0, 2, "b"}},
		},
		{
			name: "a quote opening with [!note] is a callout",
			md:   "> [!note] Heads up\n> body\n",
			want: []outline{{"callout", 0, -1, ""}, {"paragraph", 0, 0, "[!note] Heads up\nbody"}},
		},
		{
			name: "a wikilink inside a code span stays as written and external links keep their text",
			md:   "Use `[[x]]` like [docs](https://example.com/a.md).\n",
			want: []outline{{"paragraph", 0, -1, "Use `[[x]]` like docs."}},
		},
		{
			name: "a heading of a same-document wikilink shows the heading",
			md:   "See [[#Intro]] and ![[pic.png]].\n",
			want: []outline{{"paragraph", 0, -1, "See Intro and pic.png."}},
		},
		{
			name: "display math is one block",
			md:   "$$\na^2\n$$\n",
			want: []outline{{"math", 0, -1, "a^2"}},
		},
		{
			name: "an empty file has no blocks",
			md:   "",
			want: []outline{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := parseMD(t, tt.md)
			if got := outlineOf(d); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("blocks:\n got %+v\nwant %+v", got, tt.want)
			}
			if err := d.Validate(); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("repeated blocks get numbered ids", func(t *testing.T) {
		d := parseMD(t, "same\n\nsame\n\nsame\n")
		base := d.Blocks[0].ID
		want := []string{base, base + "-2", base + "-3"}
		got := []string{d.Blocks[0].ID, d.Blocks[1].ID, d.Blocks[2].ID}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %q, want %q", got, want)
		}
	})
	t.Run("an empty file is titled after its name", func(t *testing.T) {
		if d := parseMD(t, ""); d.Title != "note" || !reflect.DeepEqual(d.TitlePath, []string{"note"}) {
			t.Errorf("Title %q, TitlePath %q", d.Title, d.TitlePath)
		}
	})
}

func TestMarkdownStability(t *testing.T) {
	const before = "# Title\n\nFirst paragraph.\n\nSecond paragraph.\n\n- one\n- two\n\nThird paragraph.\n"
	const after = "# Title\n\nFirst paragraph.\n\nSecond paragraph, edited.\n\n- one\n- two\n\nThird paragraph.\n"

	t.Run("editing one paragraph changes only that block's id", func(t *testing.T) {
		a, b := parseMD(t, before), parseMD(t, after)
		if len(a.Blocks) != len(b.Blocks) {
			t.Fatalf("block counts differ: %d vs %d", len(a.Blocks), len(b.Blocks))
		}
		var changed []int
		for i := range a.Blocks {
			if a.Blocks[i].ID != b.Blocks[i].ID {
				changed = append(changed, i)
			}
		}
		if !reflect.DeepEqual(changed, []int{2}) {
			t.Errorf("changed blocks %v, want [2] (the second paragraph)", changed)
		}
	})
	t.Run("the hash follows the content", func(t *testing.T) {
		a, b := parseMD(t, before), parseMD(t, after)
		sum := sha256.Sum256([]byte(before))
		if a.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("Hash = %s, not the sha256 of the content", a.Hash)
		}
		if a.Hash == b.Hash {
			t.Error("editing the file kept the hash")
		}
	})
	t.Run("the version is the file's mtime", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "n.md", before)
		mtime := time.Date(2022, 1, 2, 3, 4, 5, 6, time.UTC)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		d, err := ParseMarkdown(p, []byte(before), dir)
		if err != nil {
			t.Fatal(err)
		}
		if d.Version != mtime.UnixNano() {
			t.Errorf("Version = %d, want %d", d.Version, mtime.UnixNano())
		}
	})
	t.Run("the same vault under two roots has the same blocks and links below its own document ids", func(t *testing.T) {
		ids := func(root string) []string {
			if err := os.CopyFS(root, os.DirFS("testdata/vault")); err != nil {
				t.Fatal(err)
			}
			docs, _ := walkAll(t, root)
			// Document ids follow the files' paths; name them by title path.
			var pairs []string
			for _, d := range docs {
				pairs = append(pairs, d.DocID, "<"+strings.Join(d.TitlePath, "/")+">")
			}
			names := strings.NewReplacer(pairs...)
			var out []string
			for _, d := range docs {
				out = append(out, names.Replace(d.DocID+" "+strings.Join(d.TitlePath, "/")))
				for _, b := range d.Blocks {
					out = append(out, names.Replace(b.ID+" "+b.ParentID+" "+strings.Join(b.Refs, ",")))
				}
			}
			return out
		}
		a := ids(filepath.Join(t.TempDir(), "vault"))
		b := ids(filepath.Join(t.TempDir(), "elsewhere", "my notes"))
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Errorf("ids differ between roots:\n%q\n%q", a, b)
		}
	})
}

func TestWalk(t *testing.T) {
	t.Run("a missing path is an error before anything is visited", func(t *testing.T) {
		called := false
		err := Walk([]string{"testdata/vault", "testdata/no-such-folder"}, func(*schemas.DocChanged) error {
			called = true
			return nil
		}, nil)
		if err == nil || !strings.Contains(err.Error(), "no-such-folder") || called {
			t.Errorf("err = %v, fn called = %v", err, called)
		}
	})
	t.Run("an error from fn stops the walk and is returned", func(t *testing.T) {
		stop := os.ErrClosed
		n := 0
		err := Walk([]string{"testdata/vault"}, func(*schemas.DocChanged) error {
			n++
			return stop
		}, nil)
		if err != stop || n != 1 {
			t.Errorf("err = %v after %d documents", err, n)
		}
	})
	t.Run("a single file uses its folder as the root", func(t *testing.T) {
		docs, errs := walkAll(t, "testdata/vault/sub/deep.md", "testdata/vault/other.md")
		if len(errs) != 0 || len(docs) != 2 {
			t.Fatalf("docs %d, errs %v", len(docs), errs)
		}
		if docs[0].DocID != MarkdownDocID("testdata/vault/sub/deep.md") || docs[1].DocID != MarkdownDocID("testdata/vault/other.md") {
			t.Errorf("DocIDs %s, %s", docs[0].DocID, docs[1].DocID)
		}
		// From sub/ the vault's other files are out of reach: no refs resolve.
		if refs := docs[0].Blocks[0].Refs; len(refs) != 0 {
			t.Errorf("refs = %q, want none", refs)
		}
	})
	t.Run("a file that cannot be read goes to onErr with its name and the walk goes on", func(t *testing.T) {
		dir := t.TempDir()
		gone := filepath.Join(dir, "gone.md")
		if err := os.Symlink(filepath.Join(dir, "nowhere.md"), gone); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "here.md", "Still here.\n")
		docs, errs := walkAll(t, dir)
		if err := errs[gone]; err == nil || !strings.Contains(err.Error(), gone) || len(errs) != 1 {
			t.Errorf("onErr = %v, want one error naming %s", errs, gone)
		}
		if len(docs) != 1 || filepath.Base(docs[0].Path) != "here.md" {
			t.Errorf("docs %d, want here.md", len(docs))
		}
	})
	t.Run("a non-document file given by name goes to onErr", func(t *testing.T) {
		docs, errs := walkAll(t, "testdata/vault/notes.txt")
		if len(docs) != 0 || len(errs) != 1 {
			t.Errorf("docs %d, errs %v", len(docs), errs)
		}
	})
	t.Run("a single .sy file finds its notebook and ancestors", func(t *testing.T) {
		p := filepath.Join(guideDir, "20210808180117-6v0mkxr/20200923234011-ieuun1p/20210808180303-axh6q1d.sy")
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SiYuan guide not found at %s: %v", guideDir, err)
		}
		docs, errs := walkAll(t, p)
		if len(errs) != 0 || len(docs) != 1 {
			t.Fatalf("docs %d, errs %v", len(docs), errs)
		}
		want := []string{"SiYuan User Guide", "Please Start Here", "Custom Appearance"}
		if d := docs[0]; d.Notebook != "20210808180117-6v0mkxr" || !reflect.DeepEqual(d.TitlePath, want) {
			t.Errorf("Notebook %s, TitlePath %q", d.Notebook, d.TitlePath)
		}
	})
}
