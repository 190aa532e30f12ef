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

// clickNoteLink clicks the note link sel in the page and returns what the
// new window it opens shows once its note view has loaded, with a
// screenshot of it at width (when shot is not empty).
func clickNoteLink(p pageDriver, sel string, width int, shot string) openedNote {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	// The page may open about:blank first and navigate it after the fetch:
	// wait for the window at the note view.
	ch := chromedp.WaitNewTarget(ctx, func(info *target.Info) bool {
		u, err := url.Parse(info.URL)
		return err == nil && strings.HasPrefix(u.Path, "/notes/")
	})
	p.do("click "+sel, chromedp.Click(sel))
	var id target.ID
	select {
	case id = <-ch:
	case <-ctx.Done():
		p.t.Fatalf("clicking %s opened no window at the note view within 20 s", sel)
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
	ctx := newBrowser(t)
	shots := screenshotDir(t)
	const secret = "s3cret-token"
	be := newNoteBackend()
	locked, lockedLinks := noteGateway(t, be, secret)
	open, openLinks := noteGateway(t, be, "")

	sources := []struct {
		name, doc, block, lang, words string
	}{
		{"an English SiYuan block", syDoc, syBlock, "en", syNoteWords},
		{"a Russian Markdown block whose id holds '#'", mdHashDoc, mdHashBlock, "ru", mdNoteWords},
	}
	sourceLink := func(doc string) string {
		return `#answer-sources li a.note-link[href^="/notes/` + doc + `"]`
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

			// 2. The answer's sources open their notes in a new window,
			// through a signed link, at the cited block, highlighted; 4. the
			// Markdown block's '#' survives the trip.
			p.do("ask",
				chromedp.Click(`#tab-ask`),
				chromedp.WaitVisible(`#ask-q`),
				chromedp.SendKeys(`#ask-q`, "What do crows bend wire into?"),
				chromedp.Click(`#ask-go`),
				chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				chromedp.WaitVisible(`#answer-sources li a.note-link`),
			)
			for _, src := range sources {
				t.Run(src.name, func(t *testing.T) {
					p := pageDriver{t: t, ctx: ctx, shots: shots}
					before := len(lockedLinks.seen())
					shot := ""
					if src.doc == mdHashDoc {
						shot = fmt.Sprintf("note-signed-link-%d", width)
					}
					got := clickNoteLink(p, sourceLink(src.doc), width, shot)
					u, err := url.Parse(got.URL)
					if err != nil {
						t.Fatalf("the opened window is at %q: %v", got.URL, err)
					}
					if u.Path != "/notes/"+src.doc || u.Query().Get("t") == "" {
						t.Errorf("the opened window is at %s, want /notes/%s?t=<signature>", got.URL, src.doc)
					}
					if frag, err := url.PathUnescape(u.EscapedFragment()); err != nil || frag != src.block {
						t.Errorf("the opened window's fragment is %q, want the block %q", u.EscapedFragment(), src.block)
					}
					if !got.Article || got.Refused || !strings.Contains(got.Text, src.words) {
						t.Errorf("the opened window shows %q, want the note with %q", got.Text, src.words)
					}
					if got.Target != src.block || got.TargetBG != citedBG {
						t.Errorf("the :target is %q on %q, want the block %q highlighted %s", got.Target, got.TargetBG, src.block, citedBG)
					}
					links := lockedLinks.seen()[before:]
					want := "/v1/notes/" + url.PathEscape(src.doc) + "/link?block=" + url.QueryEscape(src.block)
					if len(links) != 1 || links[0] != want {
						t.Errorf("the page asked for the signed links %q, want one, %q", links, want)
					}
				})
			}

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
			got := clickNoteLink(p, sourceLink(mdHashDoc), width, "")
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
