package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/notes"
)

// A SiYuan notebook on disk (as the files source reads it): one Russian
// document with headings, a list and a paragraph holding markup.
const (
	syBox     = "20260101120000-box0001"
	syDoc     = "20260101120000-doc0001"
	syTools   = "20260101120000-hea0001"
	syBend    = "20260101120000-par0001"
	syList    = "20260101120000-lst0001"
	syItem    = "20260101120000-itm0001"
	syFaces   = "20260101120000-par0002"
	syMemory  = "20260101120000-hea0002"
	syHostile = "20260101120000-par0003"
)

func syNode(id, typ, extra, children string) string {
	return `{"ID":"` + id + `","Type":"` + typ + `"` + extra + `,"Properties":{"id":"` + id + `"},"Children":[` + children + `]}`
}

func syText(s string) string { return `{"Type":"NodeText","Data":` + jsonStr(s) + `}` }

func writeSiYuanNotebook(t *testing.T, root string) {
	t.Helper()
	nb := filepath.Join(root, syBox)
	if err := os.MkdirAll(filepath.Join(nb, ".siyuan"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(nb, ".siyuan", "conf.json"), `{"name":"Птицы"}`)
	doc := `{"ID":"` + syDoc + `","Spec":"2","Type":"NodeDocument","Properties":{"id":"` + syDoc + `","title":"Вороны","updated":"20260101120000"},"Children":[` +
		strings.Join([]string{
			syNode(syTools, "NodeHeading", `,"HeadingLevel":2`, syText("Орудия")),
			syNode(syBend, "NodeParagraph", "", syText("Вороны гнут проволоку в крючки, чтобы достать еду.")),
			syNode(syList, "NodeList", `,"ListData":{}`, syNode(syItem, "NodeListItem", "", syNode(syFaces, "NodeParagraph", "", syText("Запоминают лица людей годами.")))),
			syNode(syMemory, "NodeHeading", `,"HeadingLevel":3`, syText("Память")),
			syNode(syHostile, "NodeParagraph", "", syText(`Опасный текст <script>alert(1)</script> и <img src=x onerror=alert(2)> остаётся текстом.`)),
		}, ",") + `]}`
	writeFile(t, filepath.Join(nb, syDoc+".sy"), doc)
}

// page is a parsed note view.
type page struct {
	status int
	header http.Header
	raw    string
	root   *html.Node
}

func getPage(t *testing.T, u string, header ...string) page {
	t.Helper()
	resp := get(t, u, header...)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	root, err := html.Parse(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("%s: not HTML: %v", u, err)
	}
	return page{status: resp.StatusCode, header: resp.Header, raw: string(raw), root: root}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// each calls fn for every element in document order.
func (p page) each(fn func(n *html.Node)) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			fn(n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(p.root)
}

// blockIDs are the ids of the page's block elements, in order.
func (p page) blockIDs() []string {
	var ids []string
	p.each(func(n *html.Node) {
		class, _ := attr(n, "class")
		if id, ok := attr(n, "id"); ok && slices.Contains(strings.Fields(class), "b") {
			ids = append(ids, id)
		}
	})
	return ids
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// byID is the element with the id, or nil.
func (p page) byID(id string) *html.Node {
	var out *html.Node
	p.each(func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == id && out == nil {
			out = n
		}
	})
	return out
}

// headings are the page's headings as "h2 Text".
func (p page) headings() []string {
	var out []string
	p.each(func(n *html.Node) {
		if len(n.Data) == 2 && n.Data[0] == 'h' && n.Data[1] >= '1' && n.Data[1] <= '6' {
			out = append(out, n.Data+" "+strings.TrimSpace(textOf(n)))
		}
	})
	return out
}

// checkSafe fails on anything in the page that could run: a script
// element, an event handler attribute, a link or source that is not
// http(s), siyuan:// or the gateway's own (/...).
func (p page) checkSafe(t *testing.T) {
	t.Helper()
	p.each(func(n *html.Node) {
		switch n.Data {
		case "script", "iframe", "object", "embed", "form", "input", "base", "meta" + "-refresh":
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" {
				t.Errorf("<%s> has the attribute %s=%q", n.Data, a.Key, a.Val)
			}
			if a.Key == "href" || a.Key == "src" {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if !(strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "siyuan://") ||
					(strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//"))) {
					t.Errorf("<%s %s=%q> leads somewhere the note view does not link to", n.Data, a.Key, a.Val)
				}
			}
		}
	})
}

// checkStyle checks the page's one inline style sheet has the highlight
// rule and is the one its Content-Security-Policy allows by hash.
func (p page) checkStyle(t *testing.T) {
	t.Helper()
	var styles []string
	p.each(func(n *html.Node) {
		if n.Data == "style" {
			styles = append(styles, textOf(n))
		}
	})
	if len(styles) != 1 || !strings.Contains(styles[0], ".b:target") {
		t.Fatalf("style sheets %d, want one with the .b:target highlight", len(styles))
	}
	sum := sha256.Sum256([]byte(styles[0]))
	csp := p.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") ||
		!strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") && !strings.Contains(csp, "script-src 'none'") {
		t.Errorf("CSP %q does not allow exactly this style sheet and no script", csp)
	}
}

