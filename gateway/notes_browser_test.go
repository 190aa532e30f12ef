package gateway_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/exocortex/exocortex/gateway"
)

// chromium is the browser the note view's browser test drives
// ($EXOCORTEX_CHROMIUM, else chromium or chromium-browser on PATH); the
// test skips without one, as the web page's does.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EXOCORTEX_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the browser EXOCORTEX_CHROMIUM names: %v", err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium for the note view's browser test: neither chromium nor chromium-browser is on PATH and EXOCORTEX_CHROMIUM is not set (run `task setup` as root, or bash ops/install-chromium.sh)")
	return ""
}

// longNote is a Markdown note long enough that the cited block is far below
// the top, its block ids holding '#' as Markdown block ids do.
func longNote(lang string) (*gateway.Document, string) {
	id := "md-0123456789abcdef"
	d := &gateway.Document{DocID: id, Source: "markdown", Path: "/home/me/notes/birds.md"}
	para := "Ravens and crows use tools to get food, and remember the people who fed them."
	title, section, cited := "Birds", "Songbirds", "Robins sing at dawn in spring; **wrens** answer them from the hedges."
	if lang == "ru" {
		para = "Вороны и грачи пользуются орудиями, чтобы добыть еду, и помнят людей, которые их кормили."
		title, section, cited = "Птицы", "Певчие птицы", "Зарянки поют на рассвете весной; **крапивники** отвечают им из живой изгороди."
	}
	d.Title = title
	d.Blocks = append(d.Blocks, gateway.DocBlock{ID: id + "#h1", Type: "heading", Text: "# " + title, Lang: lang})
	for i := range 14 {
		d.Blocks = append(d.Blocks, gateway.DocBlock{ID: fmt.Sprintf("%s#p%02d", id, i), Type: "paragraph", Text: para, Lang: lang})
	}
	d.Blocks = append(d.Blocks, gateway.DocBlock{ID: id + "#h2", Type: "heading", Text: "## " + section, Lang: lang},
		gateway.DocBlock{ID: id + "#cited", Type: "paragraph", Text: cited, Lang: lang, SectionPath: []string{title, section}})
	for i := range 14 {
		d.Blocks = append(d.Blocks, gateway.DocBlock{ID: fmt.Sprintf("%s#q%02d", id, i), Type: "paragraph", Text: para, Lang: lang})
	}
	return d, id + "#cited"
}

func TestTheNoteViewOpensAtTheCitedBlockHighlightedInChromium(t *testing.T) {
	browser := chromium(t)
	shots := os.Getenv("EXOCORTEX_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	type seen struct {
		Target, TargetBG, BodyBG, Lang, Text string
		Top, ViewHeight, ScrollWidth         float64
	}
	look := func() seen {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[seen](`(() => {
			const el = document.querySelector(":target");
			const r = el ? el.getBoundingClientRect() : {top: -1};
			return {Target: el ? el.id : "", TargetBG: el ? getComputedStyle(el).backgroundColor : "",
				BodyBG: getComputedStyle(document.documentElement).backgroundColor, Lang: document.documentElement.lang,
				Text: document.body.innerText, Top: r.top, ViewHeight: innerHeight, ScrollWidth: document.documentElement.scrollWidth};
		})()`))
		if err != nil {
			t.Fatalf("look at the page: %v", err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, img, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}

	for _, lang := range []string{"en", "ru"} {
		doc, cited := longNote(lang)
		hs := serveDocs(t, "s3cret", doc)
		// What the page does when the gateway has a token: ask for a
		// signed link, then open it.
		var link gateway.NoteLink
		decodeAs(t, get(t, hs+"/v1/notes/"+url.PathEscape(doc.DocID)+"/link?block="+url.QueryEscape(cited), "Authorization", "Bearer s3cret"), 200, &link)
		path, frag, _ := strings.Cut(link.URL, "#")
		for _, width := range []int64{390, 1280} {
			t.Run(fmt.Sprintf("%s at %d px", lang, width), func(t *testing.T) {
				if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate(hs+path+"&lang="+lang+"#"+frag),
					chromedp.WaitVisible(`article.note`)); err != nil {
					t.Fatal(err)
				}
				s := look()
				if s.Target != cited {
					t.Errorf(":target is %q, want the cited block %q", s.Target, cited)
				}
				// The inline style sheet applies (its hash is in the CSP), and
				// the cited block has the highlight colour.
				if s.BodyBG != "rgb(247, 247, 245)" || s.TargetBG != "rgb(255, 241, 168)" {
					t.Errorf("page background %q and cited block %q: the style sheet is not applied", s.BodyBG, s.TargetBG)
				}
				if s.Top < 0 || s.Top > s.ViewHeight/2 {
					t.Errorf("the cited block is at %.0f px of a %.0f px window, want it scrolled into view near the top", s.Top, s.ViewHeight)
				}
				if s.ScrollWidth > float64(width) {
					t.Errorf("the page is %.0f px wide in a %d px window", s.ScrollWidth, width)
				}
				if s.Lang != lang || !strings.Contains(s.Text, map[string]string{"en": "Markdown file", "ru": "Файл Markdown"}[lang]) {
					t.Errorf("page language %q, text lacks the %s label", s.Lang, lang)
				}
				shot(fmt.Sprintf("note-view-%s-%d", lang, width))
			})
		}
		t.Run(lang+" without the token", func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(hs+gateway.NotePath(doc.DocID)+"?lang="+lang),
				chromedp.WaitVisible(`section.message`)); err != nil {
				t.Fatal(err)
			}
			s := look()
			want := map[string]string{"en": "needs the gateway's access token", "ru": "открывается только с токеном доступа"}[lang]
			if !strings.Contains(s.Text, want) || strings.Contains(s.Text, "Ravens") || strings.Contains(s.Text, "Вороны и грачи") {
				t.Errorf("the refused page shows %q", s.Text)
			}
			if s.BodyBG != "rgb(247, 247, 245)" {
				t.Errorf("the refused page's style sheet is not applied: %q", s.BodyBG)
			}
			shot("note-view-" + lang + "-token-needed-390")
		})
	}
}
