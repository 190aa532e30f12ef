package gateway

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html"
	"html/template"
	"net/http"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/text/language"

	"github.com/exocortex/exocortex/schemas"
)

// How the note view turns a Document into a page: each block's text is
// Markdown rendered by goldmark (raw HTML in a note shown as text, links
// kept only to http(s), siyuan:// and the note view), then sanitized by
// bluemonday's UGC policy; the page's own markup (block elements with the
// block ids, the header) is written around it. The style sheet is inline,
// allowed by its hash in the Content-Security-Policy: the page runs no
// script and loads nothing but same-origin images.

//go:embed notes.css
var notesCSS string

// notesCSP is the note view's Content-Security-Policy: no script at all,
// the one inline style sheet by its hash, images from the gateway only, and
// framed only by the gateway's own page.
var notesCSP = func() string {
	sum := sha256.Sum256([]byte(notesCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; img-src 'self' data:; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
}()

// labels are the note view's words in one language.
type labels struct {
	Back, Markdown, SiYuan, OpenSiYuan, OpenBlock, Empty, NoBlock string
	NotFoundTitle, NotFound, TokenTitle, TokenNeeded, Expired     string
	UnavailableTitle, Unavailable                                 string
}

// noteLabels are the note view's words by language (en, ru).
var noteLabels = map[string]labels{
	"en": {
		Back: "← Exocortex", Markdown: "Markdown file", SiYuan: "SiYuan", OpenSiYuan: "Open in SiYuan",
		OpenBlock: "Open this block in SiYuan", Empty: "The index holds no text of this document.",
		NoBlock:          "The cited block %s is not in this document any more: the note has changed since.",
		NotFoundTitle:    "Note not found",
		NotFound:         "The document %s is not in the index: it was deleted or moved, or is not indexed yet. Ingest its folder again (exocortex ingest) or search for it from the page.",
		TokenTitle:       "Access token needed",
		TokenNeeded:      "This note needs the gateway's access token (EXOCORTEX_HTTP_TOKEN). Open it from a citation on the page, which signs the link, or send the header Authorization: Bearer <token>.",
		Expired:          "This note link has expired (links open their note for 15 minutes). Open the citation again from the page.",
		UnavailableTitle: "Notes unavailable", Unavailable: "This gateway cannot read the index, so it cannot show notes.",
	},
	"ru": {
		Back: "← Exocortex", Markdown: "Файл Markdown", SiYuan: "SiYuan", OpenSiYuan: "Открыть в SiYuan",
		OpenBlock: "Открыть этот блок в SiYuan", Empty: "В индексе нет текста этого документа.",
		NoBlock:          "Процитированного блока %s в этом документе больше нет: заметка с тех пор изменилась.",
		NotFoundTitle:    "Заметка не найдена",
		NotFound:         "Документа %s нет в индексе: он удалён, перемещён или ещё не проиндексирован. Проиндексируйте его папку снова (exocortex ingest) или найдите его поиском на странице.",
		TokenTitle:       "Нужен токен доступа",
		TokenNeeded:      "Эта заметка открывается только с токеном доступа шлюза (EXOCORTEX_HTTP_TOKEN). Откройте её по ссылке-цитате на странице — страница подписывает ссылку — или передайте заголовок Authorization: Bearer <токен>.",
		Expired:          "Срок действия ссылки на заметку истёк (ссылка открывает заметку 15 минут). Откройте цитату на странице ещё раз.",
		UnavailableTitle: "Заметки недоступны", Unavailable: "Этот шлюз не может прочитать индекс, поэтому не показывает заметки.",
	},
}

var langMatcher = language.NewMatcher([]language.Tag{language.English, language.Russian})

// noteLang is the page's language: ?lang=ru|en, else the best of
// Accept-Language, else English.
func noteLang(r *http.Request) string {
	switch l := r.URL.Query().Get("lang"); l {
	case "ru", "en":
		return l
	}
	tags, _, err := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	if err != nil || len(tags) == 0 {
		return "en"
	}
	_, i, conf := langMatcher.Match(tags...)
	if i == 1 && conf != language.No {
		return "ru"
	}
	return "en"
}

// notePage is what the page template shows: a document, or a message.
type notePage struct {
	Lang    string
	L       labels
	Title   string
	Message string
	// The document, when there is one.
	Doc        *Document
	ShowTitle  bool // false when the document's first block is its title as a heading
	SourceName string
	// Place is where the note lives: the Markdown file's path, or the
	// SiYuan notebook and titles down to the document.
	Place  string
	Link   template.URL
	Notice string
	Body   template.HTML
}

var notePageTmpl = template.Must(template.New("note").Parse(`<!doctype html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Title}} · Exocortex</title>
<style>` + notesCSS + `</style>
</head>
<body>
<nav class="bar"><a class="home" href="/">{{.L.Back}}</a></nav>
<main>
{{- if .Doc}}
<header class="doc">
{{- if .ShowTitle}}<h1 class="title">{{.Title}}</h1>{{end}}
<p class="source"><span class="kind">{{.SourceName}}</span> <span class="path">{{.Place}}</span>
{{- if .Link}} <a class="siyuan" href="{{.Link}}">{{.L.OpenSiYuan}}</a>{{end}}</p>
</header>
{{- if .Notice}}
<p class="notice" role="status">{{.Notice}}</p>
{{- end}}
<article class="note">
{{.Body}}
</article>
{{- else}}
<section class="message">
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
</section>
{{- end}}
</main>
</body>
</html>
`))

// writeNotePage writes p as the note view's page, with its headers.
func writeNotePage(w http.ResponseWriter, status int, p notePage) {
	var buf bytes.Buffer
	if err := notePageTmpl.Execute(&buf, p); err != nil {
		writeError(w, apiErr(CodeInternal, "render the note view: "+err.Error()))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", notesCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Language", p.Lang)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderDocument builds the page of doc; cited is the ?block= to
// highlight ("" for none).
func renderDocument(doc *Document, lang, cited string) notePage {
	l := noteLabels[lang]
	p := notePage{Lang: lang, L: l, Title: doc.Title, Doc: doc, ShowTitle: true, SourceName: l.Markdown, Place: doc.Path}
	if p.Title == "" {
		p.Title = doc.DocID
	}
	if doc.Source == schemas.SourceSiYuan {
		p.SourceName = l.SiYuan
		if len(doc.TitlePath) > 0 {
			p.Place = strings.Join(doc.TitlePath, " / ")
		}
		if strings.HasPrefix(doc.Link, "siyuan://") {
			p.Link = template.URL(doc.Link)
		}
	}
	r := &docRenderer{doc: doc, cited: cited, l: l, children: map[string][]int{}, ids: map[string]bool{}}
	for _, b := range doc.Blocks {
		r.ids[b.ID] = true
	}
	for i, b := range doc.Blocks {
		parent := b.ParentID
		if parent == doc.DocID || !r.ids[parent] {
			parent = ""
		}
		r.children[parent] = append(r.children[parent], i)
	}
	for _, i := range r.children[""] {
		r.block(i, false)
	}
	p.Body = template.HTML(r.out.String())
	if r.firstText != nil && r.firstText.Type == schemas.BlockHeading && strings.TrimSpace(strings.TrimLeft(r.firstText.Text, "#")) == doc.Title &&
		strings.HasPrefix(r.firstText.Text, "# ") {
		p.ShowTitle = false
	}
	switch {
	case cited != "" && !r.ids[cited]:
		p.Notice = strings.Replace(l.NoBlock, "%s", cited, 1)
	case r.texts == 0:
		p.Notice = l.Empty
	}
	return p
}

// docRenderer writes a document's blocks as a tree: containers (lists,
// quotes, callouts) as elements around their children.
type docRenderer struct {
	doc       *Document
	cited     string
	l         labels
	children  map[string][]int // parent id ("" top) -> block indexes in order
	ids       map[string]bool
	out       strings.Builder
	bullet    bool // a list item's marker waits for the item's first text (as the chunk stage writes it)
	texts     int
	firstText *DocBlock
}

var bulletRe = regexp.MustCompile(`^[ \t]*- `)

// block writes block i and its subtree; inList tells whether the parent
// element is a list, so an item is an <li>.
func (r *docRenderer) block(i int, inList bool) {
	b := &r.doc.Blocks[i]
	tag := "div"
	switch b.Type {
	case schemas.BlockList:
		tag = "ul"
	case schemas.BlockListItem:
		tag = "li"
		r.bullet = true
	case schemas.BlockQuote:
		tag = "blockquote"
	case schemas.BlockCallout:
		tag = "aside"
	}
	wrapUL := tag == "li" && !inList
	wrapLI := inList && tag != "li"
	if wrapUL {
		r.out.WriteString("<ul class=\"b-list\">")
	}
	if wrapLI {
		r.out.WriteString("<li class=\"b-item\">")
	}
	class := "b b-" + classOf(b.Type)
	if b.ID == r.cited {
		class += " cited"
	}
	r.out.WriteString("<" + tag + ` class="` + class + `" id="` + html.EscapeString(b.ID) + `"`)
	if b.ID == r.cited {
		r.out.WriteString(` tabindex="-1" autofocus`)
	}
	if b.Lang == "ru" || b.Lang == "en" {
		r.out.WriteString(` lang="` + b.Lang + `"`)
	}
	if len(b.SectionPath) > 0 {
		r.out.WriteString(` title="` + html.EscapeString(strings.Join(b.SectionPath, " › ")) + `"`)
	}
	r.out.WriteString(">")
	if t := strings.TrimSpace(b.Text); t != "" {
		if r.bullet {
			t = bulletRe.ReplaceAllString(t, "")
			r.bullet = false
		}
		r.texts++
		if r.firstText == nil {
			r.firstText = b
		}
		r.out.WriteString(`<div class="t">`)
		r.out.WriteString(renderBlockText(b.Type, t))
		r.out.WriteString("</div>")
		if strings.HasPrefix(b.Link, "siyuan://") {
			r.out.WriteString(`<a class="open" href="` + html.EscapeString(b.Link) + `" title="` + html.EscapeString(r.l.OpenBlock) + `">↗</a>`)
		}
	}
	for _, c := range r.children[b.ID] {
		r.block(c, tag == "ul")
	}
	if b.Type == schemas.BlockListItem {
		r.bullet = false // an item without text does not pass its marker on
	}
	r.out.WriteString("</" + tag + ">")
	if wrapLI {
		r.out.WriteString("</li>")
	}
	if wrapUL {
		r.out.WriteString("</ul>")
	}
}

func classOf(typ string) string {
	if typ == "" {
		return "other"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r == '_' {
			return r
		}
		return '-'
	}, typ)
}

var (
	fenceRe     = regexp.MustCompile("^(```|~~~)")
	delimiterRe = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)
)

// renderBlockText is a block's text as sanitized HTML.
func renderBlockText(typ, t string) string {
	switch typ {
	case schemas.BlockCode:
		if !fenceRe.MatchString(t) {
			return `<pre><code>` + html.EscapeString(t) + `</code></pre>`
		}
	case schemas.BlockMath:
		return `<pre class="math">` + html.EscapeString(t) + `</pre>`
	case schemas.BlockHTML:
		return `<pre class="raw">` + html.EscapeString(t) + `</pre>`
	case schemas.BlockTable:
		t = withDelimiterRow(t)
	}
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(t), &buf); err != nil {
		return `<p>` + html.EscapeString(t) + `</p>`
	}
	return sanitizer.Sanitize(buf.String())
}