func TestTheNoteViewShowsMarkdownAndSiYuanDocumentsWholeWithTheirBlocksInOrder(t *testing.T) {
	e := startEnv(t)
	vault := t.TempDir()
	garden := filepath.Join(vault, "garden.md")
	writeFile(t, garden, "# Garden\n\nTomatoes need sun.\n\n## Tools\n\n- Spade\n- Rake\n  - Leaf rake\n\n"+
		"| Tool | Use |\n|---|---|\n| Spade | digging |\n\n```go\nfmt.Println(\"<b>hi</b>\")\n```\n\n"+
		"<div onclick=\"steal()\">raw markup</div>\n\nLast words.\n")
	writeSiYuanNotebook(t, vault)
	gatewaytest.SyncPaths(t, e.sys.Bus, vault)
	gatewaytest.WaitIdle(t, e.sys.Bus)
	_, hs := e.serve(t, gateway.Config{}, nil)
	mdID := notes.MarkdownDocID(garden)

	cases := []struct {
		name, docID, lang, accept string
		headings                  []string
		texts                     []string // in this order on the page
		labels                    []string
		siyuan                    bool
	}{
		{name: "a Markdown note in English shows its file path and no file link", docID: mdID, lang: "en",
			headings: []string{"h1 Garden", "h2 Tools"},
			texts:    []string{"Tomatoes need sun.", "Spade", "Rake", "Leaf rake", "digging", `fmt.Println("<b>hi</b>")`, `<div onclick="steal()">raw markup</div>`, "Last words."},
			labels:   []string{"Markdown file", garden, "← Exocortex"}},
		{name: "a SiYuan note in Russian shows its notebook and titles and opens in SiYuan", docID: syDoc, lang: "ru",
			headings: []string{"h1 Вороны", "h2 Орудия", "h3 Память"},
			texts:    []string{"Вороны гнут проволоку", "Запоминают лица", "<script>alert(1)</script>", "<img src=x onerror=alert(2)>"},
			labels:   []string{"SiYuan", "Птицы / Вороны", "Открыть в SiYuan"}, siyuan: true},
		{name: "the Russian page is chosen by Accept-Language", docID: mdID, accept: "ru-RU,ru;q=0.9,en;q=0.5",
			headings: []string{"h1 Garden", "h2 Tools"}, texts: []string{"Tomatoes need sun."}, labels: []string{"Файл Markdown"}},
		{name: "the English page is chosen by Accept-Language", docID: syDoc, accept: "en-GB,en;q=0.9,ru;q=0.3",
			headings: []string{"h1 Вороны", "h2 Орудия", "h3 Память"}, texts: []string{"Вороны гнут проволоку"}, labels: []string{"Open in SiYuan"}, siyuan: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := e.sys.Store.Document(context.Background(), c.docID)
			if err != nil {
				t.Fatal(err)
			}
			var wantIDs []string
			for _, b := range want.Blocks {
				wantIDs = append(wantIDs, b.BlockID)
			}
			u := hs.URL + gateway.NotePath(c.docID)
			if c.lang != "" {
				u += "?lang=" + c.lang
			}
			var hdr []string
			if c.accept != "" {
				hdr = []string{"Accept-Language", c.accept}
			}
			p := getPage(t, u, hdr...)
			if p.status != 200 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
				t.Fatalf("status %d %s: %s", p.status, p.header.Get("Content-Type"), p.raw)
			}
			if got := p.blockIDs(); len(wantIDs) < 5 || !slices.Equal(got, wantIDs) {
				t.Errorf("block elements %v,\nwant every block of the index in order %v", got, wantIDs)
			}
			if got := p.headings(); !slices.Equal(got, c.headings) {
				t.Errorf("headings %q, want %q", got, c.headings)
			}
			body := textOf(p.root)
			at := 0
			for _, s := range c.texts {
				i := strings.Index(body[at:], s)
				if i < 0 {
					t.Errorf("the page lacks %q after offset %d", s, at)
					continue
				}
				at += i + len(s)
			}
			for _, s := range c.labels {
				if !strings.Contains(body, s) {
					t.Errorf("the page lacks %q", s)
				}
			}
			hasSiYuan := strings.Contains(p.raw, `href="siyuan://blocks/`+syDoc+`"`)
			if hasSiYuan != c.siyuan {
				t.Errorf("a siyuan:// link to the document: %v, want %v", hasSiYuan, c.siyuan)
			}
			if strings.Contains(p.raw, "file://") {
				t.Error("the page has a file:// link")
			}
			p.checkSafe(t)
			p.checkStyle(t)
		})
	}

	t.Run("the cited block is highlighted by ?block= and the fragment finds it", func(t *testing.T) {
		p := getPage(t, hs.URL+gateway.NotePath(syDoc)+"?block="+syFaces+"#"+syFaces)
		n := p.byID(syFaces)
		if n == nil {
			t.Fatalf("no element with id %s", syFaces)
		}
		if class, _ := attr(n, "class"); !strings.Contains(class, "cited") || !strings.Contains(textOf(n), "Запоминают лица") {
			t.Errorf("the cited block: class %q text %q", class, textOf(n))
		}
		if strings.Contains(textOf(n), "- ") {
			t.Errorf("the list item shows the chunk stage's marker: %q", textOf(n))
		}
		if li := n.Parent; li == nil || li.Data != "li" {
			t.Errorf("the item's paragraph is not in a list item")
		}
	})
	t.Run("a block no longer in the document gets a notice in the page's language", func(t *testing.T) {
		p := getPage(t, hs.URL+gateway.NotePath(syDoc)+"?lang=ru&block=20260101120000-gone000")
		if p.status != 200 || !strings.Contains(textOf(p.root), "Процитированного блока 20260101120000-gone000 в этом документе больше нет") {
			t.Errorf("status %d, no notice: %s", p.status, textOf(p.root))
		}
	})
	t.Run("JSON clients get the document", func(t *testing.T) {
		var d gateway.Document
		decodeAs(t, get(t, hs.URL+gateway.NotePath(syDoc), "Accept", "application/json"), 200, &d)
		if d.Title != "Вороны" || d.Source != "siyuan" || d.Link != "siyuan://blocks/"+syDoc || len(d.Blocks) < 5 {
			t.Fatalf("document %+v", d)
		}
		if b := d.Blocks[slices.IndexFunc(d.Blocks, func(b gateway.DocBlock) bool { return b.ID == syMemory })]; b.Text != "### Память" ||
			strings.Join(b.SectionPath, " > ") != "Птицы > Вороны > Орудия" || b.Link != "siyuan://blocks/"+syMemory {
			t.Errorf("heading block %+v", b)
		}
	})
	t.Run("a document not in the index is 404 with a sentence saying so, as a page or as JSON", func(t *testing.T) {
		p := getPage(t, hs.URL+"/notes/md-0123456789abcdef?lang=en", "Accept", "text/html")
		if p.status != 404 || !strings.Contains(textOf(p.root), "The document md-0123456789abcdef is not in the index") {
			t.Errorf("page: %d %s", p.status, textOf(p.root))
		}
		p = getPage(t, hs.URL+"/notes/md-0123456789abcdef", "Accept-Language", "ru")
		if p.status != 404 || !strings.Contains(textOf(p.root), "Документа md-0123456789abcdef нет в индексе") {
			t.Errorf("Russian page: %d %s", p.status, textOf(p.root))
		}
		wantError(t, get(t, hs.URL+"/notes/md-0123456789abcdef", "Accept", "application/json"), 404, "not_found", "not in the index")
	})
}

