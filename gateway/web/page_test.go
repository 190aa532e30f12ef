package web_test

// The page at phone and desktop widths in both languages, over a scripted
// backend (no pipeline): layout, Markdown answers, Stop, conversations kept
// across reloads, reasons in words, citations that open somewhere, and the
// gateway down. Screenshots of each view go to $EXOCORTEX_SCREENSHOTS.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	workeranswer "github.com/exocortex/exocortex/workers/answering"
	"github.com/exocortex/exocortex/workers/researching"
)

const (
	syDoc   = "20261121100831-doc0001"
	syBlock = "20261121100831-blk0001"
	mdDoc   = "md-0a1b2c3d4e5f6a7b"
	mdBlock = "md-0a1b2c3d4e5f6a7b-p2"
)

// everyReason is a reason of each code the answer, retrieval and research
// stages give, with details as they write them.
var everyReason = []string{
	answer.ReasonNoContexts,
	answer.ReasonNoProvider,
	answer.ReasonLLMFailed + ": fake: 500 Internal Server Error",
	answer.ReasonLowCoverage + ": 1 of the answer's 3 claims are supported by the notes (confidence 0.20)",
	answer.ReasonNoQA,
	answer.ReasonLowQA + ": no span above the extractive model's threshold",
	answer.ReasonDropped + ": [2] " + answer.DropNotStated,
	answer.ReasonCorrected + ": 20261121100831-blk0002 -> 20261121100831-blk0001",
	answer.ReasonUnsupported + ": " + answer.DropNotEntailed + `: "Crows fly to the moon."`,
	answer.ReasonDeadline + ": the language model had not answered within 20s (fake: timeout)",
	answer.ReasonCut + ": the model's answer ran past its budget of 512 tokens and was cut",
	answer.ReasonNotInNotes + ": the language model found no answer in the notes",
	answer.ReasonLoop + ": the model said the same sentence again and again (5 repeats) and was stopped",
	answer.ReasonSetAside + `: block 20261121100831-blk0003 addresses an AI assistant ("ignore previous instructions")`,
	answer.ReasonQABudget + ": read 1 of 4 passages within 2.1s",
	"qa_failed: the extractive model gave 2 spans for one passage",
	answer.DropLanguage + ": the model answered in another language than the question's (ru); asked again",
	"shown_verified: the sentences shown were verified as they came and are kept",
	`cache: answered before as "what do crows use?" (llm); its notes have not changed`,
	workeranswer.ReasonCancelled + ": the client left and cancelled the query",
	retrieval.ReasonNoEmbedder + ": no embedding model is installed (exocortex models fetch); lexical search only",
	retrieval.ReasonNoVectors + ": no vector store is open; lexical search only",
	retrieval.ReasonNoReranker + ": no reranker model is installed (exocortex models fetch); fused order kept",
	retrieval.ReasonWidened + ": best cosine 0.301 under 0.35, ef 64 -> 256",
	retrieval.ReasonEmbedError + ": embedder: broken pipe",
	retrieval.ReasonTranslated + ": en: what do crows use",
	retrieval.ReasonNoTranslator + ": the question is in ru and notes are in en, but no language-model provider can translate it",
	retrieval.ReasonTranslationFailed + ": the question is in ru and notes are in en; translating it failed: timeout",
	"reformulation_failed: fake: 500",
	retrieval.ReasonScopeEmpty + ": no note matches the scope (in:Nowhere); nothing was searched (widen or drop the scope)",
	retrieval.ReasonScopeListed + ": no words to search; the 3 newest of the scope's 3 notes",
	retrieval.ReasonNoRecency + ": this retrieve worker has no index of note times; ranked without recency",
	"scope: in:Work tag:recipe",
	researching.ReasonWallBudget + ": the research's time ran out after 2 of 5 documents",
	researching.ReasonCallBudget + ": this task's share of the research's provider calls (8) was spent after 3 of 5 documents",
	researching.ReasonTaskFailed + ": after 3 deliveries: boom",
	researching.ReasonUnparsable + ": the fact step on document md-1 gave no JSON; nothing taken from it",
	researching.ReasonNoDocuments + ": nothing in the notes matched the sub-question",
	researching.ReasonNoLLMAsked + ": the request asked for no language model; the best passages are kept as they are",
	researching.ReasonPlanFailed + ": fake: 500",
	"facts_cut: 40 facts, the model was given the first 30",
	"no_facts: the research found no verified facts in the notes",
	"report_fallback: the model's report was unusable: empty; the report lists the verified facts",
	"draft_failed: fake: 500",
	`unsupported_fact: not_stated: "Crows live 200 years."`,
	`task_skipped: "Do ravens use tools?"`,
}

// reasonCode is a reason's code (what comes before the colon).
func reasonCode(r string) string {
	code, _, _ := strings.Cut(r, ":")
	return code
}

// scriptedBackend answers from a script: a Markdown answer, an answer
// explaining every reason, a slow answer and a slow search that wait for
// Stop, and an unavailable pipeline.
type scriptedBackend struct {
	mu        sync.Mutex
	asked     []*schemas.QuerySubmitted
	cancelled chan string // what the page stopped, once its context ended
}

func newScriptedBackend() *scriptedBackend {
	return &scriptedBackend{cancelled: make(chan string, 16)}
}