// withDelimiterRow adds the "| --- |" row a Markdown file's table text
// leaves out (the index keeps the header and body rows only).
func withDelimiterRow(t string) string {
	lines := strings.Split(t, "\n")
	if len(lines) >= 2 && delimiterRe.MatchString(strings.TrimSpace(lines[1])) {
		return t
	}
	head := strings.Trim(strings.TrimSpace(lines[0]), "|")
	n := strings.Count(head, "|") + 1
	row := "|" + strings.Repeat(" --- |", n)
	return strings.Join(append([]string{lines[0], row}, lines[1:]...), "\n")
}

var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkFilter{}, 100))),
	goldmark.WithRendererOptions(gmhtml.WithHardWraps(),
		renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))),
)

// sanitizer is bluemonday's policy for user content, with the links the
// note view keeps: http(s), siyuan:// and relative ones (the link filter
// keeps only /notes/ among those).
var sanitizer = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "siyuan")
	p.RequireNoReferrerOnLinks(true)
	return p
}()

// allowedLink reports whether a note's link may stay a link: http(s),
// siyuan:// or the note view (/notes/...).
func allowedLink(dest string) bool {
	d := strings.ToLower(strings.TrimSpace(dest))
	for _, p := range []string{"http://", "https://", "siyuan://"} {
		if strings.HasPrefix(d, p) {
			return true
		}
	}
	return strings.HasPrefix(d, "/notes/")
}