// docBackend serves documents from memory (the other Backend methods are
// not called).
type docBackend struct {
	gateway.Backend
	docs map[string]*gateway.Document
}

func (b docBackend) Document(ctx context.Context, id string) (*gateway.Document, error) {
	return b.docs[id], nil
}

func serveDocs(t *testing.T, token string, docs ...*gateway.Document) string {
	t.Helper()
	be := docBackend{docs: map[string]*gateway.Document{}}
	for _, d := range docs {
		be.docs[d.DocID] = d
	}
	addr := "127.0.0.1:0"
	if token != "" {
		addr = "0.0.0.0:0"
	}
	srv, err := gateway.New(gateway.Config{Addr: addr, Token: token, Log: testLog(t)}, be, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return httptestServer(t, srv.Handler())
}

func TestHostileNoteTextIsShownAsTextAndItsLinksAreKeptOnlyToSafePlaces(t *testing.T) {
	doc := &gateway.Document{DocID: "md-hostile", Title: `Title <script>alert("t")</script>`, Source: "markdown", Path: "/notes/<b>x</b>.md",
		Blocks: []gateway.DocBlock{
			{ID: "b1", Type: "paragraph", Text: `Plain <script>alert(1)</script> and <img src=x onerror=alert(2)> and <a href="javascript:alert(3)">a</a>.`},
			{ID: "b2", Type: "paragraph", Text: `[js](javascript:alert(4)) [JS](JaVaScRiPt:alert(5)) [data](data:text/html;base64,PHNjcmlwdD4=) ` +
				`[file](file:///etc/passwd) [proto](//evil.example/x) [vb](vbscript:msgbox) <javascript:alert(6)>`},
			{ID: "b3", Type: "paragraph", Text: `[site](https://example.org/a) [sy](siyuan://blocks/20260101120000-abcdefg) [other note](/notes/md-2#b9) <https://example.com/auto>`},
			{ID: "b4", Type: "paragraph", Text: `![pixel](https://evil.example/track.png) ![local](assets/x.png)`},
			{ID: "b5", Type: "html", Text: `<iframe src="https://evil.example"></iframe>`},
			{ID: `"><script>alert(7)</script>`, Type: "paragraph", Text: "An id that tries to break out."},
			{ID: "b7", Type: "paragraph", Text: "<style>body{display:none}</style>\n\n<form action=https://evil.example><input name=p></form>"},
		}}
	hs := serveDocs(t, "", doc)
	p := getPage(t, hs+gateway.NotePath(doc.DocID))
	if p.status != 200 {
		t.Fatalf("status %d: %s", p.status, p.raw)
	}
	p.checkSafe(t)
	p.checkStyle(t) // the note's <style> is text, not a second style sheet
	body := textOf(p.root)
	for _, s := range []string{`<script>alert(1)</script>`, `<img src=x onerror=alert(2)>`, `<iframe src="https://evil.example"></iframe>`,
		`Title <script>alert("t")</script>`, "/notes/<b>x</b>.md", "js JS data file proto vb", "pixel local", "<style>body{display:none}</style>"} {
		if !strings.Contains(body, s) {
			t.Errorf("the page does not show %q as text", s)
		}
	}
	var links []string
	p.each(func(n *html.Node) {
		if href, ok := attr(n, "href"); ok && n.Data == "a" && href != "/" {
			links = append(links, href)
			if rel, _ := attr(n, "rel"); strings.HasPrefix(href, "http") && !strings.Contains(rel, "noreferrer") {
				t.Errorf("link %s has rel %q, want noreferrer", href, rel)
			}
		}
	})
	want := []string{"https://example.org/a", "siyuan://blocks/20260101120000-abcdefg", "/notes/md-2#b9", "https://example.com/auto", "https://evil.example/track.png"}
	if !slices.Equal(links, want) {
		t.Errorf("links %q,\nwant %q", links, want)
	}
	if p.byID(`"><script>alert(7)</script>`) == nil {
		t.Error("the block with a hostile id has no element with that id")
	}
}

func TestTheNoteViewNeedsTheTokenOrASignedLinkWhenTheGatewayHasAToken(t *testing.T) {
	doc := &gateway.Document{DocID: "md-secret", Title: "Secret", Source: "markdown", Path: "/n/secret.md",
		Blocks: []gateway.DocBlock{{ID: "md-secret#b1", Type: "paragraph", Text: "The safe code is 1234."}}}
	other := &gateway.Document{DocID: "md-other", Title: "Other", Source: "markdown", Blocks: []gateway.DocBlock{{ID: "o1", Text: "Other text."}}}
	hs := serveDocs(t, "s3cret", doc, other)
	note := hs + gateway.NotePath(doc.DocID)

	// The link route itself needs the bearer token.
	wantError(t, get(t, hs+"/v1/notes/md-secret/link"), 401, "unauthorized", "token")
	var link gateway.NoteLink
	decodeAs(t, get(t, hs+"/v1/notes/md-secret/link?block="+url.QueryEscape("md-secret#b1"), "Authorization", "Bearer s3cret"), 200, &link)
	if !strings.HasPrefix(link.URL, "/notes/md-secret?t=") || !strings.HasSuffix(link.URL, "#md-secret%23b1") || link.ExpiresAt == nil ||
		time.Until(*link.ExpiresAt) > gateway.NoteLinkTTL || time.Until(*link.ExpiresAt) < gateway.NoteLinkTTL-time.Minute {
		t.Fatalf("link %+v", link)
	}
	signed, _, _ := strings.Cut(link.URL, "#")
	t0, _ := url.Parse(signed)
	tok := t0.Query().Get("t")

	cases := []struct {
		name   string
		url    string
		header []string
		status int
		text   string
	}{
		{"without the token a browser gets a page that says what to do", note + "?lang=en", nil, 401, "needs the gateway's access token"},
		{"without the token a Russian browser gets it in Russian", note, []string{"Accept-Language", "ru"}, 401, "открывается только с токеном доступа"},
		{"a wrong bearer token is refused", note, []string{"Authorization", "Bearer wrong"}, 401, "access token"},
		{"the bearer token opens it", note, []string{"Authorization", "Bearer s3cret"}, 200, "The safe code is 1234."},
		{"the bearer scheme in any case opens it", note, []string{"Authorization", "bearer s3cret"}, 200, "The safe code is 1234."},
		{"the signed link opens it without a header", hs + signed, nil, 200, "The safe code is 1234."},
		{"a signed link with another time is refused", hs + "/notes/md-secret?t=" + bump(tok), nil, 401, "access token"},
		{"a signed link of one note does not open another", hs + "/notes/md-other?t=" + url.QueryEscape(tok), nil, 401, "access token"},
		{"an expired signed link says it expired", hs + "/notes/md-secret?lang=en&t=" + gateway.SignNoteLink("s3cret", "md-secret", time.Now().Add(-time.Second)), nil, 401, "has expired"},
		{"an expired signed link says it in Russian", hs + "/notes/md-secret?lang=ru&t=" + gateway.SignNoteLink("s3cret", "md-secret", time.Now().Add(-time.Second)), nil, 401, "Срок действия ссылки"},
		{"a link signed with another token is refused", hs + "/notes/md-secret?t=" + gateway.SignNoteLink("other", "md-secret", time.Now().Add(time.Minute)), nil, 401, "access token"},
		{"a path under /notes/ that is not a note gets no exemption", hs + "/notes/md-secret/x", nil, 401, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := getPage(t, c.url, c.header...)
			if p.status != c.status || !strings.Contains(textOf(p.root), c.text) {
				t.Errorf("status %d, want %d with %q: %s", p.status, c.status, c.text, textOf(p.root))
			}
			if c.status == 401 && strings.Contains(p.raw, "1234") {
				t.Error("the refused page holds the note's text")
			}
		})
	}
	wantError(t, get(t, note, "Accept", "application/json"), 401, "unauthorized", "Bearer")
	wantError(t, get(t, hs+"/notes/md-secret?t="+gateway.SignNoteLink("s3cret", "md-secret", time.Now().Add(-time.Second)), "Accept", "application/json"),
		401, "unauthorized", "expired")
}

