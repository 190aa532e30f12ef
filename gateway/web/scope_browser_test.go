package web_test

// The scope bar in Chromium, over a fake gateway that records each request
// the page sends: chips add and remove scope parts, the date picker sets
// since and until, suggestions come from GET /v1/scopes, a facet chip
// narrows the next search, operators typed in the query show as chips and
// stay in the text; in English and Russian, at phone and desktop widths.
// Screenshots of the bar, the suggestions, the dates and the facets go to
// $EXOCORTEX_SCREENSHOTS.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/exocortex/exocortex/gateway/web"
	"github.com/exocortex/exocortex/scope"
)

// The page's requests as this test reads them: its own structs, decoded
// strictly, so a field the page misnames fails the test.
type (
	sentSet struct {
		Notebooks []string `json:"notebooks,omitempty"`
		Paths     []string `json:"paths,omitempty"`
		Docs      []string `json:"docs,omitempty"`
		Tags      []string `json:"tags,omitempty"`
		Langs     []string `json:"langs,omitempty"`
	}
	sentScope struct {
		Include sentSet `json:"include"`
		Exclude sentSet `json:"exclude"`
		Since   string  `json:"since,omitempty"`
		Until   string  `json:"until,omitempty"`
		Recent  bool    `json:"recent,omitempty"`
	}
	sentSearch struct {
		Query  string     `json:"query"`
		Mode   string     `json:"mode"`
		K      int        `json:"k"`
		Lang   string     `json:"lang"`
		Scope  *sentScope `json:"scope"`
		Facets bool       `json:"facets"`
	}
	sentAsk struct {
		Question string            `json:"question"`
		Lang     string            `json:"lang"`
		History  []json.RawMessage `json:"history"`
		Scope    *sentScope        `json:"scope"`
	}
)

const (
	workBook = "20261121100831-nbwork1"
	homeBook = "20261121100831-nbhome1"
)

var moscow = time.FixedZone("MSK", 3*3600)

// scopeGateway is a fake gateway: the page's files, and /v1/search,
// /v1/ask and /v1/scopes that record what they are sent and answer with
// facets, suggestions and the scope read from the query's text.
type scopeGateway struct {
	mu       sync.Mutex
	searches []sentSearch
	asks     []sentAsk
	scopes   int
}

func (g *scopeGateway) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	page := web.Handler()
	mux.Handle("/", page)
	mux.HandleFunc("POST /v1/search", func(w http.ResponseWriter, r *http.Request) {
		var req sentSearch
		if !decodeStrict(t, w, r, &req) {
			return
		}
		g.mu.Lock()
		g.searches = append(g.searches, req)
		g.mu.Unlock()
		_, sc, notes, _ := scope.Parse(req.Query, time.Now(), moscow)
		reply := map[string]any{"mode": "lexical", "timings_ms": map[string]float64{"total": 9}, "scope": sc, "scope_notes": notes,
			"results": []map[string]any{
				{"rank": 1, "title": "Soups", "section_path": []string{"Recipes", "Soups"}, "block_id": "20261121100831-blk0001", "doc_id": "20261121100831-doc0001",
					"snippet": "Borscht: beets, **soup** stock and dill."},
				{"rank": 2, "title": "Щи", "section_path": []string{"Рецепты"}, "block_id": "20261121100831-blk0002", "doc_id": "20261121100831-doc0002",
					"snippet": "Щи из квашеной капусты — **суп** на каждый день."},
			}}
		if req.Facets {
			reply["facets"] = map[string]any{
				"notebooks": []map[string]any{{"id": workBook, "name": "Work", "count": 12}, {"id": homeBook, "name": "Дом", "count": 3}},
				"tags":      []map[string]any{{"tag": "recipe", "count": 5}, {"tag": "рецепт", "count": 2}},
				"months":    []map[string]any{{"month": "2026-11", "count": 4}, {"month": "2026-10", "count": 11}},
			}
		}
		writeJSON(w, reply)
	})
	mux.HandleFunc("POST /v1/ask", func(w http.ResponseWriter, r *http.Request) {
		var req sentAsk
		if !decodeStrict(t, w, r, &req) {
			return
		}
		g.mu.Lock()
		g.asks = append(g.asks, req)
		g.mu.Unlock()
		done, _ := json.Marshal(map[string]any{"query_id": fmt.Sprint("q", time.Now().UnixNano()), "question": req.Question, "mode": "llm",
			"confidence": 0.8, "answer": "Borscht is a beet soup [1].",
			"citations": []map[string]any{{"block_id": "20261121100831-blk0001", "doc_id": "20261121100831-doc0001", "title": "Soups", "number": 1}}})
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: token\ndata: {\"seq\":1,\"text\":\"Borscht is a beet soup [1].\"}\n\nevent: done\ndata: %s\n\n", done)
	})
	mux.HandleFunc("GET /v1/scopes", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.scopes++
		g.mu.Unlock()
		writeJSON(w, map[string]any{
			"notebooks": []map[string]any{{"id": workBook, "name": "Work", "count": 120}, {"id": homeBook, "name": "Дом", "count": 30}},
			"tags":      []map[string]any{{"tag": "recipe", "count": 5}, {"tag": "рецепт", "count": 3}, {"tag": "travel", "count": 7}, {"tag": "путешествия", "count": 4}},
		})
	})
	return mux
}