func (b *scriptedBackend) lastAsk() *schemas.QuerySubmitted {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.asked) == 0 {
		return nil
	}
	return b.asked[len(b.asked)-1]
}

func isRussian(s string) bool {
	return strings.ContainsAny(s, "абвгдеёжзийклмнопрстуфхцчшщыьэюя")
}

func (b *scriptedBackend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	if strings.Contains(req.Query, "slow") || strings.Contains(req.Query, "медленно") {
		<-ctx.Done()
		b.cancelled <- "search: " + req.Query
		return nil, ctx.Err()
	}
	return &gateway.SearchResult{Mode: schemas.ModeLexical, TimingsMS: map[string]float64{"total": 12},
		Reasons: []string{retrieval.ReasonNoEmbedder + ": no embedding model is installed (exocortex models fetch); lexical search only"},
		Results: []gateway.SearchHit{
			{Rank: 1, Title: "Corvids", SectionPath: []string{"Corvids", "Crows", "Tools"}, BlockID: syBlock, DocID: syDoc,
				Snippet: "Crows use **tools** to get food: they bend wire into hooks and **tools** from twigs.", Link: "siyuan://blocks/" + syBlock},
			{Rank: 2, Title: "Вороны и инструменты", SectionPath: []string{"Птицы", "Вороны"}, BlockID: mdBlock, DocID: mdDoc,
				Snippet: "Вороны делают **инструменты** из веток; это **bold** в заметке, а не совпадение.",
				Path:    "/home/me/notes/birds.md", Link: "file:///home/me/notes/birds.md"},
		}}, nil
}

// markdownAnswer is what the model "wrote": every Markdown construct the
// page renders, and markup that must stay text.
func markdownAnswer(ru bool) string {
	if ru {
		return "Вороны **используют инструменты**, чтобы добыть еду [1]. Это есть и в *обычных* заметках [2].\n\n" +
			"- Сгибают проволоку в крючки [1]\n- Бросают орехи на дорогу\n  - и ждут машину\n\n" +
			"1. Найти ветку\n2. Ободрать листья\n\n" +
			"| Птица | Инструмент | Источник |\n|:------|:----------:|---------:|\n| Ворона | крючок | [1] |\n| Грач | камень | [2] |\n\n" +
			"Команда `exocortex ask`, или так:\n\n```sh\nexocortex ask \"<b>вороны</b>\"\n```\n\n" +
			"См. [статью](https://example.org/crows), [заметку](/notes/" + mdDoc + "#" + mdBlock + "), [в SiYuan](siyuan://blocks/" + syBlock + ") " +
			"и [вот это](javascript:window.__pwned=1).\n<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=1</script>"
	}
	return "Crows **use tools** to get food [1]. Plain *Markdown* notes say so too [2].\n\n" +
		"- They bend wire into hooks [1]\n- They drop nuts on roads\n  - and wait for cars\n\n" +
		"1. Find a twig\n2. Strip the leaves\n\n" +
		"| Bird | Tool | Source |\n|:-----|:----:|-------:|\n| Crow | hook | [1] |\n| Rook | stone | [2] |\n\n" +
		"Run `exocortex ask`, or:\n\n```sh\nexocortex ask \"<b>crows</b>\"\n```\n\n" +
		"See [the paper](https://example.org/crows), [the note](/notes/" + mdDoc + "#" + mdBlock + "), [in SiYuan](siyuan://blocks/" + syBlock + ") " +
		"and [this](javascript:window.__pwned=1).\n<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=1</script>"
}

var scriptedCitations = []schemas.Citation{
	{BlockID: syBlock, DocID: syDoc, Title: "Corvids", SectionPath: []string{"Corvids", "Crows"}, Quote: "use tools to get food",
		Link: "siyuan://blocks/" + syBlock, Number: 1},
	{BlockID: mdBlock, DocID: mdDoc, Title: "birds.md", SectionPath: []string{"Birds", "Crows"}, Quote: "Markdown notes say so",
		Link: "file:///home/me/notes/birds.md", Number: 2},
}

func (b *scriptedBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	b.mu.Lock()
	b.asked = append(b.asked, q)
	b.mu.Unlock()
	ru := isRussian(q.Question)
	done := &schemas.AnswerDone{QueryID: "q-" + fmt.Sprint(time.Now().UnixNano()), Question: q.Question, Mode: schemas.AnswerLLM,
		Confidence: 0.82, TimingsMS: map[string]float64{"total": 840}}
	switch {
	case strings.Contains(q.Question, "slow") || strings.Contains(q.Question, "медленно"):
		onToken(&schemas.AnswerToken{Seq: 1, Text: "Crows use tools [1]."})
		<-ctx.Done()
		b.cancelled <- "ask: " + q.Question
		return nil, ctx.Err()
	case strings.Contains(q.Question, "unavailable") || strings.Contains(q.Question, "недоступ"):
		return nil, fmt.Errorf("the index: %w", gateway.ErrNoIndex)
	case strings.Contains(q.Question, "explain") || strings.Contains(q.Question, "объясни"):
		done.Mode, done.Confidence = schemas.AnswerSearchOnly, 0
		done.Answer = "No language model is configured, so here are the most relevant passages from your notes:\n" +
			"1. Corvids > Crows — Crows use **tools** to get food [1]"
		if ru {
			done.Answer = "Языковая модель не настроена, поэтому вот самые подходящие места из заметок:\n" +
				"1. Corvids > Crows — Crows use **tools** to get food [1]"
		}
		done.Citations = scriptedCitations[:1]
		done.Reasons = append(slices.Clone(everyReason), "frobnicated: a reason from a newer gateway")
		done.Unsupported = []schemas.Unsupported{{Text: "Crows fly to the moon.", Reason: answer.DropNotStated}}
	case strings.Contains(q.Question, "Markdown") || strings.Contains(q.Question, "разметк"):
		done.Answer = markdownAnswer(ru)
		done.Citations = scriptedCitations
	default:
		done.Answer = "Crows remember faces for years [1]."
		if ru {
			done.Answer = "Вороны годами помнят лица [1]."
		}
		done.Citations = scriptedCitations[:1]
	}
	// The answer streams paragraph by paragraph.
	for i, part := range strings.SplitAfter(done.Answer, "\n\n") {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(15 * time.Millisecond):
		}
		onToken(&schemas.AnswerToken{Seq: i + 1, Text: part})
	}
	return done, nil
}

