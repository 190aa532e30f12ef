package web_test

// The note view from the page when the gateway has a token: a link the
// browser follows cannot carry the Authorization header, so the page asks
// the gateway for a signed link (GET /v1/notes/{doc}/link) and opens that
// in a new window. Driven end to end in real Chromium, at phone and desktop
// widths, over a gateway bound on loopback with a token.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/schemas"
)

// A Markdown block id is its document's id, "#" and a hash (as the files
// source makes them), so the '#' must survive the page's link, the signed
// link's ?block= and the note view's fragment.
const (
	mdHashDoc   = "md-5c1f0e2d3b4a6978"
	mdHashBlock = mdHashDoc + "#3f2a9c0d1e2b"
	// Words only the note's own text has: a refused page must not show them.
	syNoteWords = "they bend wire into hooks"
	mdNoteWords = "гнут проволоку в крючки"
)

// noteBackend is the scripted backend with a note view: it reads two
// documents (an English SiYuan note, a Russian Markdown one whose block ids
// hold '#'), and answers every question citing one block of each.
type noteBackend struct {
	*scriptedBackend
	docs map[string]*gateway.Document
}

func newNoteBackend() *noteBackend {
	sy := &gateway.Document{DocID: syDoc, Title: "Corvids", Source: schemas.SourceSiYuan, Path: "Birds/Corvids", Link: "siyuan://blocks/" + syDoc}
	sy.Blocks = append(sy.Blocks, gateway.DocBlock{ID: "20261121100831-hea0001", Type: "heading", Text: "# Corvids", Lang: "en"})
	for i := range 12 {
		sy.Blocks = append(sy.Blocks, gateway.DocBlock{ID: fmt.Sprintf("20261121100831-par%04d", i), Type: "paragraph", Lang: "en",
			Text: "Rooks, jays and magpies are corvids too; they cache food and find it again months later."})
	}
	sy.Blocks = append(sy.Blocks, gateway.DocBlock{ID: syBlock, Type: "paragraph", Lang: "en", SectionPath: []string{"Corvids", "Crows"},
		Text: "Crows use tools to get food: " + syNoteWords + ".", Link: "siyuan://blocks/" + syBlock})
	for i := range 12 {
		sy.Blocks = append(sy.Blocks, gateway.DocBlock{ID: fmt.Sprintf("20261121100831-pbr%04d", i), Type: "paragraph", Lang: "en",
			Text: "Ravens play: they slide down snowy roofs and roll on their backs."})
	}
	md := &gateway.Document{DocID: mdHashDoc, Title: "Вороны", Source: schemas.SourceMarkdown, Path: "/home/me/notes/вороны.md"}
	md.Blocks = append(md.Blocks, gateway.DocBlock{ID: mdHashDoc + "#0a0b0c0d0e0f", Type: "heading", Text: "# Вороны", Lang: "ru"})
	for i := range 12 {
		md.Blocks = append(md.Blocks, gateway.DocBlock{ID: fmt.Sprintf("%s#%012x", mdHashDoc, i+1), Type: "paragraph", Lang: "ru",
			Text: "Грачи, сойки и сороки тоже врановые: они прячут еду и находят её через месяцы."})
	}
	md.Blocks = append(md.Blocks, gateway.DocBlock{ID: mdHashBlock, Type: "paragraph", Lang: "ru", SectionPath: []string{"Вороны", "Орудия"},
		Text: "Вороны **" + mdNoteWords + "**, чтобы достать еду."})
	for i := range 12 {
		md.Blocks = append(md.Blocks, gateway.DocBlock{ID: fmt.Sprintf("%s#%012x", mdHashDoc, i+100), Type: "paragraph", Lang: "ru",
			Text: "Вороны играют: катаются с заснеженных крыш и кувыркаются на спине."})
	}
	return &noteBackend{scriptedBackend: newScriptedBackend(), docs: map[string]*gateway.Document{syDoc: sy, mdHashDoc: md}}
}

func (b *noteBackend) Document(ctx context.Context, docID string) (*gateway.Document, error) {
	return b.docs[docID], nil
}

// Block is a block of the two documents.
func (b *noteBackend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	for _, d := range b.docs {
		for _, bl := range d.Blocks {
			if bl.ID == id {
				return &gateway.Block{ID: id, DocID: d.DocID, Title: d.Title, SectionPath: bl.SectionPath, Text: bl.Text, Link: bl.Link}, nil
			}
		}
	}
	return nil, nil
}