func decodeStrict(t *testing.T, w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("the page sent %s a body this test cannot read: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// lastSearch waits for the search after the first n and returns it.
func (g *scopeGateway) searchAfter(t *testing.T, n int) sentSearch {
	t.Helper()
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		g.mu.Lock()
		if len(g.searches) > n {
			s := g.searches[len(g.searches)-1]
			g.mu.Unlock()
			return s
		}
		g.mu.Unlock()
	}
	t.Fatalf("the page sent no search after its %d", n)
	return sentSearch{}
}

func (g *scopeGateway) count() (searches, asks, scopes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.searches), len(g.asks), g.scopes
}

// scopeWords are what the test types and looks for, per language.
var scopeWords = map[string]map[string]string{
	"en": {"query": "soup tag:recipe", "rest": "soup", "tag": "recipe", "kind_tag": "tag", "not_tag": "not tag", "phrase": "soup last month",
		"add_tag": "+ Tag", "this_month": "This month", "all": "All notes", "narrow": "Narrow the results", "ask": "Which soup has beets? in:\"Work\""},
	"ru": {"query": "суп тег:рецепт", "rest": "суп", "tag": "рецепт", "kind_tag": "тег", "not_tag": "не тег", "phrase": "суп в прошлом месяце",
		"add_tag": "+ Тег", "this_month": "Этот месяц", "all": "Все заметки", "narrow": "Уточнить результаты", "ask": "В каком супе свёкла? в:\"Work\""},
}

type chipSeen struct {
	Kind    string `json:"kind"`
	Source  string `json:"source"`
	Value   string `json:"value"`
	Exclude bool   `json:"exclude"`
	Text    string `json:"text"`
}

func (p pageDriver) chips(view string) []chipSeen {
	p.t.Helper()
	return evalIn[[]chipSeen](p, `[...document.querySelectorAll('#`+view+`-scope-chips li.chip')].map(c => ({kind: c.dataset.kind,
		source: c.dataset.source, value: c.dataset.value, exclude: c.dataset.exclude === 'true', text: c.textContent}))`)
}

func hasChip(chips []chipSeen, kind, source, value string) bool {
	return slices.ContainsFunc(chips, func(c chipSeen) bool { return c.Kind == kind && c.Source == source && c.Value == value })
}

