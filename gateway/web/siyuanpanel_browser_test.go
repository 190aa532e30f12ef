package web_test

// The SiYuan plugin's dock panel (ops/siyuan-plugin) in Chromium: a
// harness page on its own origin plays SiYuan, providing the `siyuan`
// module the plugin uses (Plugin, addDock, openTab, getActiveEditor,
// fetchPost, showMessage, Setting) as a fake that records its calls, and
// an editor with blocks; the plugin talks to the real gateway over the
// scripted backend, across origins as in SiYuan. Screenshots of the dock
// go to $EXOCORTEX_SCREENSHOTS.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/exocortex/exocortex/gateway"
)

const pluginDir = "../../ops/siyuan-plugin"

// Blocks of the harness's open document.
const (
	panelDoc    = "20261121100831-doc0100"
	panelFirst  = "20261121100831-para100"
	panelList   = "20261121100831-list100"
	panelNested = "20261121100831-para101"
)

// harnessHTML plays SiYuan: an editor with a document and a dock, its width
// from ?w=.
const harnessHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SiYuan (harness)</title>
<style>
:root{--b3-theme-primary:#3575f0;--b3-theme-on-primary:#fff;--b3-theme-background:#fff;--b3-theme-surface:#f6f7f9;
 --b3-theme-on-background:#222;--b3-theme-on-surface:#5f6368;--b3-border-color:#e3e3e3;--b3-theme-primary-lightest:#e8effd}
html,body{margin:0;height:100%}
body{display:flex;font-family:"Noto Sans","DejaVu Sans",sans-serif;background:#fff}
.protyle{flex:1;min-width:0;padding:24px 32px;overflow:auto}
.protyle-wysiwyg [data-node-id]{margin:6px 0}
.protyle-wysiwyg [data-type="NodeList"]{padding-left:20px}
#dock{width:var(--dock-w,390px);flex:none;height:100%;border-left:1px solid #e3e3e3;overflow:hidden}
</style></head>
<body>
<div class="protyle"><h2>Birds</h2>
 <div class="protyle-wysiwyg" data-doc-type="NodeDocument">
  <div data-node-id="` + panelFirst + `" data-type="NodeParagraph"><div contenteditable="true">Notes on corvids and what they do.</div></div>
  <div data-node-id="` + panelList + `" data-type="NodeList"><div data-node-id="20261121100831-item100" data-type="NodeListItem">
   <div data-node-id="` + panelNested + `" data-type="NodeParagraph"><div contenteditable="true">A paragraph in a list item.</div></div></div></div>
  <div data-node-id="20261121100831-para102" data-type="NodeParagraph"><div contenteditable="true">The last paragraph.</div></div>
 </div></div>
<div id="dock"></div>
<script src="/harness.js"></script>
</body></html>`

// harnessJS is the fake `siyuan` module and the plugin's loading, as
// SiYuan does it: the plugin's index.js run with require/module/exports,
// the i18n file of the language as plugin.i18n, onload, then the dock's
// init with the dock's element.
const harnessJS = `(async () => {
  const params = new URLSearchParams(location.search);
  document.documentElement.style.setProperty("--dock-w", (params.get("w") || "390") + "px");
  const calls = window.__calls = { openTab: [], mobileOpen: [], fetchPost: [], messages: [], docks: [] };
  const wysiwyg = document.querySelector(".protyle-wysiwyg");
  const editor = { protyle: { block: { rootID: "` + panelDoc + `" }, wysiwyg: { element: wysiwyg }, toolbar: { range: null } } };
  window.__editorOpen = true;
  window.__setCursor = (id) => {
    const text = wysiwyg.querySelector('[data-node-id="' + id + '"] [contenteditable]').firstChild;
    const r = document.createRange();
    r.setStart(text, 3);
    r.collapse(true);
    editor.protyle.toolbar.range = r;
  };
  class Plugin {
    constructor(o) { Object.assign(this, o); this.eventBus = { on() {}, off() {} }; this.docks = {}; }
    async loadData(name) { return JSON.parse(localStorage.getItem("plugin:" + name) || "null"); }
    async saveData(name, v) { localStorage.setItem("plugin:" + name, JSON.stringify(v)); }
    addDock(o) {
      calls.docks.push({ config: o.config, type: o.type });
      this.docks[this.name + o.type] = o;
      return { config: o.config };
    }
  }
  const siyuan = {
    Plugin,
    Setting: class { constructor(o) { this.items = []; } addItem(i) { this.items.push(i.title); } },
    showMessage: (text, timeout, type) => calls.messages.push({ text, type: type || "info" }),
    openTab: (o) => { calls.openTab.push({ doc: o.doc, hasApp: !!o.app }); return Promise.resolve({}); },
    openMobileFileById: (app, id, action) => calls.mobileOpen.push({ id, action }),
    getActiveEditor: () => (window.__editorOpen ? editor : undefined),
    getFrontend: () => "desktop",
    // The kernel's reply to insertBlock/appendBlock, as a real kernel
    // (v3.7.3) gave it (../shared/siyuan-api/api_log.jsonl).
    fetchPost: (url, data, cb) => {
      calls.fetchPost.push({ url, data });
      setTimeout(() => cb({ code: 0, msg: "", data: [{ timestamp: 0, doOperations: [{ action: "insert", id: "20261121100832-6ufbz0u",
        parentID: data.parentID || "` + panelDoc + `", previousID: data.previousID || "" }], undoOperations: null }] }), 5);
    },
  };
  if (params.get("gateway")) {
    localStorage.setItem("plugin:exocortex.json", JSON.stringify({ gateway: params.get("gateway"), token: params.get("token") || "" }));
  }
  const lang = params.get("lang") || "en_US";
  const i18n = await (await fetch("/plugin/i18n/" + lang + ".json")).json();
  const code = await (await fetch("/plugin/index.js")).text();
  const module = { exports: {} };
  new Function("require", "module", "exports", code)((name) => {
    if (name === "siyuan") return siyuan;
    throw new Error("the harness has no module " + name);
  }, module, module.exports);
  const plugin = new module.exports({ app: { appId: "siyuan" }, name: "exocortex-bridge", displayName: "Exocortex", i18n });
  await plugin.onload();
  window.__settings = plugin.setting.items;
  const dock = plugin.docks["exocortex-bridge" + calls.docks[0].type];
  dock.init.call({ element: document.getElementById("dock"), data: dock.data, type: dock.type });
  document.body.dataset.ready = "true";
})().catch((e) => { document.body.dataset.error = String(e && e.stack || e); throw e; });`

// startHarness serves the harness page and the plugin's files on an origin
// of its own, as SiYuan serves its front end.
func startHarness(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, harnessHTML)
	})
	mux.HandleFunc("GET /harness.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		fmt.Fprint(w, harnessJS)
	})
	mux.Handle("GET /plugin/", http.StripPrefix("/plugin/", http.FileServer(http.Dir(pluginDir))))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

// panelGateway is the real gateway over the scripted backend, allowing the
// origins given (EXOCORTEX_HTTP_CORS) and checking the token when there is
// one; it fails the test on a POST that is not application/json.
func panelGateway(t *testing.T, be gateway.Backend, token string, origins ...string) *httptest.Server {
	return jsonOnlyGateway(t, be, gateway.Config{Token: token, CORSOrigins: origins})
}

type recordedOpen struct {
	Doc struct {
		ID     string   `json:"id"`
		Action []string `json:"action"`
	} `json:"doc"`
	HasApp bool `json:"hasApp"`
}

type recordedPost struct {
	URL  string            `json:"url"`
	Data map[string]string `json:"data"`
}

type recordedMessage struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// panelWords is what the panel says, per language, that the test looks for.
var panelWords = map[string]map[string]string{
	"en_US": {"ask": "Ask", "search": "Search", "insert": "Insert the answer here", "question": "Do crows remember faces?",
		"answer": "Crows remember faces for years", "mode": "Written by a language model", "sources": "Sources:",
		"inserted": "inserted with 2 block references", "no_editor": "Open a document", "results": "2 results"},
	"ru_RU": {"ask": "Спросить", "search": "Найти", "insert": "Вставить ответ сюда", "question": "Помнят ли вороны лица?",
		"answer": "Вороны годами помнят лица", "mode": "Написано языковой моделью", "sources": "Источники:",
		"inserted": "ссылок на блоки: 2", "no_editor": "Откройте документ", "results": "Найдено: 2"},
}

func TestTheSiYuanPanelSearchesAsksOpensCitedBlocksAndInsertsTheAnswerInChromium(t *testing.T) {
	ctx := newBrowser(t, chromedp.WindowSize(1100, 860))
	harness := startHarness(t)
	be := newScriptedBackend()
	gw := panelGateway(t, be, "", harness.URL)
	shots := screenshotDir(t)

	// dockShot saves the dock alone, as SiYuan shows it.
	dockShot := func(t *testing.T, name string) {
		t.Helper()
		clip := evalIn[page.Viewport](pageDriver{t: t, ctx: ctx}, `(() => { const r = document.getElementById('dock').getBoundingClientRect();
			return {x: Math.round(r.x), y: Math.round(r.y), width: Math.round(r.width), height: Math.round(r.height), scale: 1}; })()`)
		img, err := chromedp.Run(ctx, chromedp.Action[[]byte](func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
			fromSurface := true
			r, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, Clip: &clip, FromSurface: &fromSurface})
			if err != nil {
				return nil, err
			}
			return r.Data, nil
		}))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name+".png")
		if err := os.WriteFile(path, img, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	// fitsDock: nothing in the dock sticks out of it sideways.
	fitsDock := func(p pageDriver, view string) {
		p.t.Helper()
		bad := evalIn[[]string](p, `(() => { const d = document.getElementById('dock').getBoundingClientRect(), bad = [];
			for (const e of document.querySelectorAll('#dock *')) { const r = e.getBoundingClientRect();
				if (r.width === 0 && r.height === 0) continue;
				if (r.right > d.right + 1 || r.left < d.left - 1) bad.push(e.tagName.toLowerCase() + '.' + (e.className || '') + ' [' + Math.round(r.left) + ', ' + Math.round(r.right) + ']'); }
			return bad.slice(0, 8); })()`)
		if len(bad) > 0 {
			p.t.Errorf("%s: sticking out of the dock: %v", view, bad)
		}
	}
	open := func(p pageDriver, lang string, width int, gatewayURL, token string) {
		p.t.Helper()
		p.do("open SiYuan with the plugin",
			chromedp.Navigate(harness.URL+"/?w="+fmt.Sprint(width)),
			chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
			chromedp.Navigate(fmt.Sprintf("%s/?lang=%s&w=%d&gateway=%s&token=%s", harness.URL, lang, width, gatewayURL, token)),
			chromedp.WaitVisible(`body[data-ready="true"]`),
		)
	}
	ask := func(p pageDriver, question string) {
		p.t.Helper()
		p.do("ask "+question,
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#dock .exo-q').value = ''`),
			chromedp.SendKeys(`#dock .exo-q`, question),
			chromedp.Click(`#dock .exo-ask`),
			chromedp.WaitVisible(`#dock .exo-answer[data-state="done"]`),
		)
	}

	for _, lang := range []string{"en_US", "ru_RU"} {
		for _, width := range []int{390, 640} {
			t.Run(fmt.Sprintf("%s in a %d px dock", lang, width), func(t *testing.T) {
				p := pageDriver{t: t, ctx: ctx, shots: shots}
				w := panelWords[lang]
				open(p, lang, width, gw.URL, "")
				if e := evalIn[string](p, `document.body.dataset.error || ''`); e != "" {
					t.Fatalf("the harness failed to load the plugin: %s", e)
				}

				// The plugin adds one dock, in SiYuan's language.
				docks := evalIn[[]map[string]any](p, `__calls.docks`)
				if len(docks) != 1 || docks[0]["type"] != "exocortex_dock" {
					t.Fatalf("the plugin added the docks %v, want one of type exocortex_dock", docks)
				}
				if got := []string{p.text(`#dock .exo-ask`), p.text(`#dock .exo-search`)}; !slices.Equal(got, []string{w["ask"], w["search"]}) {
					t.Errorf("the panel's buttons read %v, want %s and %s", got, w["ask"], w["search"])
				}
				if settings := evalIn[[]string](p, `__settings`); len(settings) != 4 {
					t.Errorf("the settings have %v, want the gateway, its token, the bridge's endpoint and secret", settings)
				}

				// Search: hits name their document and section, matches are
				// marked, a SiYuan hit is a block reference, a Markdown note
				// is text.
				p.do("search",
					chromedp.SendKeys(`#dock .exo-q`, "tools"),
					chromedp.Click(`#dock .exo-search`),
					chromedp.WaitVisible(`#dock .exo-results li`),
				)
				fitsDock(p, "search")
				if s := p.text(`#dock .exo-state`); !strings.Contains(s, w["results"]) {
					t.Errorf("the search says %q, want %q", s, w["results"])
				}
				refs := evalIn[[]string](p, `[...document.querySelectorAll('#dock .exo-results [data-type="block-ref"]')].map(e => e.dataset.id)`)
				if !slices.Equal(refs, []string{syBlock}) {
					t.Errorf("the hits reference the blocks %v, want only the SiYuan hit %s", refs, syBlock)
				}
				if hit := p.text(`#dock .exo-results li`); !strings.Contains(hit, "Corvids › Crows › Tools") || !strings.Contains(hit, "bend wire into hooks") {
					t.Errorf("the first hit reads %q, want its path and snippet", hit)
				}
				if marks := evalIn[[]string](p, `[...document.querySelectorAll('#dock .exo-results mark')].map(m => m.textContent)`); !slices.Contains(marks, "tools") || slices.Contains(marks, "**tools**") {
					t.Errorf("the marked matches are %v, want tools, without the stars", marks)
				}
				if width == 390 {
					dockShot(t, "siyuan-panel-search-"+lang)
				}
				p.do("open the hit", chromedp.Click(`#dock .exo-results [data-type="block-ref"]`))
				opens := evalIn[[]recordedOpen](p, `__calls.openTab`)
				if len(opens) != 1 || opens[0].Doc.ID != syBlock || !opens[0].HasApp || !slices.Contains(opens[0].Doc.Action, "cb-get-focus") {
					t.Errorf("clicking the hit called openTab with %+v, want one call opening %s with the app and cb-get-focus", opens, syBlock)
				}

				// Ask: the answer with its [1] as a block reference, the
				// mode in words, the sources.
				ask(p, w["question"])
				fitsDock(p, "answer")
				if got := p.text(`#dock .exo-text`); !strings.Contains(got, w["answer"]) || strings.Contains(got, "[1]") {
					t.Errorf("the answer reads %q, want %q with its marker as a reference", got, w["answer"])
				}
				cite := evalIn[map[string]string](p, `(() => { const c = document.querySelector('#dock .exo-text [data-type="block-ref"]'); return c ? {id: c.dataset.id, n: c.dataset.n, text: c.textContent} : {}; })()`)
				if cite["id"] != syBlock || cite["n"] != "1" || cite["text"] != "1" {
					t.Errorf("the citation is %v, want a reference to %s reading 1", cite, syBlock)
				}
				if m := p.text(`#dock .exo-mode`); !strings.HasPrefix(m, w["mode"]) || !strings.Contains(m, "82%") {
					t.Errorf("the answer's mode reads %q, want %q and its confidence", m, w["mode"])
				}
				if src := p.text(`#dock .exo-sources`); !strings.Contains(src, "Corvids › Crows") || !strings.Contains(src, "use tools to get food") {
					t.Errorf("the sources read %q, want the cited section and quote", src)
				}
				if q := be.lastAsk(); q == nil || q.Question != w["question"] {
					t.Errorf("the gateway was asked %+v, want %q", q, w["question"])
				}
				dockShot(t, fmt.Sprintf("siyuan-panel-answer-%s-%d", lang, width))
				p.do("open citation 1", chromedp.Click(`#dock .exo-text [data-type="block-ref"]`))
				opens = evalIn[[]recordedOpen](p, `__calls.openTab`)
				if len(opens) != 2 || opens[1].Doc.ID != syBlock || !slices.Contains(opens[1].Doc.Action, "cb-get-hl") {
					t.Errorf("clicking [1] called openTab with %+v, want the cited block %s opened and highlighted", opens, syBlock)
				}

				// Insert: without a cursor at the document's end, with one
				// after the top-level block holding it; [1] becomes a block
				// reference, the sources a list of them.
				p.do("insert at the end", chromedp.Click(`#dock .exo-insert`))
				p.do("put the cursor in a list item", chromedp.Evaluate[chromedp.Void](`__setCursor("`+panelNested+`")`))
				p.do("insert at the cursor", chromedp.Click(`#dock .exo-insert`))
				waitFor(p, `__calls.messages.length >= 2`)
				posts := evalIn[[]recordedPost](p, `__calls.fetchPost`)
				if len(posts) != 2 {
					t.Fatalf("the kernel got %d posts, want 2: %+v", len(posts), posts)
				}
				if posts[0].URL != "/api/block/appendBlock" || posts[0].Data["parentID"] != panelDoc || posts[0].Data["dataType"] != "markdown" {
					t.Errorf("without a cursor the panel posted %s %v, want appendBlock to the document %s as markdown", posts[0].URL, posts[0].Data, panelDoc)
				}
				if posts[1].URL != "/api/block/insertBlock" || posts[1].Data["previousID"] != panelList {
					t.Errorf("with the cursor in a list item the panel posted %s %v, want insertBlock after the list %s", posts[1].URL, posts[1].Data, panelList)
				}
				md := posts[1].Data["data"]
				wantMD := w["answer"] + ` ((` + syBlock + ` "1")).` + "\n\n" + w["sources"] + "\n\n" + `1. ((` + syBlock + ` "Corvids › Crows"))`
				if md != wantMD {
					t.Errorf("the inserted markdown is\n%s\nwant\n%s", md, wantMD)
				}
				msgs := evalIn[[]recordedMessage](p, `__calls.messages`)
				if !strings.Contains(msgs[0].Text, w["inserted"]) || msgs[0].Type != "info" {
					t.Errorf("after inserting the panel said %+v, want %q", msgs[0], w["inserted"])
				}
				p.do("close the editor and insert",
					chromedp.Evaluate[chromedp.Void](`window.__editorOpen = false`),
					chromedp.Click(`#dock .exo-insert`),
				)
				msgs = evalIn[[]recordedMessage](p, `__calls.messages`)
				if len(msgs) != 3 || msgs[2].Type != "error" || !strings.Contains(msgs[2].Text, w["no_editor"]) {
					t.Errorf("with no document open the panel said %+v, want %q as an error", msgs, w["no_editor"])
				}
				if width == 640 {
					p.do("whole window", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
					p.shot("siyuan-panel-window-" + lang)
				}
			})
		}
	}

	t.Run("an answer citing a Markdown note references only the SiYuan block, and its markup stays text", func(t *testing.T) {
		p := pageDriver{t: t, ctx: ctx, shots: shots}
		open(p, "en_US", 390, gw.URL, "")
		ask(p, "Show me Markdown about crows")
		refs := evalIn[[]string](p, `[...document.querySelectorAll('#dock .exo-answer [data-type="block-ref"]')].map(e => e.dataset.id)`)
		for _, id := range refs {
			if id != syBlock {
				t.Errorf("the answer references %s; only SiYuan blocks (%s) are references", id, syBlock)
			}
		}
		if len(refs) == 0 {
			t.Errorf("the answer has no block references")
		}
		if plain := p.text(`#dock .exo-sources li:nth-child(2)`); !strings.Contains(plain, "birds.md") {
			t.Errorf("the Markdown source reads %q, want its title", plain)
		}
		if pwned := evalIn[bool](p, `window.__pwned === 1 || !!document.querySelector('#dock img, #dock script, #dock a[href^="javascript"]')`); pwned {
			t.Errorf("the answer's HTML ran or became elements in the panel")
		}
		p.do("insert", chromedp.Click(`#dock .exo-insert`))
		waitFor(p, `__calls.fetchPost.length === 1`)
		md := evalIn[string](p, `__calls.fetchPost[0].data.data`)
		if !strings.Contains(md, `food ((`+syBlock+` "1")).`) || !strings.Contains(md, "notes say so too [2].") || !strings.Contains(md, `2. birds.md`) {
			t.Errorf("the inserted markdown references the Markdown note or lost a marker:\n%s", md)
		}
		fitsDock(p, "markdown answer")
		p.do("scroll the panel up", chromedp.Evaluate[chromedp.Void](`document.querySelector('#dock .exo-body').scrollTop = 0`))
		dockShot(t, "siyuan-panel-markdown-en_US")
	})

	t.Run("a gateway that does not list SiYuan's origin in EXOCORTEX_HTTP_CORS is named as the reason", func(t *testing.T) {
		p := pageDriver{t: t, ctx: ctx, shots: shots}
		closed := panelGateway(t, be, "")
		open(p, "en_US", 390, closed.URL, "")
		p.do("search", chromedp.SendKeys(`#dock .exo-q`, "tools"), chromedp.Click(`#dock .exo-search`),
			chromedp.WaitVisible(`#dock .exo-state[data-kind="error"]`))
		if s := p.text(`#dock .exo-state`); !strings.Contains(s, "EXOCORTEX_HTTP_CORS") || !strings.Contains(s, harness.URL) || !strings.Contains(s, closed.URL) {
			t.Errorf("the panel says %q, want the gateway's address, this origin %s and EXOCORTEX_HTTP_CORS", s, harness.URL)
		}
		dockShot(t, "siyuan-panel-cors-en_US")
	})

	t.Run("a gateway with a token answers the right token and refuses a wrong one in words", func(t *testing.T) {
		p := pageDriver{t: t, ctx: ctx, shots: shots}
		locked := panelGateway(t, be, "s3cret", harness.URL)
		open(p, "ru_RU", 390, locked.URL, "wrong")
		p.do("search with a wrong token", chromedp.SendKeys(`#dock .exo-q`, "tools"), chromedp.Click(`#dock .exo-search`),
			chromedp.WaitVisible(`#dock .exo-state[data-kind="error"]`))
		if s := p.text(`#dock .exo-state`); !strings.Contains(s, "не принял токен") || !strings.Contains(s, "EXOCORTEX_HTTP_TOKEN") {
			t.Errorf("with a wrong token the panel says %q", s)
		}
		open(p, "ru_RU", 390, locked.URL, "s3cret")
		ask(p, "Помнят ли вороны лица?")
		if got := p.text(`#dock .exo-text`); !strings.Contains(got, "Вороны годами помнят лица") {
			t.Errorf("with the token the answer reads %q", got)
		}
	})
}

// waitFor waits (up to 20 s) until the expression is true in the page.
func waitFor(p pageDriver, js string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
		p.t.Fatalf("waiting for %s: %v", js, err)
	}
}