func (b *scriptedBackend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	return nil, errors.New("the scripted backend does no research")
}

func (b *scriptedBackend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	switch id {
	case syBlock:
		return &gateway.Block{ID: syBlock, DocID: syDoc, Title: "Corvids", SectionPath: []string{"Corvids", "Crows"},
			Text: "Crows use tools to get food: they bend wire into hooks.", Link: "siyuan://blocks/" + syBlock}, nil
	case mdBlock:
		return &gateway.Block{ID: mdBlock, DocID: mdDoc, Title: "birds.md", SectionPath: []string{"Birds", "Crows"},
			Text: "Plain Markdown notes say so too: crows use tools.", Link: "file:///home/me/notes/birds.md"}, nil
	}
	return nil, nil
}

func scriptedStatus(ctx context.Context) (any, error) {
	stage := func(name string, pending, acked, retried, dead int) map[string]any {
		return map[string]any{"stage": name, "pending": pending, "ack_pending": pending / 2, "acked": acked, "retried": retried, "dead_lettered": dead}
	}
	return map[string]any{"running": true, "nats": "nats://127.0.0.1:4222", "documents": 1284, "chunks": 20511, "embedded": 20511, "search": "hybrid",
		"stages": []any{stage("chunk", 0, 1284, 0, 0), stage("embed", 12, 20499, 3, 0), stage("index", 0, 20511, 0, 0),
			stage("retrieve", 0, 3120, 0, 0), stage("rerank", 0, 3120, 0, 0), stage("answer", 1, 3101, 12, 2)},
		"answer_cache": map[string]any{"entries": 214, "hit_rate": 0.31},
		"siyuan":       map[string]any{"connected": true, "url": "http://127.0.0.1:6806", "docs_synced": 311, "last_event": time.Now().Format(time.RFC3339), "last_reconcile": time.Now().Format(time.RFC3339)},
		"providers":    []any{map[string]any{"name": "openrouter", "breaker": "closed", "latency_ns": 812e6}, map[string]any{"name": "ollama", "breaker": "open"}},
	}, nil
}

// scriptedGateway is the real gateway over the scripted backend, serving
// the page as up does.
func scriptedGateway(t *testing.T, be gateway.Backend) *httptest.Server {
	return jsonOnlyGateway(t, be, gateway.Config{})
}

// jsonOnlyGateway is the real gateway (cfg's token and CORS origins) over
// be, serving the page. The gateway refuses POSTs that are not JSON (a page
// on another origin can send text/plain without asking), so a client that
// sends another type fails the test here, saying which.
func jsonOnlyGateway(t *testing.T, be gateway.Backend, cfg gateway.Config) *httptest.Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.Mounts = map[string]http.Handler{"/": web.Handler()}
	cfg.Public = []string{"/", "/index.html", "/static/"}
	cfg.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	srv, err := gateway.New(cfg, be, gateway.Deps{Status: scriptedStatus})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); r.Method == http.MethodPost && !strings.HasPrefix(ct, "application/json") {
			t.Errorf("the client sent POST %s as %q, want application/json", r.URL.Path, ct)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// newBrowser starts Chromium (or skips the test when there is none), with
// extra options after chromedp's defaults and the test's own.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	browser, err := findChromium()
	if err != nil && os.Getenv("EXOCORTEX_CHROMIUM") != "" {
		t.Fatalf("the browser EXOCORTEX_CHROMIUM names: %v", err)
	}
	if err != nil {
		t.Skipf("no Chromium for the web page's browser test: %v (run `task setup` as root to install Debian's chromium, or set EXOCORTEX_CHROMIUM)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // root in containers
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	// The page's uncaught errors fail the test.
	var (
		mu     sync.Mutex
		thrown []string
	)
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf), chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			mu.Lock()
			thrown = append(thrown, msg)
			mu.Unlock()
		}
	}))
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancel)
	// The tab lives as long as the context its first action gets: this one.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range thrown {
			t.Errorf("the page threw: %s", m)
		}
	})
	return ctx
}