func TestTheScopeBarChipsDatesSuggestionsAndFacetsSetTheRequestsScopeInChromium(t *testing.T) {
	ctx := newBrowser(t)
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Moscow"}); err != nil {
		t.Fatalf("set the browser's time zone: %v", err)
	}
	g := &scopeGateway{}
	srv := httptest.NewServer(g.handler(t))
	t.Cleanup(srv.Close)
	shots := screenshotDir(t)
	now := time.Now().In(moscow)
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, moscow)

	for _, lang := range []string{"en", "ru"} {
		for _, width := range []int{390, 1280} {
			t.Run(fmt.Sprintf("%s at %d px", lang, width), func(t *testing.T) {
				p := pageDriver{t: t, ctx: ctx, shots: shots}
				w := scopeWords[lang]
				shot := func(what string) { p.shot(fmt.Sprintf("scope-%s-%s-%d", what, lang, width)) }
				// settled waits for the search in flight to be answered.
				settled := func() { p.do("the search's answer", chromedp.WaitVisible(`#search-meta[data-state="done"]`)) }
				// sent is the search the page sent after its n-th, once the
				// page has shown its reply: the reply re-renders the bar, so a
				// click before it can land on a chip that is moving (at 390
				// px under load it did).
				sent := func(n int) sentSearch {
					t.Helper()
					req := g.searchAfter(t, n)
					settled()
					return req
				}
				p.setViewport(width)
				p.do("open the page",
					chromedp.Navigate(srv.URL+"/#search"),
					chromedp.WaitVisible(`body[data-ready="true"]`),
					chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem('exocortex.lang', '`+lang+`')`),
					chromedp.Reload(),
					chromedp.WaitVisible(`#search-scope`),
				)
				if s := evalIn[string](p, `document.querySelector('#search-scope-chips').textContent`); s != w["all"] {
					t.Errorf("with no scope the bar reads %q, want %q", s, w["all"])
				}

				// An operator typed in the query is a chip at once, and the
				// text goes as typed, with no scope of the bar's.
				n, _, scopesBefore := g.count()
				p.do("type an operator", chromedp.SendKeys(`#search-q`, w["query"]))
				if c := p.chips("search"); !hasChip(c, "tag", "text", w["tag"]) {
					t.Errorf("after typing %q the chips are %+v, want the text's tag %s", w["query"], c, w["tag"])
				}
				p.do("search", chromedp.Click(`#search-go`), chromedp.WaitVisible(`#search-facets`))
				req := sent(n)
				if req.Query != w["query"] || req.Scope != nil || !req.Facets {
					t.Errorf("the search sent query %q, scope %+v, facets %v; want the text as typed, no scope, facets asked for", req.Query, req.Scope, req.Facets)
				}
				settled()
				p.fits("search with facets")
				shot("facets")

				// + Tag: the suggestions come from /v1/scopes; typing filters
				// them; the keyboard picks one.
				p.do("open the tag adder", chromedp.Click(`#search-add-tag`), chromedp.WaitVisible(`#search-adder-list li[role=option]`))
				if _, _, scopes := g.count(); scopes != scopesBefore+1 {
					t.Errorf("the page asked /v1/scopes %d times, want once", scopes-scopesBefore)
				}
				sugg := evalIn[[]string](p, `[...document.querySelectorAll('#search-adder-list li[role=option]')].map(o => o.dataset.value)`)
				if !slices.Equal(sugg, []string{"recipe", "рецепт", "travel", "путешествия"}) {
					t.Errorf("the tag suggestions are %v, want the gateway's four tags", sugg)
				}
				if l := p.text(`#search-adder-label`); l != strings.TrimPrefix(w["add_tag"], "+ ") {
					t.Errorf("the adder is labelled %q", l)
				}
				settled()
				p.fits("suggestions")
				shot("suggestions")
				n, _, _ = g.count()
				p.do("filter and pick with the keyboard",
					chromedp.SendKeys(`#search-adder-input`, "tra"),
					chromedp.WaitVisible(`#search-adder-list li[data-value="travel"]`),
					chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.Enter))
				req = sent(n)
				if req.Scope == nil || !slices.Equal(req.Scope.Include.Tags, []string{"travel"}) || req.Query != w["query"] {
					t.Errorf("after adding the tag travel the search sent %q with scope %+v", req.Query, req.Scope)
				}
				if c := p.chips("search"); !hasChip(c, "tag", "bar", "travel") {
					t.Errorf("the chips are %+v, want the bar's tag travel", c)
				}

				// + Notebook by a click on its suggestion: the id is sent, the name shown.
				n, _, _ = g.count()
				p.do("add a notebook", chromedp.Click(`#search-add-notebook`), chromedp.WaitVisible(`#search-adder-list li[data-value="`+workBook+`"]`),
					chromedp.Click(`#search-adder-list li[data-value="`+workBook+`"]`))
				req = sent(n)
				if req.Scope == nil || !slices.Equal(req.Scope.Include.Notebooks, []string{workBook}) {
					t.Errorf("after adding the notebook Work the search sent scope %+v, want its id", req.Scope)
				}
				if s := evalIn[string](p, `document.querySelector('#search-scope-chips li[data-kind="notebook"]').textContent`); !strings.Contains(s, "Work") || strings.Contains(s, workBook) {
					t.Errorf("the notebook chip reads %q, want its name", s)
				}

				// Exclude a tag typed by hand.
				n, _, _ = g.count()
				p.do("exclude a tag", chromedp.Click(`#search-add-tag`), chromedp.WaitVisible(`#search-adder-input`),
					chromedp.Click(`#search-adder-exclude`), chromedp.SendKeys(`#search-adder-input`, "old"), chromedp.KeyEvent(kb.Enter))
				req = sent(n)
				if req.Scope == nil || !slices.Equal(req.Scope.Exclude.Tags, []string{"old"}) || !slices.Equal(req.Scope.Include.Tags, []string{"travel"}) {
					t.Errorf("after excluding the tag old the search sent scope %+v", req.Scope)
				}
				if s := evalIn[string](p, `document.querySelector('#search-scope-chips li[data-exclude="true"]').textContent`); !strings.HasPrefix(s, w["not_tag"]) {
					t.Errorf("the excluded tag's chip reads %q, want it to start %q", s, w["not_tag"])
				}

				// Dates: two days typed into the pickers, then This month; the
				// request has full times in the browser's zone, until exclusive.
				p.do("open the dates", chromedp.Click(`#search-dates-toggle`), chromedp.WaitVisible(`#search-date-from`))
				n, _, _ = g.count()
				p.do("set the first day", chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector('#search-date-from');
					i.value = '2024-03-01'; i.dispatchEvent(new Event('change', {bubbles: true})); })()`))
				req = sent(n)
				if req.Scope == nil || req.Scope.Since != "2024-03-01T00:00:00+03:00" || req.Scope.Until != "" {
					t.Errorf("from 2024-03-01 the search sent since %q until %q", req.Scope.Since, req.Scope.Until)
				}
				n, _, _ = g.count()
				p.do("set the last day", chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector('#search-date-to');
					i.value = '2024-03-31'; i.dispatchEvent(new Event('change', {bubbles: true})); })()`))
				req = sent(n)
				if req.Scope.Since != "2024-03-01T00:00:00+03:00" || req.Scope.Until != "2024-04-01T00:00:00+03:00" {
					t.Errorf("from 2024-03-01 to 2024-03-31 the search sent since %q until %q, want March whole", req.Scope.Since, req.Scope.Until)
				}
				settled()
				p.fits("dates")
				shot("dates")
				n, _, _ = g.count()
				p.do("this month", chromedp.Click(`#search-scope-dates button[data-quick="month"]`))
				req = sent(n)
				if want, wantUntil := monthStart.Format(time.RFC3339), monthStart.AddDate(0, 1, 0).Format(time.RFC3339); req.Scope.Since != want || req.Scope.Until != wantUntil {
					t.Errorf("this month sent since %q until %q, want %q to %q", req.Scope.Since, req.Scope.Until, want, wantUntil)
				}
				if b := p.text(`#search-scope-dates button[data-quick="month"]`); b != w["this_month"] {
					t.Errorf("the quick choice reads %q, want %q", b, w["this_month"])
				}

				// Recent first.
				n, _, _ = g.count()
				p.do("recent first", chromedp.Click(`#search-recent`))
				if req = sent(n); !req.Scope.Recent {
					t.Errorf("after ticking recent first the search sent scope %+v", req.Scope)
				}
				settled()
				p.fits("every kind of chip")
				shot("chips")

				// Removing chips: the bar's tag leaves the scope; the text's
				// tag leaves the text.
				n, _, _ = g.count()
				p.do("remove the tag travel", chromedp.Click(`#search-scope-chips li[data-source="bar"][data-value="travel"] .chip-remove`))
				if req = sent(n); len(req.Scope.Include.Tags) != 0 || !slices.Equal(req.Scope.Include.Notebooks, []string{workBook}) {
					t.Errorf("after removing the tag travel the search sent scope %+v", req.Scope)
				}
				n, _, _ = g.count()
				p.do("remove the text's tag", chromedp.Click(`#search-scope-chips li[data-source="text"] .chip-remove`))
				if req = sent(n); req.Query != w["rest"] {
					t.Errorf("after removing the text's tag the search sent %q, want %q", req.Query, w["rest"])
				}
				if v := evalIn[string](p, `document.querySelector('#search-q').value`); v != w["rest"] {
					t.Errorf("after removing the text's tag the query box reads %q", v)
				}
				settled()
				n, _, _ = g.count()
				p.do("any time and not recent", chromedp.Click(`#search-scope-dates button[data-quick="clear"]`))
				sent(n)
				settled()
				n, _, _ = g.count()
				p.do("not recent", chromedp.Click(`#search-scope-chips li[data-kind="recent"] .chip-remove`))
				if req = sent(n); req.Scope.Since != "" || req.Scope.Until != "" || req.Scope.Recent {
					t.Errorf("after clearing the dates and recent first the search sent %+v", req.Scope)
				}

				// A facet narrows the next search: a tag, then a month.
				p.do("facets shown", chromedp.WaitVisible(`#search-facets button[data-facet="tag"][data-value="recipe"]`))
				if h := evalIn[string](p, `document.querySelector('#search-facets h3').textContent`); h != w["narrow"] {
					t.Errorf("the facets are headed %q, want %q", h, w["narrow"])
				}
				if f := p.text(`#search-facets button[data-facet="notebook"][data-value="` + homeBook + `"]`); f != "Дом 3" {
					t.Errorf("the notebook facet reads %q, want its name and count", f)
				}
				n, _, _ = g.count()
				p.do("narrow to #recipe", chromedp.Click(`#search-facets button[data-facet="tag"][data-value="recipe"]`))
				if req = sent(n); !slices.Equal(req.Scope.Include.Tags, []string{"recipe"}) {
					t.Errorf("the facet #recipe sent scope %+v", req.Scope)
				}
				settled()
				p.do("facets again", chromedp.WaitVisible(`#search-facets button[data-facet="month"][data-value="2026-11"]`))
				if evalIn[bool](p, `!!document.querySelector('#search-facets button[data-facet="tag"][data-value="recipe"]')`) {
					t.Errorf("the facet #recipe is still offered once it is in the scope")
				}
				n, _, _ = g.count()
				p.do("narrow to 2026-11", chromedp.Click(`#search-facets button[data-facet="month"][data-value="2026-11"]`))
				if req = sent(n); req.Scope.Since != "2026-11-01T00:00:00+03:00" || req.Scope.Until != "2026-12-01T00:00:00+03:00" {
					t.Errorf("the facet 2026-11 sent since %q until %q", req.Scope.Since, req.Scope.Until)
				}
				if c := p.chips("search"); !hasChip(c, "since", "bar", "2026-11-01") || !hasChip(c, "until", "bar", "2026-11-30") {
					t.Errorf("after the month facet the chips are %+v, want from 2026-11-01 to 2026-11-30", c)
				}
				n, _, _ = g.count()
				p.do("any time", chromedp.Click(`#search-scope-dates button[data-quick="clear"]`))
				sent(n)

				// Time words: the gateway reads them from the text and says
				// so; the bar shows its reading as a chip it cannot remove.
				n, _, _ = g.count()
				p.do("time words", chromedp.Evaluate[chromedp.Void](`document.querySelector('#search-q').value = ''`),
					chromedp.SendKeys(`#search-q`, w["phrase"]), chromedp.Click(`#search-go`))
				req = sent(n)
				_, want, _, _ := scope.Parse(w["phrase"], time.Now(), moscow)
				p.do("the gateway's reading", chromedp.WaitVisible(`#search-scope-chips li[data-source="server"][data-kind="since"]`))
				if req.Query != w["phrase"] {
					t.Errorf("the time words went as %q, want the text as typed", req.Query)
				}
				if c := p.chips("search"); !hasChip(c, "since", "server", want.Since[:10]) {
					t.Errorf("the chips are %+v, want the gateway's since %s", c, want.Since[:10])
				}
				if n := evalIn[int](p, `document.querySelectorAll('#search-scope-chips li[data-source="server"] button').length`); n != 0 {
					t.Errorf("%d of the gateway's chips have a remove button; the text is what changes them", n)
				}
				if s := evalIn[string](p, `document.querySelector('#search-scope-notes').textContent`); s == "" {
					t.Errorf("the gateway's notes on what it read are not shown")
				}
				settled()
				p.fits("time words")
				shot("time-words")

				// Ask: the same scope goes with the question, the text as typed.
				_, nAsk, _ := g.count()
				p.do("ask", chromedp.Click(`#tab-ask`), chromedp.WaitVisible(`#ask-scope`),
					chromedp.SendKeys(`#ask-q`, w["ask"]))
				if c := p.chips("ask"); !hasChip(c, "notebook", "text", "Work") || !hasChip(c, "notebook", "bar", workBook) || !hasChip(c, "tag", "bar", "recipe") {
					t.Errorf("the ask bar's chips are %+v, want the shared scope and the text's in:\"Work\"", c)
				}
				p.fits("ask with a scope")
				shot("ask")
				p.do("ask it", chromedp.Click(`#ask-go`), chromedp.WaitVisible(`#answer-text[data-state="done"]`))
				g.mu.Lock()
				ask := g.asks[len(g.asks)-1]
				asks := len(g.asks)
				g.mu.Unlock()
				if asks != nAsk+1 || ask.Question != w["ask"] || ask.Scope == nil || !slices.Equal(ask.Scope.Include.Notebooks, []string{workBook}) ||
					!slices.Equal(ask.Scope.Include.Tags, []string{"recipe"}) || !slices.Equal(ask.Scope.Exclude.Tags, []string{"old"}) {
					t.Errorf("the question went as %q with scope %+v", ask.Question, ask.Scope)
				}

				// Escape closes the adder and gives the focus back.
				p.do("escape", chromedp.Click(`#ask-add-tag`), chromedp.WaitVisible(`#ask-adder-input`), chromedp.KeyEvent(kb.Escape))
				if !evalIn[bool](p, `document.querySelector('#ask-scope-adder').hidden && document.activeElement.id === 'ask-add-tag'`) {
					t.Errorf("Escape left the adder open or the focus elsewhere")
				}
				// Clear the shared scope for the next run.
				p.do("clear", chromedp.Evaluate[chromedp.Void](`for (const b of document.querySelectorAll('#ask-scope-chips li[data-source="bar"] .chip-remove')) b.click()`))
				if c := p.chips("ask"); len(c) != 0 {
					t.Errorf("after removing every chip %+v remain", c)
				}
			})
		}
	}
}

