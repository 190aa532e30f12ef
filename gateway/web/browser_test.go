package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/siyuan"
	"github.com/exocortex/exocortex/workers/siyuan/siyuantest"
)

const (
	noteBox   = "20261121100831-kt25p1g"
	noteDoc   = "20261121100831-xs0m89b"
	noteTools = "20261121100831-para001"
)

// findChromium returns the browser the test drives: $EXOCORTEX_CHROMIUM,
// else chromium or chromium-browser on PATH.
func findChromium() (string, error) {
	if p := os.Getenv("EXOCORTEX_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("EXOCORTEX_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("neither chromium nor chromium-browser is on PATH and EXOCORTEX_CHROMIUM is not set")
}

// screenshotDir is $EXOCORTEX_SCREENSHOTS (created; kept after the test),
// else a temporary directory removed with the test.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("EXOCORTEX_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("screenshots directory: %v", err)
		}
		return d
	}
	return t.TempDir()
}

// crowsAnswer is the fake model's answer: two sentences, each shown once it
// is verified.
const crowsAnswer = "Crows «use tools to get food» [1]. They «bend wire into hooks» [1]."

// startSystem runs the whole pipeline over a fake SiYuan kernel with two
// notes and a fake language model that streams a cited answer slowly.
func startSystem(t *testing.T) (*system.System, *llmtest.Server, string) {
	t.Helper()
	k := siyuantest.New(t, "tok")
	k.AddNotebook(noteBox, "Notes")
	if err := k.PutDoc(noteBox, noteDoc, "", "/Corvids",
		siyuantest.Block{ID: "20261121100831-head001", Type: "h", Subtype: "h1", Content: "Crows", Markdown: "# Crows"},
		siyuantest.Block{ID: noteTools, Type: "p", Content: "Crows use tools to get food: they bend wire into hooks.",
			Markdown: "Crows use tools to get food: they bend wire into hooks."},
		siyuantest.Block{ID: "20261121100831-head002", Type: "h", Subtype: "h2", Content: "Memory", Markdown: "## Memory"},
		siyuantest.Block{ID: "20261121100831-para002", Type: "p", Content: "Crows remember human faces for years.",
			Markdown: "Crows remember human faces for years."},
	); err != nil {
		t.Fatal(err)
	}
	provider := llmtest.New(t)
	provider.SetAnswer(crowsAnswer)
	provider.SetResponder(func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
		if len(body.Messages) > 0 && strings.HasPrefix(body.Messages[0].Content, "Suggest 3 to 5 short follow-up questions") {
			return "How long do crows remember faces?\nDo ravens use tools too?\nWhat else do crows bend?", nil, true
		}
		return "", nil, false
	})
	// Slow enough that a person (and the test) sees the answer grow.
	provider.SetTokenDelay(120 * time.Millisecond)
	dataDir := t.TempDir()
	sys, err := system.Start(context.Background(), system.Config{DataDir: dataDir, Listen: "127.0.0.1:-1", NoModels: true,
		LLM:         &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: provider.URL(), Models: map[string]string{llm.RoleFast: "m", llm.RoleStrategic: "m"}}}},
		LLMOptions:  llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		StageConfig: []any{&siyuan.RoleConfig{Config: siyuan.Config{URL: k.URL(), Token: "tok", Coalesce: 50 * time.Millisecond}}},
		Log:         zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		hits, err := sys.Store.Search(context.Background(), "hooks", store.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(hits, func(h store.Hit) bool { return slices.Contains(h.BlockIDs, noteTools) }) {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the note from the SiYuan kernel did not reach the index: %d hits", len(hits))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := system.WaitIdle(ctx, sys.Bus, system.StageSpecs(), 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	return sys, provider, dataDir
}

// gatewayFor is the real gateway over the system's bus, serving the page
// as up does (its files public, the API behind the token when one is set).
func gatewayFor(t *testing.T, sys *system.System, dataDir, token string) *httptest.Server {
	t.Helper()
	be := gateway.NewBusBackend(sys.Bus, gateway.BusOptions{AskTimeout: time.Minute})
	t.Cleanup(func() { _ = be.Close() })
	srv, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0", Token: token,
		Mounts: map[string]http.Handler{"/": web.Handler()}, Public: []string{"/", "/index.html", "/static/"},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}, be,
		gateway.Deps{Bus: sys.Bus, StoreReady: be.StoreReady, Status: func(ctx context.Context) (any, error) { return statusOf(ctx, sys) }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs
}

func TestThePageSearchesStreamsACitedAnswerAndShowsStatusInChromium(t *testing.T) {
	browser, err := findChromium()
	if err != nil && os.Getenv("EXOCORTEX_CHROMIUM") != "" {
		t.Fatalf("the browser EXOCORTEX_CHROMIUM names: %v", err)
	}
	if err != nil {
		t.Skipf("no Chromium for the web page's browser test: %v (run `task setup` as root to install Debian's chromium, or set EXOCORTEX_CHROMIUM)", err)
	}
	sys, provider, dataDir := startSystem(t)
	srv := gatewayFor(t, sys, dataDir, "")
	shots := screenshotDir(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // root in containers
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(1200, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	shot := func(name string) {
		t.Helper()
		// Quality 100 is PNG.
		img, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, img, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	attr := func(sel, name string) string {
		t.Helper()
		a, err := chromedp.Run(ctx, chromedp.AttributeValue(sel, name))
		if err != nil {
			t.Fatalf("%s of %s: %v", name, sel, err)
		}
		return a.Value
	}

	// Search: results with section path, the match highlighted, the block's link.
	do("search",
		chromedp.Navigate(srv.URL+"/#search"),
		chromedp.WaitVisible(`body[data-ready="true"]`),
		chromedp.SendKeys(`#search-q`, "hooks"),
		chromedp.Click(`#search-go`),
		chromedp.WaitVisible(`#search-results li.hit`),
	)
	hitText, markText, link, hitBlock, meta := text(`#search-results li.hit`), text(`#search-results li.hit mark`),
		attr(`#search-results li.hit a.block-link`, "href"), attr(`#search-results li.hit`, "data-block-id"), text(`#search-meta`)
	if !strings.Contains(hitText, "Corvids") || !strings.Contains(hitText, "Crows") || !strings.Contains(hitText, "bend wire into hooks") {
		t.Errorf("search hit shows %q, want the document, its section path and the snippet", hitText)
	}
	if markText != "hooks" {
		t.Errorf("highlighted %q, want the matched word hooks", markText)
	}
	// The hit's block is its chunk's first (the heading above the match).
	if !strings.HasPrefix(hitBlock, "20261121100831-") || link != "siyuan://blocks/"+hitBlock {
		t.Errorf("hit of block %q links to %q, want siyuan://blocks/<its id>", hitBlock, link)
	}
	if !strings.Contains(meta, "1 result") || !strings.Contains(meta, "lexical") {
		t.Errorf("search meta %q, want the count and the mode", meta)
	}
	shot("search")
	if !strings.Contains(meta, "No embedding model is installed") || attr(`#search-meta [data-reason]`, "data-reason") != "no_embedding_model" {
		t.Errorf("the best available search without models shows %q, want the reason it is lexical in words", meta)
	}
	if note := attr(`#search-results li.hit a.note-link`, "href"); note != "/notes/"+noteDoc+"#"+hitBlock {
		t.Errorf("the hit's note view link is %q, want /notes/%s#%s", note, noteDoc, hitBlock)
	}
	// Asked for lexical, the search has nothing to explain.
	do("lexical search",
		chromedp.SetValue(`#search-mode`, "lexical"),
		chromedp.Click(`#search-go`),
		chromedp.WaitVisible(`#search-results li.hit`),
	)
	if m := text(`#search-meta`); !strings.Contains(m, "mode lexical") || strings.Contains(m, "No embedding model") {
		t.Errorf("a lexical search shows %q, want mode lexical with no reason", m)
	}

	// Ask: the answer grows sentence by sentence, each once it is
	// verified, before it is done.
	do("ask",
		chromedp.Click(`#tab-ask`),
		chromedp.WaitVisible(`#ask-q`),
		chromedp.SendKeys(`#ask-q`, "What do crows use to get food?"),
		chromedp.Click(`#ask-go`),
	)
	const want = crowsAnswer
	samples := watchAnswer(t, ctx, func() { shot("ask-streaming") })
	// What the page showed while the answer streamed: the first verified
	// sentence alone, perhaps then both; never part of a sentence.
	if len(samples) == 0 || samples[0] != "Crows «use tools to get food» [1]." {
		t.Errorf("while it streamed the page showed %q, want the first verified sentence first", samples)
	}
	for _, s := range samples {
		if !strings.HasPrefix(want, s) || !strings.HasSuffix(s, ".") {
			t.Errorf("streamed text %q is not whole sentences of the answer %q", s, want)
		}
	}

	answerText, mode, sources := text(`#answer-text`), text(`#answer-mode`), text(`#answer-sources`)
	cites, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#answer-text button.cite')].map(b => b.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(answerText, "use tools to get food") || !slices.Equal(cites, []string{"1", "1"}) {
		t.Errorf("finished answer %q with citation buttons %v, want the answer with its two markers as clickable 1s", answerText, cites)
	}
	if m := attr(`#answer-mode [data-mode]`, "data-mode"); m != "llm" || !strings.HasPrefix(mode, "language model") {
		t.Errorf("mode shows %q (%s), want llm, said as language model (why: %s)", mode, m, text(`#answer-reasons`))
	}
	if !strings.Contains(sources, "Corvids") {
		t.Errorf("sources show %q, want the cited document", sources)
	}

	// The follow-up questions come after the answer, on the same stream.
	do("follow-ups", chromedp.WaitVisible(`#answer-followups li button`))
	if fu := text(`#answer-followups`); !strings.Contains(fu, "How long do crows remember faces?") || !strings.Contains(fu, "Do ravens use tools too?") {
		t.Errorf("follow-ups show %q", fu)
	}

	// Clicking [1] shows the cited block's text and a link into SiYuan.
	do("open citation 1",
		chromedp.Click(`#answer-text button.cite[data-n="1"]`),
		chromedp.WaitVisible(`#cite-panel[data-state="loaded"]`),
	)
	blockText, quote, citeLink := text(`#cite-text`), text(`#cite-quote`), attr(`#cite-link`, "href")
	if blockText != "Crows use tools to get food: they bend wire into hooks." {
		t.Errorf("citation panel shows %q, want the cited block's own text", blockText)
	}
	if !strings.Contains(quote, "use tools to get food") {
		t.Errorf("citation quote %q", quote)
	}
	if citeLink != "siyuan://blocks/"+noteTools {
		t.Errorf("citation link %q, want siyuan://blocks/%s", citeLink, noteTools)
	}
	if note := attr(`#cite-note`, "href"); note != "/notes/"+noteDoc+"#"+noteTools {
		t.Errorf("citation's note view link %q, want /notes/%s#%s", note, noteDoc, noteTools)
	}
	shot("ask")

	// Status: the stages with what they handled, and the SiYuan bridge.
	do("status",
		chromedp.Click(`#tab-status`),
		chromedp.WaitVisible(`#stages tbody tr[data-stage="chunk"]`),
	)
	chunkRow, bridge, index, model := text(`#stages tbody tr[data-stage="chunk"]`), text(`#status-siyuan`), text(`#status-index`),
		text(`#status-providers [data-provider="fake"]`)
	if f := strings.Fields(chunkRow); len(f) != 6 || f[0] != "chunk" || f[3] == "0" {
		t.Errorf("chunk stage row %q, want its counts with at least one acked", chunkRow)
	}
	if !strings.Contains(bridge, "Connected") || !strings.Contains(bridge, "Documents synced") {
		t.Errorf("SiYuan bridge shows %q, want it connected", bridge)
	}
	if !strings.HasPrefix(model, "breaker closed") {
		t.Errorf("the fake provider shows %q, want its breaker closed", model)
	}
	if !strings.Contains(index, "Documents") {
		t.Errorf("index card shows %q", index)
	}
	shot("status")

	// A provider that fails mid-answer after a verified sentence was shown
	// (not normal operation) is retried: the stream restarts, and the page
	// drops the text so far instead of running the two together. Token 8
	// ("They ") begins the second sentence, so the first was shown.
	provider.Script(llmtest.CutAfter(8))
	do("ask with a stream that breaks",
		chromedp.Click(`#tab-ask`),
		chromedp.Click(`#ask-new`),
		chromedp.SendKeys(`#ask-q`, "What do crows bend into hooks?"),
		chromedp.Click(`#ask-go`),
	)
	samples = watchAnswer(t, ctx, nil)
	restarts := attr(`#answer-text`, "data-restarts")
	if restarts != "1" {
		t.Errorf("the page saw %q restarts, want 1", restarts)
	}
	for _, s := range samples {
		if !strings.HasPrefix(want, s) {
			t.Errorf("after a restart the page shows %q, not the start of the answer %q", s, want)
		}
	}
	if got := text(`#answer-text`); !strings.HasPrefix(got, "Crows «use tools to get food» 1") {
		t.Errorf("the answer after a restart reads %q", got)
	}

	// When the language model fails, the page says so and why, and shows
	// the best passages with the matches marked.
	provider.Always(llmtest.Fail(500))
	do("ask with the model down",
		chromedp.Click(`#ask-new`),
		chromedp.SendKeys(`#ask-q`, "How do crows bend wire?"),
		chromedp.Click(`#ask-go`),
		chromedp.WaitVisible(`#answer-text[data-state="done"]`),
	)
	mode, reasons := attr(`#answer-mode [data-mode]`, "data-mode"), text(`#answer-reasons`)
	codes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#answer-reasons [data-reason]')].map(r => r.dataset.reason)`))
	if err != nil {
		t.Fatal(err)
	}
	marks, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#answer-text mark')].map(m => m.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if mode != "search_only" || !slices.Contains(codes, "llm_failed") || !strings.Contains(reasons, "Every language model tried failed") {
		t.Errorf("with the model down the answer shows mode %q and reasons %q %v, want search_only because llm_failed", mode, reasons, codes)
	}
	if !slices.Contains(marks, "wire") {
		t.Errorf("the passages mark %v, want the matched word wire", marks)
	}
	shot("ask-fallback")

	// A gateway with a token: the page loads, asks for the token, retries,
	// and keeps it.
	secret := "s3cret"
	locked := gatewayFor(t, sys, dataDir, secret)
	do("search without the token",
		chromedp.Navigate(locked.URL+"/#search"),
		chromedp.WaitVisible(`body[data-ready="true"]`),
		chromedp.Click(`#tab-search`),
		chromedp.WaitVisible(`#search-q`),
		chromedp.SendKeys(`#search-q`, "hooks"),
		chromedp.Click(`#search-go`),
		chromedp.WaitVisible(`#token-form`),
	)
	if m := text(`#search-meta`); !strings.Contains(m, "access token") {
		t.Errorf("without the token the search shows %q", m)
	}
	do("give the token",
		chromedp.SendKeys(`#token-input`, "wrong"),
		chromedp.Click(`#token-go`),
		chromedp.WaitVisible(`#token-form`),
	)
	if l := text(`#token-label`); !strings.Contains(l, "refused") {
		t.Errorf("after a wrong token the page says %q", l)
	}
	do("give the right token",
		chromedp.SendKeys(`#token-input`, secret),
		chromedp.Click(`#token-go`),
		chromedp.WaitVisible(`#search-results li.hit`),
	)

	// Russian: the interface switches, and the choice is kept.
	do("switch to Russian", chromedp.Click(`#lang-ru`))
	tab := text(`#tab-search`)
	do("reload", chromedp.Reload(), chromedp.WaitVisible(`body[data-ready="true"]`))
	placeholder := attr(`#ask-q`, "placeholder")
	do("status in Russian", chromedp.Click(`#tab-status`), chromedp.WaitVisible(`#stages tbody tr[data-stage="chunk"]`))
	if h := text(`#stages thead`); !strings.Contains(h, "Стадия") || !strings.Contains(h, "В очереди") {
		t.Errorf("status header in Russian reads %q", h)
	}
	if tab != "Поиск" || placeholder != "Задайте вопрос по своим заметкам" {
		t.Errorf("in Russian the search tab reads %q and the question box %q", tab, placeholder)
	}
	shot("status-ru")
}

// watchAnswer polls the answer as a person watches it, until it is done,
// and returns the texts seen while it streamed (trimmed, non-empty).
// onStreaming runs once, when a few words are there.
func watchAnswer(t *testing.T, ctx context.Context, onStreaming func()) []string {
	t.Helper()
	type answerState struct {
		State string `json:"state"`
		Text  string `json:"text"`
	}
	var seen []string
	for {
		st, err := chromedp.Run(ctx, chromedp.Evaluate[answerState](`(() => { const e = document.querySelector('#answer-text');
			return {state: e.dataset.state || '', text: e.textContent}; })()`))
		if err != nil {
			t.Fatalf("read the answer: %v", err)
		}
		switch st.State {
		case "streaming":
			if s := strings.TrimSpace(st.Text); s != "" && (len(seen) == 0 || seen[len(seen)-1] != s) {
				seen = append(seen, s)
			}
			if onStreaming != nil && strings.Count(st.Text, " ") >= 4 {
				onStreaming()
				onStreaming = nil
			}
		case "error":
			msg, _ := chromedp.Run(ctx, chromedp.Text(`#answer-state`))
			t.Fatalf("the answer failed: %s", msg)
		case "done":
			return seen
		}
		time.Sleep(15 * time.Millisecond)
	}
}