// Search finds the cited block of each document.
func (b *noteBackend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	return &gateway.SearchResult{Mode: schemas.ModeLexical, Results: []gateway.SearchHit{
		{Rank: 1, Title: "Corvids", SectionPath: []string{"Corvids", "Crows"}, BlockID: syBlock, DocID: syDoc,
			Snippet: "Crows use **tools** to get food", Link: "siyuan://blocks/" + syBlock},
		{Rank: 2, Title: "Вороны", SectionPath: []string{"Вороны", "Орудия"}, BlockID: mdHashBlock, DocID: mdHashDoc,
			Snippet: "Вороны **гнут проволоку**", Path: "/home/me/notes/вороны.md"},
	}}, nil
}

var noteCitations = []schemas.Citation{
	{BlockID: syBlock, DocID: syDoc, Title: "Corvids", SectionPath: []string{"Corvids", "Crows"}, Quote: "use tools to get food",
		Link: "siyuan://blocks/" + syBlock, Number: 1},
	{BlockID: mdHashBlock, DocID: mdHashDoc, Title: "Вороны", SectionPath: []string{"Вороны", "Орудия"}, Quote: "гнут проволоку",
		Number: 2},
}

func (b *noteBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	text := "Crows use tools to get food [1]. Вороны гнут проволоку в крючки [2]."
	onToken(&schemas.AnswerToken{Seq: 1, Text: text})
	return &schemas.AnswerDone{QueryID: fmt.Sprint("q-", time.Now().UnixNano()), Question: q.Question, Answer: text,
		Mode: schemas.AnswerLLM, Confidence: 0.9, Citations: noteCitations}, nil
}

// linkRecorder counts the page's requests for signed note links.
type linkRecorder struct {
	mu    sync.Mutex
	links []string // request URIs of GET /v1/notes/{doc}/link
}

func (l *linkRecorder) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.links)
}

// noteGateway is the real gateway over be, bound on loopback, with token
// ("" for none), serving the page as up does.
func noteGateway(t *testing.T, be gateway.Backend, token string) (*httptest.Server, *linkRecorder) {
	t.Helper()
	srv, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0", Token: token,
		Mounts: map[string]http.Handler{"/": web.Handler()}, Public: []string{"/", "/index.html", "/static/"},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)}, be, gateway.Deps{Status: scriptedStatus})
	if err != nil {
		t.Fatal(err)
	}
	rec := &linkRecorder{}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/notes/") && strings.HasSuffix(r.URL.Path, "/link") {
			rec.mu.Lock()
			rec.links = append(rec.links, r.URL.RequestURI())
			rec.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, rec
}

// openedNote is what the window a note link opened shows.
type openedNote struct {
	URL, Target, TargetBG, Text, Lang string
	Article, Refused                  bool
}