// TestSortRecentTypedInTheQueryIsTheRecentFirstChip: the sort operator in
// the text (package scope's sort:recent, сортировка:новые) shows as the
// "recent first" chip; a value that is no order, or a negated one, is no
// chip (the gateway refuses it).
func TestSortRecentTypedInTheQueryIsTheRecentFirstChip(t *testing.T) {
	ctx := newBrowser(t)
	g := &scopeGateway{}
	srv := httptest.NewServer(g.handler(t))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, lang, query, chip string // chip: the chip's words, "" for none
	}{
		{"sort:recent is recent first", "en", "atlas budget sort:recent", "recent first"},
		{"sort:newest is recent first too", "en", "Sort:Newest backups", "recent first"},
		{"сортировка:новые is сначала новые", "ru", "бюджет сортировка:новые", "сначала новые"},
		{"сортировка:свежие is сначала новые too", "ru", "сортировка:свежие бэкап", "сначала новые"},
		{"sort:oldest is no chip", "en", "budget sort:oldest", ""},
		{"a negated sort is no chip", "ru", "бюджет -сортировка:новые", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pageDriver{t: t, ctx: ctx}
			p.do("open the page",
				chromedp.Navigate(srv.URL+"/#search"),
				chromedp.WaitVisible(`body[data-ready="true"]`),
				chromedp.Evaluate[chromedp.Void](`localStorage.clear(); localStorage.setItem('exocortex.lang', '`+tc.lang+`')`),
				chromedp.Reload(),
				chromedp.WaitVisible(`#search-scope`),
				chromedp.SendKeys(`#search-q`, tc.query))
			var recent []chipSeen
			for _, c := range p.chips("search") {
				if c.Kind == "recent" {
					recent = append(recent, c)
				}
			}
			switch {
			case tc.chip == "" && len(recent) > 0:
				t.Fatalf("typing %q shows %+v, want no recent chip", tc.query, recent)
			case tc.chip != "" && (len(recent) != 1 || recent[0].Source != "text" || !strings.HasPrefix(recent[0].Text, tc.chip)):
				t.Fatalf("typing %q shows the recent chips %+v, want one from the text reading %q", tc.query, recent, tc.chip)
			}
		})
	}
}