func TestWithoutATokenTheNoteLinkIsThePlainPath(t *testing.T) {
	hs := serveDocs(t, "")
	var link gateway.NoteLink
	decodeAs(t, get(t, hs+"/v1/notes/"+url.PathEscape("md-a b")+"/link?block=x"), 200, &link)
	if link.URL != "/notes/md-a%20b#x" || link.ExpiresAt != nil {
		t.Errorf("link %+v, want the plain path with the fragment", link)
	}
}

func TestABackendThatCannotReadDocumentsAnswers503(t *testing.T) {
	srv, err := gateway.New(gateway.Config{Log: testLog(t)}, nil, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptestServer(t, srv.Handler())
	wantError(t, get(t, hs+"/notes/md-x", "Accept", "application/json"), 503, "unavailable", "cannot read documents")
	if p := getPage(t, hs+"/notes/md-x?lang=ru"); p.status != 503 || !strings.Contains(textOf(p.root), "Заметки недоступны") {
		t.Errorf("page %d %s", p.status, textOf(p.root))
	}
}

// httptestServer serves h until the test ends; it returns the base URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// bump changes the time of a signed link's value, keeping its signature.
func bump(t string) string {
	exp, sig, _ := strings.Cut(t, ".")
	return exp + "9." + sig
}
