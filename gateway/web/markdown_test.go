package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The answer's Markdown renderer (renderMarkdown in app.js), run in
// Chromium on the page itself: what each construct becomes, and what must
// stay text.
func TestTheAnswerRendererMakesMarkdownIntoSafeElements(t *testing.T) {
	ctx := newBrowser(t)
	srv := scriptedGateway(t, newScriptedBackend())
	p := pageDriver{t: t, ctx: ctx}
	p.do("open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`body[data-ready="true"]`))
	tests := []struct {
		name, src string
		marks     bool // ** marks search matches (search-only answers)
		want      string
	}{
		{"a paragraph is a paragraph", "Crows use tools.", false,
			`<p>Crows use tools.</p>`},
		{"a line break inside a paragraph is kept", "Вороны\nпомнят лица.", false,
			`<p>Вороны<br>помнят лица.</p>`},
		{"dashes and stars make a bulleted list", "- one\n* two", false,
			`<ul class="md-list"><li>one</li><li>two</li></ul>`},
		{"numbers make a numbered list that keeps its start", "3. третий\n4. четвёртый", false,
			`<ol class="md-list" start="3"><li>третий</li><li>четвёртый</li></ol>`},
		{"an indented item nests", "- crows\n  - ravens\n- rooks", false,
			`<ul class="md-list"><li>crows<ul class="md-list"><li>ravens</li></ul></li><li>rooks</li></ul>`},
		{"a list after a lead line ends the paragraph", "Passages:\n1. first\n2. second", false,
			`<p>Passages:</p><ol class="md-list"><li>first</li><li>second</li></ol>`},
		{"a pipe table becomes a table that scrolls in its own box", "| Bird | Tool |\n|---|:-:|\n| Crow | hook |", false,
			`<div class="table-scroll md-table"><table><thead><tr><th>Bird</th><th class="align-center">Tool</th></tr></thead>` +
				`<tbody><tr><td>Crow</td><td class="align-center">hook</td></tr></tbody></table></div>`},
		{"a table row short of cells is padded", "| a | b |\n|---|---|\n| 1 |", false,
			`<div class="table-scroll md-table"><table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td></td></tr></tbody></table></div>`},
		{"a fenced block keeps markup as text", "```html\n<b>x</b>\n```", false,
			`<pre class="md-code"><code data-lang="html">&lt;b&gt;x&lt;/b&gt;</code></pre>`},
		{"inline code keeps stars as text", "run `a **b**`", false,
			`<p>run <code class="md-inline-code">a **b**</code></p>`},
		{"double stars are bold and single ones italic", "**жирный** and *курсив*", false,
			`<p><strong>жирный</strong> and <em>курсив</em></p>`},
		{"in a search-only answer double stars mark a match", "Crows use **tools**", true,
			`<p>Crows use <mark class="match">tools</mark></p>`},
		{"underscores inside a word are not emphasis", "no_llm_provider and snake_case", false,
			`<p>no_llm_provider and snake_case</p>`},
		{"a heading is a heading below the question's", "## Итог", false,
			`<h4 class="md-h">Итог</h4>`},
		{"a quote is a quote", "> said the note", false,
			`<blockquote class="md-quote"><p>said the note</p></blockquote>`},
		{"an https link opens in a new tab", "[paper](https://example.org/a)", false,
			`<p><a href="https://example.org/a" class="md-link" target="_blank" rel="noopener noreferrer">paper</a></p>`},
		{"a siyuan link opens SiYuan", "[block](siyuan://blocks/20261121100831-abcdefg)", false,
			`<p><a href="siyuan://blocks/20261121100831-abcdefg" class="md-link">block</a></p>`},
		{"the gateway's note view is a link", "[note](/notes/md-1#b2)", false,
			`<p><a href="/notes/md-1#b2" class="md-link" target="_blank" rel="noopener noreferrer">note</a></p>`},
		{"a javascript link is text", "[click](javascript:alert(1))", false,
			`<p>[click](javascript:alert(1))</p>`},
		{"a data link is text", "[x](data:text/html,<script>alert(1)</script>)", false,
			`<p>[x](data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;)</p>`},
		{"a protocol-relative link is text", "[x](//evil.example/a)", false,
			`<p>[x](//evil.example/a)</p>`},
		{"another gateway path is text", "[x](/v1/ingest)", false,
			`<p>[x](/v1/ingest)</p>`},
		{"an image is not loaded", "![pic](https://example.org/p.png)", false,
			`<p>!<a href="https://example.org/p.png" class="md-link" target="_blank" rel="noopener noreferrer">pic</a></p>`},
		{"raw HTML is text", `<img src=x onerror="alert(1)"><script>alert(1)</script>`, false,
			`<p>&lt;img src=x onerror="alert(1)"&gt;&lt;script&gt;alert(1)&lt;/script&gt;</p>`},
		{"a bare https address is a link", "see https://example.org/a.", false,
			`<p>see <a href="https://example.org/a" class="md-link" target="_blank" rel="noopener noreferrer">https://example.org/a</a>.</p>`},
		{"a backslash keeps a star literal", `\*not italic\*`, false,
			`<p>*not italic*</p>`},
		{"a citation marker without citations stays text", "Crows use tools [1].", false,
			`<p>Crows use tools [1].</p>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p.t = t
			strong := "strong"
			if tc.marks {
				strong = "mark"
			}
			got := evalIn[string](p, `(() => { const d = document.createElement('div'); d.append(renderMarkdown(`+jsString(tc.src)+`, {strong: '`+strong+`'}));
				return d.innerHTML; })()`)
			if got != tc.want {
				t.Errorf("%q renders as\n%s\nwant\n%s", tc.src, got, tc.want)
			}
		})
	}
}