// pageDriver drives one tab for a test.
type pageDriver struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func (p pageDriver) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func (p pageDriver) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(sel))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (p pageDriver) attr(sel, name string) string {
	p.t.Helper()
	a, err := chromedp.Run(p.ctx, chromedp.AttributeValue(sel, name))
	if err != nil {
		p.t.Fatalf("%s of %s: %v", name, sel, err)
	}
	return a.Value
}

func evalIn[T any](p pageDriver, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (p pageDriver) shot(name string) {
	p.t.Helper()
	// From the top, or the sticky header lands mid-page in the picture.
	p.do("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	img, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.shots, name+".png")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
}

type overflow struct {
	Scroll int      `json:"scroll"`
	Inner  int      `json:"inner"`
	Bad    []string `json:"bad"`
}

// fits checks that nothing on the page is wider than the viewport: the
// document does not scroll sideways and no element sticks out of it
// (tables scroll inside their own box).
func (p pageDriver) fits(view string) {
	p.t.Helper()
	o := evalIn[overflow](p, `(() => {
		const vw = document.documentElement.clientWidth, bad = [];
		for (const e of document.querySelectorAll('body *')) {
			if (e.parentElement && e.parentElement.closest('.table-scroll')) continue;
			const r = e.getBoundingClientRect();
			if (r.width === 0 && r.height === 0) continue;
			if (r.right > vw + 1 || r.left < -1) bad.push(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
				(typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\s+/).join('.') : '') +
				' [' + Math.round(r.left) + ', ' + Math.round(r.right) + ']');
		}
		return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth, bad: bad.slice(0, 8)};
	})()`)
	if o.Scroll > o.Inner || len(o.Bad) > 0 {
		p.t.Errorf("%s: the page is %d px wide in a %d px viewport; sticking out: %v", view, o.Scroll, o.Inner, o.Bad)
	}
}

// wide checks that a text box takes the width a phone has.
func (p pageDriver) wide(sel string, width int) {
	p.t.Helper()
	w := evalIn[float64](p, `document.querySelector('`+sel+`').getBoundingClientRect().width`)
	want := 300.0
	if width <= 640 {
		want = 0.8 * float64(width-2*12)
	}
	if w < want {
		p.t.Errorf("%s is %.0f px wide in a %d px viewport, want at least %.0f", sel, w, width, want)
	}
}

func (p pageDriver) setViewport(width int) {
	p.t.Helper()
	p.do("viewport", chromedp.EmulateViewport(int64(width), 860))
}

func (p pageDriver) awaitCancel(be *scriptedBackend, what string) {
	p.t.Helper()
	select {
	case got := <-be.cancelled:
		if got != what {
			p.t.Errorf("the backend saw %q cancelled, want %q", got, what)
		}
	case <-time.After(10 * time.Second):
		p.t.Fatalf("Stop did not cancel %q: the backend's context is still live", what)
	}
}

// words is what the page says, per language, that the test looks for.
var words = map[string]map[string]string{
	"en": {"stopped": "Stopped: the question was cancelled.", "search_stopped": "Search stopped.",
		"no_embedding": "No embedding model is installed", "no_llm": "No language model is configured, so no answer was written",
		"loop": "The language model kept repeating itself", "set_aside": "instructions addressed to an AI assistant",
		"shown_verified": "The sentences already shown were checked", "unknown": "Another reason, which this page does not know yet (frobnicated).",
		"passages": "passages", "network": "Cannot reach the gateway", "offline": "This device is offline",
		"unavailable": "The gateway cannot answer now: the pipeline is not ready.", "not_stated": "the note does not state it",
		"ask_md": "Show me Markdown about crows", "ask_explain": "explain every reason", "ask_slow": "a slow question",
		"ask_next": "And ravens?", "ask_other": "Do crows remember faces?", "ask_down": "unavailable pipeline", "search_slow": "slow search"},
	"ru": {"stopped": "Остановлено: вопрос отменён.", "search_stopped": "Поиск остановлен.",
		"no_embedding": "Модель эмбеддингов не установлена", "no_llm": "Языковая модель не настроена, поэтому ответ не написан",
		"loop": "Языковая модель начала повторяться", "set_aside": "указания для ИИ-ассистента",
		"shown_verified": "Уже показанные предложения были проверены", "unknown": "Другая причина, которую эта страница пока не знает (frobnicated).",
		"passages": "фрагменты", "network": "Не удаётся связаться со шлюзом", "offline": "Устройство не в сети",
		"unavailable": "Шлюз сейчас не может ответить: конвейер не готов.", "not_stated": "заметка этого не утверждает",
		"ask_md": "Покажи разметку про ворон", "ask_explain": "объясни все причины", "ask_slow": "медленно отвечай",
		"ask_next": "А вороны-падальщики?", "ask_other": "Помнят ли вороны лица?", "ask_down": "шлюз недоступен", "search_slow": "медленно ищи"},
}

func TestThePageWorksOnPhonesAndDesktopsInBothLanguages(t *testing.T) {
	ctx := newBrowser(t)
	be := newScriptedBackend()
	srv := scriptedGateway(t, be)
	shots := screenshotDir(t)
	for _, lang := range []string{"en", "ru"} {
		for _, width := range []int{360, 390, 1280} {
			t.Run(fmt.Sprintf("%s at %d px", lang, width), func(t *testing.T) {
				p := pageDriver{t: t, ctx: ctx, shots: shots}
				w := words[lang]
				// Screenshots at the widths the issue names; 360 is checked only.
				shot := func(view string) {
					if width != 360 {
						p.shot(fmt.Sprintf("%s-%s-%d", view, lang, width))
					}
				}
				p.setViewport(width)
				p.do("open the page in "+lang,
					chromedp.Navigate(srv.URL+"/#search"),
					chromedp.WaitVisible(`body[data-ready="true"]`),
					chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem('exocortex.lang', '`+lang+`')`),
					chromedp.Reload(),
					chromedp.WaitVisible(`body[data-ready="true"]`),
				)

				// Search: full-width box, matches marked unlike bold, the
				// reason in words, links that open.
				p.wide(`#search-q`, width)
				p.do("search",
					chromedp.SendKeys(`#search-q`, "crows"),
					chromedp.Click(`#search-go`),
					chromedp.WaitVisible(`#search-results li.hit`),
				)
				p.fits("search")
				meta := p.text(`#search-meta`)
				if !strings.Contains(meta, w["no_embedding"]) || strings.Contains(meta, "no_embedding_model") {
					t.Errorf("the search explains %q, want %q in words and no code", meta, w["no_embedding"])
				}
				notes := evalIn[[]string](p, `[...document.querySelectorAll('#search-results a.note-link')].map(a => a.getAttribute('href'))`)
				if !slices.Equal(notes, []string{"/notes/" + syDoc + "#" + syBlock, "/notes/" + mdDoc + "#" + mdBlock}) {
					t.Errorf("the hits link to the note view at %v", notes)
				}
				if sy := evalIn[[]string](p, `[...document.querySelectorAll('#search-results a.block-link')].map(a => a.getAttribute('href'))`); !slices.Equal(sy, []string{"siyuan://blocks/" + syBlock}) {
					t.Errorf("the SiYuan links are %v, want one, for the SiYuan hit", sy)
				}
				if n := evalIn[int](p, `document.querySelectorAll('a[href^="file:"]').length`); n != 0 {
					t.Errorf("%d file:// links on the page; browsers refuse them", n)
				}
				// A match is a highlighter stroke, not bold.
				markBg := evalIn[string](p, `getComputedStyle(document.querySelector('#search-results mark')).backgroundColor`)
				if markBg == "" || markBg == "rgba(0, 0, 0, 0)" || markBg == "transparent" {
					t.Errorf("a search match has background %q, want a highlight", markBg)
				}
				shot("search")

				// Stop while searching: the gateway's query is cancelled.
				p.do("search slowly",
					chromedp.Evaluate[chromedp.Void](`document.querySelector("#search-q").value = ""`),
					chromedp.SendKeys(`#search-q`, w["search_slow"]),
					chromedp.Click(`#search-go`),
					chromedp.WaitVisible(`#search-stop`),
					chromedp.Click(`#search-stop`),
				)
				p.awaitCancel(be, "search: "+w["search_slow"])
				p.do("search stopped", chromedp.WaitVisible(`#search-meta[data-state="stopped"]`))
				if m := p.text(`#search-meta`); m != w["search_stopped"] {
					t.Errorf("after Stop the search says %q, want %q", m, w["search_stopped"])
				}

				// Ask: the answer is Markdown made into elements; markup in it stays text.
				p.do("ask for Markdown",
					chromedp.Click(`#tab-ask`),
					chromedp.WaitVisible(`#ask-q`),
				)
				p.wide(`#ask-q`, width)
				p.do("ask for Markdown",
					chromedp.SendKeys(`#ask-q`, w["ask_md"]),
					chromedp.Click(`#ask-go`),
					chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				)
				type rendered struct {
					Items, Nested, Ordered, Cells, Strong, Em, Code, Pre, Cites, Imgs, Scripts int
					Links                                                                      []string
					Pwned                                                                      bool
					Text, StrongWeight, StrongBg                                               string
				}
				r := evalIn[rendered](p, `(() => { const a = document.querySelector('#answer-text'), q = (s) => a.querySelectorAll(s).length;
					const s = a.querySelector('strong'), cs = s ? getComputedStyle(s) : {};
					return {Items: q('ul > li'), Nested: q('ul ul > li'), Ordered: q('ol > li'), Cells: q('.table-scroll table td'), Strong: q('strong'),
						Em: q('em'), Code: q('code.md-inline-code'), Pre: q('pre > code'), Cites: q('button.cite'), Imgs: document.querySelectorAll('img').length,
						Scripts: q('script'), Links: [...a.querySelectorAll('a')].map(x => x.getAttribute('href')), Pwned: !!window.__pwned,
						Text: a.textContent, StrongWeight: String(cs.fontWeight), StrongBg: String(cs.backgroundColor)}; })()`)
				if r.Items != 3 || r.Nested != 1 || r.Ordered != 2 || r.Cells != 6 || r.Strong != 1 || r.Em != 1 || r.Code != 1 || r.Pre != 1 {
					t.Errorf("the Markdown answer rendered as %+v, want 3 bullet items (1 nested), 2 numbered, a 2x3 table, bold, italic, inline code and a code block", r)
				}
				if r.Pwned || r.Imgs != 0 || r.Scripts != 0 {
					t.Errorf("markup in the model's text ran or became elements: pwned %v, %d img, %d script", r.Pwned, r.Imgs, r.Scripts)
				}
				wantLinks := []string{"https://example.org/crows", "/notes/" + mdDoc + "#" + mdBlock, "siyuan://blocks/" + syBlock}
				if !slices.Equal(r.Links, wantLinks) {
					t.Errorf("the answer links to %v, want %v (and the javascript: link as text)", r.Links, wantLinks)
				}
				if !strings.Contains(r.Text, "(javascript:window.__pwned=1)") || !strings.Contains(r.Text, `<img src=x onerror="window.__pwned=1">`) ||
					!strings.Contains(r.Text, `exocortex ask "<b>`) {
					t.Errorf("the javascript: link and the markup are not shown as text: %q", r.Text)
				}
				if r.Cites != 5 {
					t.Errorf("%d citation buttons in the answer, want its 5 markers (2 in the table)", r.Cites)
				}
				if r.StrongWeight != "700" || (r.StrongBg != "rgba(0, 0, 0, 0)" && r.StrongBg != "transparent") {
					t.Errorf("bold is weight %s on %s, want weight alone (no highlight: that is a match)", r.StrongWeight, r.StrongBg)
				}
				p.fits("ask")
				shot("ask")

				// Citations open somewhere: the note view for a Markdown note,
				// the note view and SiYuan for a SiYuan block.
				p.do("open citation 2",
					chromedp.Click(`#answer-text button.cite[data-n="2"]`),
					chromedp.WaitVisible(`#cite-panel[data-state="loaded"]`),
				)
				if note, sy := p.attr(`#cite-note`, "href"), evalIn[bool](p, `document.querySelector('#cite-link').hidden`); note != "/notes/"+mdDoc+"#"+mdBlock || !sy {
					t.Errorf("a Markdown note's citation opens %q (SiYuan link hidden: %v), want the note view and no SiYuan link", note, sy)
				}
				p.do("open citation 1",
					chromedp.Click(`#answer-text button.cite[data-n="1"]`),
					chromedp.WaitVisible(`#cite-panel[data-state="loaded"][data-block-id="`+syBlock+`"]`),
					chromedp.WaitVisible(`#cite-link`),
				)
				if note, sy := p.attr(`#cite-note`, "href"), p.attr(`#cite-link`, "href"); note != "/notes/"+syDoc+"#"+syBlock || sy != "siyuan://blocks/"+syBlock {
					t.Errorf("a SiYuan block's citation opens %q and %q", note, sy)
				}
				if n := evalIn[int](p, `document.querySelectorAll('a[href^="file:"]').length`); n != 0 {
					t.Errorf("%d file:// links on the page; browsers refuse them", n)
				}
				p.fits("citation")
				shot("citation")

				// Every reason and the mode in the interface language, no raw codes.
				p.do("ask what explains every reason",
					chromedp.SendKeys(`#ask-q`, w["ask_explain"]),
					chromedp.Click(`#ask-go`),
					chromedp.WaitVisible(`#answer-meta`),
					chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				)
				view := p.text(`#view-ask`)
				for _, want := range []string{w["no_llm"], w["loop"], w["set_aside"], w["shown_verified"], w["unknown"], w["not_stated"], w["passages"]} {
					if !strings.Contains(view, want) {
						t.Errorf("the answer's reasons do not say %q:\n%s", want, p.text(`#answer-meta`))
					}
				}
				// In English some codes are words too (cancelled, translated):
				// the codes with underscores must not show; in Russian, none.
				for _, r := range append(slices.Clone(everyReason), "search_only") {
					if code := reasonCode(r); (lang == "ru" || strings.Contains(code, "_")) && strings.Contains(view, code) {
						t.Errorf("the page shows the raw code %q", code)
					}
				}
				unknown := evalIn[[]string](p, `[...document.querySelectorAll('#answer-reasons .reason-text.unknown')].map(e => e.closest('[data-reason]').dataset.reason)`)
				if !slices.Equal(unknown, []string{"frobnicated"}) {
					t.Errorf("reasons the page has no words for: %v, want only the made-up frobnicated", unknown)
				}
				if m := evalIn[[]string](p, `[...document.querySelectorAll('#answer-text mark')].map(m => m.textContent)`); !slices.Equal(m, []string{"tools"}) {
					t.Errorf("the passages mark %v, want the match tools (as a mark, not bold)", m)
				}
				p.fits("reasons")

				// The gateway's errors in words.
				p.do("ask while the pipeline is down",
					chromedp.SendKeys(`#ask-q`, w["ask_down"]),
					chromedp.Click(`#ask-go`),
					chromedp.WaitVisible(`#answer-text[data-state="error"]`),
				)
				if s := p.text(`#answer-state`); !strings.HasPrefix(s, w["unavailable"]) {
					t.Errorf("an unavailable pipeline reads %q, want %q", s, w["unavailable"])
				}

				// Stop while the answer streams: the gateway's query is cancelled.
				p.do("ask slowly",
					chromedp.SendKeys(`#ask-q`, w["ask_slow"]),
					chromedp.Click(`#ask-go`),
					chromedp.WaitVisible(`#answer-text[data-state="streaming"]`),
					chromedp.Click(`#ask-stop`),
				)
				p.awaitCancel(be, "ask: "+w["ask_slow"])
				p.do("the answer stopped", chromedp.WaitVisible(`#answer-text[data-state="stopped"]`))
				if s := p.text(`#answer-state`); s != w["stopped"] {
					t.Errorf("after Stop the answer says %q, want %q", s, w["stopped"])
				}
				if !evalIn[bool](p, `document.querySelector('#ask-stop').hidden && !document.querySelector('#ask-go').disabled`) {
					t.Errorf("after Stop the Stop button is still shown or Ask still disabled")
				}

				// The conversation survives a reload: the last answer and the
				// one before it are back, and listed.
				p.do("reload", chromedp.Reload(), chromedp.WaitVisible(`body[data-ready="true"]`), chromedp.WaitVisible(`#answer-text .cite`))
				if q := p.text(`#answer-question`); q != w["ask_explain"] {
					t.Errorf("after a reload the answer shown is to %q, want %q", q, w["ask_explain"])
				}
				if n := evalIn[int](p, `document.querySelectorAll('#conversation .turn .turn-a table').length`); n != 1 {
					t.Errorf("after a reload the earlier turn shows %d tables, want the Markdown answer rendered again", n)
				}
				if width <= 640 {
					p.do("open the list", chromedp.Click(`#convs summary`))
				}
				p.do("the list", chromedp.WaitVisible(`#convs-list li.conv`))
				if n := evalIn[int](p, `document.querySelectorAll('#convs-list li.conv').length`); n != 1 {
					t.Errorf("%d conversations listed, want 1", n)
				}
				if turns := p.text(`#convs-list li.conv .conv-meta`); !strings.Contains(turns, "2") {
					t.Errorf("the conversation is listed with %q, want its 2 answered questions", turns)
				}
				p.fits("conversations")
				shot("conversations")

				// A new conversation, then the first resumed: the follow-up
				// carries its turns as history.
				p.do("a new conversation",
					chromedp.Click(`#ask-new`),
					chromedp.SendKeys(`#ask-q`, w["ask_other"]),
					chromedp.Click(`#ask-go`),
					chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				)
				if h := be.lastAsk().History; len(h) != 0 {
					t.Errorf("a new conversation sent history %v, want none", h)
				}
				if n := evalIn[int](p, `document.querySelectorAll('#convs-list li.conv').length`); n != 2 {
					t.Errorf("%d conversations listed, want 2", n)
				}
				p.do("resume the first", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#convs-list li.conv')]
					.find(li => li.querySelector('.conv-title').textContent === `+jsString(w["ask_md"])+`).querySelector('.conv-open').click()`))
				if q := p.text(`#answer-question`); q != w["ask_explain"] {
					t.Errorf("the resumed conversation shows the answer to %q, want its last, %q", q, w["ask_explain"])
				}
				p.do("ask a follow-up",
					chromedp.SendKeys(`#ask-q`, w["ask_next"]),
					chromedp.Click(`#ask-go`),
					chromedp.WaitVisible(`#answer-text[data-state="done"]`),
				)
				var said []string
				for _, h := range be.lastAsk().History {
					said = append(said, h.Role+": "+h.Text)
				}
				if len(said) != 4 || said[0] != "user: "+w["ask_md"] || said[2] != "user: "+w["ask_explain"] || !strings.HasPrefix(said[1], "assistant: ") {
					t.Errorf("the follow-up sent history %q, want the resumed conversation's two turns", said)
				}
				if n := evalIn[int](p, `document.querySelectorAll('#conversation .turn').length`); n != 2 {
					t.Errorf("the resumed conversation shows %d earlier turns, want 2", n)
				}

				// Deleted one by one, and all.
				p.do("delete the other", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#convs-list li.conv')]
					.find(li => li.querySelector('.conv-title').textContent === `+jsString(w["ask_other"])+`).querySelector('.conv-delete').click()`))
				stored := evalIn[[]string](p, `JSON.parse(localStorage.getItem('exocortex.conversations')).map(c => c.turns[0].question)`)
				if !slices.Equal(stored, []string{w["ask_md"]}) {
					t.Errorf("after deleting one the browser keeps %q", stored)
				}
				p.do("delete all", chromedp.Evaluate[chromedp.Void](`document.querySelector('#convs-clear').click(); document.querySelector('#convs-clear').click()`))
				if s := evalIn[string](p, `localStorage.getItem('exocortex.conversations')`); s != "[]" {
					t.Errorf("after deleting all the browser keeps %s", s)
				}
				if n := evalIn[int](p, `document.querySelectorAll('#convs-list li.conv').length`); n != 0 || !evalIn[bool](p, `document.querySelector('#answer').hidden`) {
					t.Errorf("after deleting all %d conversations are listed or the answer is still shown", n)
				}

				// Status: the table scrolls in its own box.
				p.do("status",
					chromedp.Click(`#tab-status`),
					chromedp.WaitVisible(`#stages tbody tr[data-stage="answer"]`),
				)
				p.fits("status")
				shot("status")
			})
		}
	}
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

func TestThePageSaysWhenTheGatewayIsDownOrTheDeviceIsOffline(t *testing.T) {
	ctx := newBrowser(t)
	shots := screenshotDir(t)
	for _, lang := range []string{"en", "ru"} {
		t.Run(lang, func(t *testing.T) {
			p := pageDriver{t: t, ctx: ctx, shots: shots}
			w := words[lang]
			srv := scriptedGateway(t, newScriptedBackend())
			p.setViewport(390)
			p.do("open the page",
				chromedp.Navigate(srv.URL+"/#search"),
				chromedp.WaitVisible(`body[data-ready="true"]`),
				chromedp.Evaluate[chromedp.Void](`localStorage.setItem('exocortex.lang', '`+lang+`')`),
				chromedp.Reload(),
				chromedp.WaitVisible(`body[data-ready="true"]`),
			)
			offline := func(off bool) chromedp.Action[chromedp.Void] {
				return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: off, DownloadThroughput: -1, UploadThroughput: -1})
					return err
				})
			}
			p.do("go offline", offline(true), chromedp.WaitVisible(`#offline`))
			if s := p.text(`#offline`); !strings.HasPrefix(s, w["offline"]) {
				t.Errorf("offline, the page says %q, want %q", s, w["offline"])
			}
			p.fits("offline")
			p.shot("offline-banner-" + lang + "-390")
			p.do("come back", offline(false), chromedp.WaitNotVisible(`#offline`))

			// The gateway stops: the page's own message, not "Failed to fetch".
			srv.CloseClientConnections()
			srv.Close()
			p.do("search with the gateway down",
				chromedp.SendKeys(`#search-q`, "crows"),
				chromedp.Click(`#search-go`),
				chromedp.WaitVisible(`#search-meta [data-problem="network"]`),
			)
			if s := p.text(`#search-meta`); !strings.HasPrefix(s, w["network"]) || strings.Contains(s, "Failed to fetch") {
				t.Errorf("with the gateway down the search says %q, want %q", s, w["network"])
			}
			p.fits("gateway down")
			p.shot("gateway-down-" + lang + "-390")
			p.do("ask with the gateway down",
				chromedp.Click(`#tab-ask`),
				chromedp.SendKeys(`#ask-q`, w["ask_other"]),
				chromedp.Click(`#ask-go`),
				chromedp.WaitVisible(`#answer-state [data-problem="network"]`),
			)
			if s := p.text(`#answer-state`); !strings.HasPrefix(s, w["network"]) {
				t.Errorf("with the gateway down the answer says %q, want %q", s, w["network"])
			}
			p.do("status with the gateway down",
				chromedp.Click(`#tab-status`),
				chromedp.WaitVisible(`#status-error [data-problem="network"]`),
			)
			if s := p.text(`#status-error`); !strings.HasPrefix(s, w["network"]) {
				t.Errorf("with the gateway down the status says %q, want %q", s, w["network"])
			}
		})
	}
}