// clickNoteLink clicks the note link sel in the page (a left click unless
// how says otherwise) and returns what the new window it opens shows once
// its note view has loaded, with a screenshot of it at width (when shot is
// not empty).
func clickNoteLink(p pageDriver, sel string, width int, shot string, how ...chromedp.MouseOption) openedNote {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	// The page may open about:blank first and navigate it after the fetch:
	// wait for the window at the note view.
	ch := chromedp.WaitNewTarget(ctx, func(info *target.Info) bool {
		u, err := url.Parse(info.URL)
		return err == nil && strings.HasPrefix(u.Path, "/notes/")
	})
	click := chromedp.QueryAfter(sel, func(ctx context.Context, tg *chromedp.Target, nodes []*chromedp.Node) (chromedp.Void, error) {
		return chromedp.Run(ctx, chromedp.MouseClickNode(nodes[0], how...))
	}, chromedp.NodeVisible)
	p.do("click "+sel, click)
	var id target.ID
	select {
	case id = <-ch:
	case <-ctx.Done():
		var open []string
		if infos, err := chromedp.Targets(p.ctx); err == nil {
			for _, i := range infos {
				open = append(open, fmt.Sprintf("%s %s (opener %q)", i.Type, i.URL, i.OpenerID))
			}
		}
		p.t.Fatalf("clicking %s opened no window at the note view within 10 s; the browser has %q", sel, open)
	}
	nctx, ncancel := chromedp.NewContext(p.ctx, chromedp.WithTargetID(id))
	defer ncancel() // closes the window
	wctx, wcancel := context.WithTimeout(nctx, 20*time.Second)
	defer wcancel()
	if err := chromedp.Do(wctx, chromedp.WaitReady(`body`), chromedp.WaitVisible(`article.note, section.message`)); err != nil {
		p.t.Fatalf("the opened window did not show the note view: %v", err)
	}
	seen, err := chromedp.Run(wctx, chromedp.Evaluate[openedNote](`(() => {
		const el = document.querySelector(":target");
		return {URL: location.href, Target: el ? el.id : "", TargetBG: el ? getComputedStyle(el).backgroundColor : "",
			Text: document.body.innerText, Lang: document.documentElement.lang,
			Article: !!document.querySelector("article.note"), Refused: !!document.querySelector("section.message")};
	})()`))
	if err != nil {
		p.t.Fatalf("look at the opened window: %v", err)
	}
	if shot != "" {
		// A new window has the browser's size: show it at the page's width,
		// the cited block in view.
		if err := chromedp.Do(wctx, chromedp.EmulateViewport(int64(width), 860),
			chromedp.Evaluate[chromedp.Void](`(document.querySelector(":target") || document.body).scrollIntoView({block: "center"})`)); err != nil {
			p.t.Fatal(err)
		}
		img, err := chromedp.Run(wctx, chromedp.CaptureScreenshot())
		if err != nil {
			p.t.Fatalf("screenshot %s: %v", shot, err)
		}
		path := filepath.Join(p.shots, shot+".png")
		if err := os.WriteFile(path, img, 0o644); err != nil {
			p.t.Fatal(err)
		}
		p.t.Logf("screenshot: %s", path)
	}
	return seen
}

// citedBG is the note view's :target highlight (gateway/notes.css --cited).
const citedBG = "rgb(255, 241, 168)"