// linkFilter turns images into links (the page loads nothing from
// elsewhere) and links the note view does not keep into their text.
type linkFilter struct{}

func (linkFilter) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	src := reader.Source()
	var nodes []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n.(type) {
			case *ast.Link, *ast.Image, *ast.AutoLink:
				nodes = append(nodes, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range nodes {
		parent := n.Parent()
		if parent == nil {
			continue
		}
		switch v := n.(type) {
		case *ast.Image:
			link := ast.NewLink()
			link.Destination, link.Title = v.Destination, v.Title
			for c := v.FirstChild(); c != nil; {
				next := c.NextSibling()
				link.AppendChild(link, c)
				c = next
			}
			if !link.HasChildren() {
				link.AppendChild(link, ast.NewString(v.Destination))
			}
			parent.ReplaceChild(parent, v, link)
			if !allowedLink(string(link.Destination)) {
				unwrap(link)
			}
		case *ast.Link:
			if !allowedLink(string(v.Destination)) {
				unwrap(v)
			}
		case *ast.AutoLink:
			if !allowedLink(string(v.URL(src))) {
				parent.ReplaceChild(parent, v, ast.NewString(v.Label(src)))
			}
		}
	}
}

// unwrap replaces n by its children.
func unwrap(n ast.Node) {
	parent := n.Parent()
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		parent.InsertBefore(parent, n, c)
		c = next
	}
	parent.RemoveChild(parent, n)
}

// rawAsText renders raw HTML in a note as the text it is, so a note that
// holds markup shows it, and none of it runs.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := 0; i < segs.Len(); i++ {
				seg := segs.At(i)
				_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			_, _ = w.WriteString(`<pre class="raw">`)
			for i := 0; i < b.Lines().Len(); i++ {
				line := b.Lines().At(i)
				_, _ = w.WriteString(html.EscapeString(string(line.Value(src))))
			}
			return ast.WalkContinue, nil
		}
		if b.HasClosure() {
			closure := b.ClosureLine
			_, _ = w.WriteString(html.EscapeString(string(closure.Value(src))))
		}
		_, _ = w.WriteString("</pre>\n")
		return ast.WalkContinue, nil
	})
}