func TestTheBrowserKeepsTheLatestConversationsWithinTheCap(t *testing.T) {
	ctx := newBrowser(t)
	srv := scriptedGateway(t, newScriptedBackend())
	p := pageDriver{t: t, ctx: ctx}
	tests := []struct {
		name, seed string // seed: JS that returns the conversations stored before
		kept       int
		oldestKept string
	}{
		{"of 60 conversations and a new one the newest 50 are kept",
			`Array.from({length: 60}, (_, i) => ({id: 'c' + i, created: i + 1, updated: i + 1,
				turns: [{question: 'question ' + i, done: {answer: 'answer', mode: 'llm', citations: []}}]}))`,
			50, "question 11"},
		{"conversations over a million characters lose the oldest",
			`Array.from({length: 3}, (_, i) => ({id: 'c' + i, created: i + 1, updated: i + 1,
				turns: [{question: 'вопрос ' + i, done: {answer: 'ответ '.repeat(70000), mode: 'llm', citations: []}}]}))`,
			3, "вопрос 1"}, // 3 x 420,000 characters: the oldest goes
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p.t = t
			p.do("seed the conversations",
				chromedp.Navigate(srv.URL+"/#ask"),
				chromedp.WaitVisible(`body[data-ready="true"]`),
				chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem('exocortex.conversations', JSON.stringify(`+tc.seed+`))`),
				chromedp.Reload(),
				chromedp.WaitVisible(`body[data-ready="true"]`),
				chromedp.SendKeys(`#ask-q`, "Do crows remember faces?"),
				chromedp.Click(`#ask-go`),
				chromedp.WaitVisible(`#answer-text[data-state="done"]`),
			)
			type kept struct {
				Questions []string
				Chars     int
			}
			k := evalIn[kept](p, `(() => { const s = localStorage.getItem('exocortex.conversations');
				return {Questions: JSON.parse(s).map(c => c.turns[0].question), Chars: s.length}; })()`)
			if len(k.Questions) != tc.kept || k.Questions[0] != "Do crows remember faces?" || k.Questions[len(k.Questions)-1] != tc.oldestKept {
				t.Errorf("the browser keeps %d conversations (newest %q, oldest %q), want %d, the new one first and %q last",
					len(k.Questions), k.Questions[0], k.Questions[len(k.Questions)-1], tc.kept, tc.oldestKept)
			}
			if k.Chars > 1000000 {
				t.Errorf("the conversations take %d characters, over the cap of 1,000,000", k.Chars)
			}
			if n := evalIn[int](p, `document.querySelectorAll('#convs-list li.conv').length`); n != tc.kept {
				t.Errorf("%d conversations listed, want %d", n, tc.kept)
			}
		})
	}
}