func TestWithATokenTheNoteLinksOpenThroughSignedLinksInChromium(t *testing.T) {
	// The popup blocker on, as in a person's browser (chromedp turns it
	// off): the page must open the window within the click.
	ctx := newBrowser(t, chromedp.Flag("disable-popup-blocking", false))
	shots := screenshotDir(t)
	const secret = "s3cret-token"
	be := newNoteBackend()
	locked, lockedLinks := noteGateway(t, be, secret)
	open, openLinks := noteGateway(t, be, "")

	type note struct{ doc, block, words string }
	sy, md := note{syDoc, syBlock, syNoteWords}, note{mdHashDoc, mdHashBlock, mdNoteWords}
	noteLink := func(list string, n note) string { return list + ` a.note-link[href^="/notes/` + n.doc + `"]` }
	// Every place on the page that links to the note view.
	places := []struct {
		name string
		note note
		tab  string
		prep []chromedp.Action[chromedp.Void] // shows the link
		link string
		shot bool
	}{
		{"an answer's source in an English SiYuan note opens at its block", sy, "ask", nil, noteLink("#answer-sources li", sy), false},
		{"an answer's source in a Russian Markdown note, its block id holding '#', opens at its block", md, "ask", nil, noteLink("#answer-sources li", md), true},
		{"the citation panel of a Markdown block opens the note at the block", md, "ask", []chromedp.Action[chromedp.Void]{
			chromedp.Click(`#answer-text button.cite[data-n="2"]`),
			chromedp.WaitVisible(`#cite-panel[data-state="loaded"][data-block-id="` + mdHashBlock + `"]`),
		}, `#cite-note`, false},
		{"a search hit in a SiYuan note opens at its block", sy, "search", nil, noteLink("#search-results li.hit", sy), false},
		{"a search hit in a Markdown note opens at its block", md, "search", nil, noteLink("#search-results li.hit", md), false},
	}
	pageTargets := func(p pageDriver) int {
		p.t.Helper()
		infos, err := chromedp.Targets(p.ctx)
		if err != nil {
			p.t.Fatal(err)
		}
		n := 0
		for _, i := range infos {
			if i.Type == "page" {
				n++
			}
		}
		return n
	}

	for _, width := range []int{390, 1280} {
		t.Run(fmt.Sprintf("at %d px", width), func(t *testing.T) {
			p := pageDriver{t: t, ctx: ctx, shots: shots}
			p.setViewport(width)

			// 1. The first search asks for the token; given, the search runs.
			p.do("open the page",
				chromedp.Navigate(locked.URL+"/#search"),
				chromedp.WaitVisible(`body[data-ready="true"]`),
				chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem('exocortex.lang', 'en')`),
				chromedp.Reload(),
				chromedp.WaitVisible(`body[data-ready="true"]`),
			)
			if !evalIn[bool](p, `window.open("about:blank", "_blank") === null`) {
				t.Fatal("a window opened without a click: the popup blocker is off, so the test cannot tell a page that opens windows outside the click")
			}
			p.do("search",
				chromedp.SendKeys(`#search-q`, "crows"),
				chromedp.Click(`#search-go`),
				chromedp.WaitVisible(`#token-form`),
			)
			if n := evalIn[int](p, `document.querySelectorAll('#search-results li.hit').length`); n != 0 {
				t.Errorf("without the token the search shows %d hits", n)
			}

			p.do("give the token",
				chromedp.SendKeys(`#token-input`, secret),
				chromedp.Click(`#token-go`),
				chromedp.WaitVisible(`#search-results li.hit`),
			)
			if n := evalIn[int](p, `document.querySelectorAll('#search-results li.hit').length`); n != 2 {
				t.Errorf("the retried search shows %d hits, want the scripted 2", n)
			}
			if tok := evalIn[string](p, `localStorage.getItem('exocortex.token')`); tok != secret {
				t.Errorf("the browser keeps the token %q, want %q", tok, secret)
			}
			p.do("ask",
				chromedp.Click(`#tab-ask`),
				chromedp.WaitVisible(`#ask-q`),
				chromedp.SendKeys(`#ask-q`, "What do crows bend wire into?"),
				chromedp.Click(`#ask-go`),
				chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				chromedp.WaitVisible(`#answer-sources li a.note-link`),
			)

			// 2. Each note link opens its note in a new window, through a
			// signed link, at the cited block, highlighted; 4. a Markdown
			// block id's '#' survives the trip.
			for _, pl := range places {
				t.Run(pl.name, func(t *testing.T) {
					p := pageDriver{t: t, ctx: ctx, shots: shots}
					show := append(append([]chromedp.Action[chromedp.Void]{chromedp.Click(`#tab-` + pl.tab)}, pl.prep...), chromedp.WaitVisible(pl.link))
					p.do("show the link", show...)
					before := len(lockedLinks.seen())
					shot := ""
					if pl.shot {
						shot = fmt.Sprintf("note-signed-link-%d", width)
					}
					got := clickNoteLink(p, pl.link, width, shot)
					u, err := url.Parse(got.URL)
					if err != nil {
						t.Fatalf("the opened window is at %q: %v", got.URL, err)
					}
					if u.Path != "/notes/"+pl.note.doc || u.Query().Get("t") == "" {
						t.Errorf("the opened window is at %s, want /notes/%s?t=<signature>", got.URL, pl.note.doc)
					}
					if frag, err := url.PathUnescape(u.EscapedFragment()); err != nil || frag != pl.note.block {
						t.Errorf("the opened window's fragment is %q, want the block %q", u.EscapedFragment(), pl.note.block)
					}
					if !got.Article || got.Refused || !strings.Contains(got.Text, pl.note.words) {
						t.Errorf("the opened window shows %q, want the note with %q", got.Text, pl.note.words)
					}
					if got.Target != pl.note.block || got.TargetBG != citedBG {
						t.Errorf("the :target is %q on %q, want the block %q highlighted %s", got.Target, got.TargetBG, pl.note.block, citedBG)
					}
					links := lockedLinks.seen()[before:]
					want := "/v1/notes/" + url.PathEscape(pl.note.doc) + "/link?block=" + url.QueryEscape(pl.note.block)
					if len(links) != 1 || links[0] != want {
						t.Errorf("the page asked for the signed links %q, want one, %q", links, want)
					}
				})
			}

			// A Ctrl (Cmd) click or a middle click would open the plain link,
			// which refuses: they open the signed one too.
			for _, c := range []struct {
				name string
				how  []chromedp.MouseOption
			}{
				{"a Ctrl click opens the signed link", []chromedp.MouseOption{chromedp.ButtonModifiers(chromedp.ModifierCtrl)}},
				{"a Shift click opens the signed link", []chromedp.MouseOption{chromedp.ButtonModifiers(chromedp.ModifierShift)}},
				{"a middle click opens the signed link", []chromedp.MouseOption{chromedp.ButtonMiddle}},
			} {
				t.Run(c.name, func(t *testing.T) {
					p := pageDriver{t: t, ctx: ctx, shots: shots}
					p.do("show the answer", chromedp.Click(`#tab-ask`))
					before, windows := len(lockedLinks.seen()), pageTargets(p)
					got := clickNoteLink(p, noteLink("#answer-sources li", md), width, "", c.how...)
					if !strings.Contains(got.URL, "?t=") || got.Refused || got.Target != mdHashBlock {
						t.Errorf("the window opened at %s (refused: %v) with :target %q, want the signed link at %q", got.URL, got.Refused, got.Target, mdHashBlock)
					}
					if n := len(lockedLinks.seen()) - before; n != 1 {
						t.Errorf("the click asked for %d signed links, want 1", n)
					}
					// The signed window is closed by now; a plain tab opened
					// beside it would still be there.
					if n := pageTargets(p); n != windows {
						t.Errorf("%d windows after the click, want the %d before it", n, windows)
					}
				})
			}

			// A token the gateway no longer takes (it was changed): the click
			// asks for the token again and leaves no blank window behind; with
			// the new one given, the link opens.
			t.Run("a stale token asks for the token again and leaves no blank window", func(t *testing.T) {
				p := pageDriver{t: t, ctx: ctx, shots: shots}
				link := noteLink("#answer-sources li", md)
				windows := pageTargets(p)
				p.do("a stale token, then the click",
					chromedp.Click(`#tab-ask`),
					chromedp.Evaluate[chromedp.Void](`token = "stale"`), // the page's own variable (a classic script's global)
					chromedp.Click(link),
					chromedp.WaitVisible(`#token-form`),
				)
				if l := p.text(`#token-label`); !strings.Contains(l, "refused") {
					t.Errorf("after the stale token the page says %q, want that it was refused", l)
				}
				deadline := time.Now().Add(5 * time.Second)
				for pageTargets(p) != windows && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				if n := pageTargets(p); n != windows {
					t.Errorf("%d windows after the refused click, want the %d before it (the blank one closed)", n, windows)
				}
				p.do("give the token again", chromedp.SendKeys(`#token-input`, secret), chromedp.Click(`#token-go`), chromedp.WaitNotVisible(`#token-form`))
				if got := clickNoteLink(p, link, width, ""); got.Target != mdHashBlock || !strings.Contains(got.URL, "?t=") {
					t.Errorf("with the token given again the window opened at %s with :target %q", got.URL, got.Target)
				}
			})

			// 3. The note view followed as a plain link, without t=, refuses.
			p.do("open the note without a signed link",
				chromedp.Navigate(locked.URL+"/notes/"+url.PathEscape(mdHashDoc)+"#"+url.PathEscape(mdHashBlock)),
				chromedp.WaitVisible(`section.message`),
			)
			if body := p.text(`body`); !strings.Contains(body, "needs the gateway's access token") || strings.Contains(body, mdNoteWords) ||
				evalIn[int](p, `document.querySelectorAll('article.note').length`) != 0 {
				t.Errorf("the note view without t= shows %q, want the refusal and no note text", body)
			}

			// 5. Without a token the link opens as it is; no signed link asked.
			p.do("open the page without a token",
				chromedp.Navigate(open.URL+"/#ask"),
				chromedp.WaitVisible(`body[data-ready="true"]`),
				chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem('exocortex.lang', 'en')`),
				chromedp.Reload(),
				chromedp.WaitVisible(`#ask-q`),
				chromedp.SendKeys(`#ask-q`, "What do crows bend wire into?"),
				chromedp.Click(`#ask-go`),
				chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				chromedp.WaitVisible(`#answer-sources li a.note-link`),
			)
			got := clickNoteLink(p, noteLink("#answer-sources li", md), width, "")
			if want := open.URL + "/notes/" + mdHashDoc + "#" + url.PathEscape(mdHashBlock); got.URL != want {
				t.Errorf("without a token the window opened at %s, want the plain link %s", got.URL, want)
			}
			if got.Target != mdHashBlock || got.TargetBG != citedBG || !strings.Contains(got.Text, mdNoteWords) {
				t.Errorf("without a token the opened note has :target %q on %q and text %q", got.Target, got.TargetBG, got.Text)
			}
			if l := openLinks.seen(); len(l) != 0 {
				t.Errorf("without a token the page asked for signed links %q", l)
			}
		})
	}
}
