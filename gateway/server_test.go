package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/models/llm/llmtest"
	"github.com/exocortex/exocortex/research"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// env is a running pipeline (every stage, embedded NATS, the fake
// provider) with a few notes indexed.
type env struct {
	sys     *system.System
	llm     *llmtest.Server
	dataDir string
	backend *gateway.BusBackend
}

const crowsAnswer = "Crows «use tools to get food» [1]."

func startEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	fake := llmtest.New(t)
	fake.SetAnswer(crowsAnswer)
	// The strategic role rewrites a question with history as itself and
	// suggests three follow-up questions; the fast role answers.
	fake.SetResponder(func(body llmtest.ChatBody) (string, *llmtest.Fault, bool) {
		if len(body.Messages) < 2 {
			return "", nil, false
		}
		sys, user := body.Messages[0].Content, body.Messages[len(body.Messages)-1].Content
		switch {
		case strings.HasPrefix(sys, "Rewrite the user's last question"):
			_, q, _ := strings.Cut(user, "Last question: ")
			return q, nil, true
		case strings.HasPrefix(sys, "Suggest 3 to 5 short follow-up questions"):
			return strings.Join(followUps, "\n"), nil, true
		}
		return "", nil, false
	})
	cfg := &llm.Config{Providers: []llm.Provider{{Name: "fake", BaseURL: fake.URL(), Models: map[string]string{llm.RoleFast: "m", llm.RoleStrategic: "m"}}}}
	dir := t.TempDir()
	sys, err := system.Start(ctx, system.Config{DataDir: dir, Listen: "127.0.0.1:-1", NoModels: true, LLM: cfg, Workers: 4,
		LLMOptions: llm.RouterOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n\n## Songbirds\n\nRobins sing at dawn in spring.\n")
	writeFile(t, filepath.Join(vault, "cats.md"), "# Cats\n\nCats sleep most of the day.\n")
	gatewaytest.SyncPaths(t, sys.Bus, vault)
	gatewaytest.WaitIdle(t, sys.Bus)
	bb := gateway.NewBusBackend(sys.Bus, gateway.BusOptions{AskTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = bb.Close() })
	return &env{sys: sys, llm: fake, dataDir: dir, backend: bb}
}

func testLog(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// serve starts the gateway over e with cfg (and its backend, if be is nil)
// on an httptest server.
func (e *env) serve(t testing.TB, cfg gateway.Config, be gateway.Backend) (*gateway.Server, *httptest.Server) {
	t.Helper()
	if be == nil {
		be = e.backend
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	cfg.Log = testLog(t)
	srv, err := gateway.New(cfg, be, gateway.Deps{Bus: e.sys.Bus, StoreReady: e.backend.StoreReady, Stages: system.StageSpecs(),
		Status: func(ctx context.Context) (any, error) {
			st, err := e.sys.Bus.StageStates(ctx, system.StageSpecs())
			return map[string]any{"running": true, "stages": st}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return srv, hs
}

func post(t testing.TB, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func get(t testing.TB, url string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// decodeAs reads a JSON response of the wanted status into v.
func decodeAs(t testing.TB, resp *http.Response, status int, v any) {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, raw)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s: content type %q", resp.Request.URL.Path, resp.Header.Get("Content-Type"))
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v: %s", resp.Request.URL.Path, err, raw)
		}
	}
}

// wantError checks a JSON error response: its status, code, and that the
// message holds want.
func wantError(t testing.TB, resp *http.Response, status int, code, want string) {
	t.Helper()
	var body gateway.ErrorBody
	decodeAs(t, resp, status, &body)
	if body.Error.Code != code || !strings.Contains(body.Error.Message, want) {
		t.Fatalf("%s: error %+v, want code %s with %q", resp.Request.URL.Path, body.Error, code, want)
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Name string
	Data string
}

// readSSE reads events until the stream ends, calling each (which may stop
// reading by returning false).
func readSSE(t testing.TB, r io.Reader, each func(sseEvent) bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Name != "" || ev.Data != "" {
				if !each(ev) {
					return
				}
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data += strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestSearchReturnsTheHitsWithTheirMatchesMarked(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)
	var res gateway.SearchResult
	decodeAs(t, post(t, hs.URL+"/v1/search", `{"query":"crows tools","k":5}`), http.StatusOK, &res)
	if res.Mode != schemas.ModeLexical || len(res.Results) == 0 {
		t.Fatalf("search: %+v", res)
	}
	top := res.Results[0]
	if top.Title != "Birds" || !strings.Contains(top.Snippet, "**crows**") || top.BlockID == "" || top.ScoreKind != "bm25" {
		t.Errorf("top hit %+v", top)
	}
	for _, h := range res.Results {
		if h.Title == "Cats" {
			t.Errorf("a note without the words came back: %+v", h)
		}
	}
	// The same hits as the backend's own search (what search --json prints).
	direct, err := e.backend.Search(context.Background(), gateway.SearchRequest{Query: "crows tools", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(direct.Results) != len(res.Results) || direct.Results[0].ChunkID != top.ChunkID || direct.Results[0].Snippet != top.Snippet {
		t.Errorf("HTTP %+v\ndirect %+v", res.Results, direct.Results)
	}
	wantError(t, post(t, hs.URL+"/v1/search", `{"query":"crows","mode":"psychic"}`), 400, "bad_request", `mode "psychic"`)
	wantError(t, post(t, hs.URL+"/v1/search", `{"query":"  "}`), 400, "bad_request", "query is empty")
}

var followUps = []string{"Do ravens use tools too?", "What food do crows get with tools?", "How do crows learn to use tools?"}

func TestAskStreamsTokensInOrderThenTheDoneAnswerThenItsFollowUps(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)
	resp := post(t, hs.URL+"/v1/ask", `{"question":"What do crows use?","history":[{"role":"user","text":"birds"}]}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("ask: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	id := resp.Header.Get("X-Exocortex-Query-Id")
	var names []string
	var text strings.Builder
	var seqs []int
	var done schemas.AnswerDone
	var got []string
	readSSE(t, resp.Body, func(ev sseEvent) bool {
		names = append(names, ev.Name)
		switch ev.Name {
		case "token":
			var tok gateway.TokenEvent
			if err := json.Unmarshal([]byte(ev.Data), &tok); err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, tok.Seq)
			text.WriteString(tok.Text)
		case "restart":
			text.Reset()
		case "done":
			if err := json.Unmarshal([]byte(ev.Data), &done); err != nil {
				t.Fatal(err)
			}
		case "followups":
			var fu gateway.FollowUpsEvent
			if err := json.Unmarshal([]byte(ev.Data), &fu); err != nil || fu.QueryID != done.QueryID {
				t.Fatalf("followups event %s (%v), answer %s", ev.Data, err, done.QueryID)
			}
			got = fu.FollowUps
		case "error":
			t.Fatalf("error event: %s", ev.Data)
		}
		return true
	})
	if len(names) < 3 || names[len(names)-2] != "done" || names[len(names)-1] != "followups" {
		t.Fatalf("events %v: want tokens, done, then followups", names)
	}
	if !slices.Equal(got, followUps) {
		t.Errorf("follow-ups %q, want %q", got, followUps)
	}
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("token sequence %v: want 1..n", seqs)
		}
	}
	if done.QueryID != id || done.Mode != schemas.AnswerLLM || len(done.Citations) != 1 || text.String() != done.Answer {
		t.Fatalf("done %+v (query %s), streamed %q", done, id, text.String())
	}
	var again schemas.AnswerDone
	decodeAs(t, get(t, hs.URL+"/v1/answers/"+id), 200, &again)
	if again.Answer != done.Answer || again.QueryID != id {
		t.Errorf("GET answer %+v", again)
	}
	wantError(t, get(t, hs.URL+"/v1/answers/q-nothere"), 404, "not_found", "q-nothere")
	wantError(t, post(t, hs.URL+"/v1/ask", `{"question":"x","history":[{"role":"robot","text":"hi"}]}`), 400, "bad_request", `history[0].role "robot"`)
}

// watching records what the backend's Ask saw of its context.
type watching struct {
	gateway.Backend
	mu       sync.Mutex
	started  chan struct{}
	returned chan error
}

func (w *watching) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	close(w.started)
	d, err := w.Backend.Ask(ctx, q, onToken)
	w.returned <- errors.Join(err, context.Cause(ctx))
	return d, err
}

func TestAClientThatDisconnectsMidStreamCancelsItsQuery(t *testing.T) {
	e := startEnv(t)
	// A verified sentence, then one that goes on and on (no loop to stop):
	// the first token is the verified sentence, and the model is still
	// talking when the client leaves.
	e.llm.SetAnswer(crowsAnswer + " They also" + strings.Repeat(" and also", 5000) + ".")
	e.llm.SetTokenDelay(5 * time.Millisecond)
	w := &watching{Backend: e.backend, started: make(chan struct{}), returned: make(chan error, 1)}
	_, hs := e.serve(t, gateway.Config{Heartbeat: 20 * time.Millisecond}, w)
	answered := make(chan *schemas.AnswerDone, 4)
	stopDone, err := e.sys.Bus.Subscribe(schemas.SubjectAnswerDone, func(ev schemas.Event) {
		if d, ok := ev.(*schemas.AnswerDone); ok {
			answered <- d
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopDone()
	subsBefore := e.sys.Bus.NC.NumSubscriptions() - e.sys.Bus.ReplySubscriptions()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/ask", strings.NewReader(`{"question":"What do crows use?"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	queryID := resp.Header.Get("X-Exocortex-Query-Id")
	var first string
	readSSE(t, resp.Body, func(ev sseEvent) bool {
		if ev.Name == "token" {
			first = ev.Data
			return false
		}
		return ev.Name != "done"
	})
	if !strings.Contains(first, jsonStr(crowsAnswer)) {
		t.Fatalf("the first token %s, want the verified sentence %q", first, crowsAnswer)
	}
	cancel()
	resp.Body.Close()
	select {
	case err := <-w.returned:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the backend's Ask returned %v, want its context cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's Ask still runs 10 s after the client left")
	}
	// The answer stage let the never-ending model go and finished the
	// query at once (its deadline is a minute away), saying why.
	select {
	case d := <-answered:
		if d.QueryID != queryID || !slices.ContainsFunc(d.Reasons, func(r string) bool { return strings.HasPrefix(r, "cancelled:") }) {
			t.Errorf("the abandoned query's answer: %s, reasons %q", d.QueryID, d.Reasons)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer stage still answers the abandoned query 10 s after its client left")
	}
	// Its subscription to the answer's tokens is gone, and nothing waits
	// for its replies any more (the process's one subscription per reply
	// subject stays, for the next question).
	deadline := time.Now().Add(5 * time.Second)
	for e.sys.Bus.NC.NumSubscriptions()-e.sys.Bus.ReplySubscriptions() > subsBefore || e.sys.Bus.Waiting() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("NATS subscriptions %d (%d of them the reply subjects'), %d before the question; %d waiters still registered",
				e.sys.Bus.NC.NumSubscriptions(), e.sys.Bus.ReplySubscriptions(), subsBefore, e.sys.Bus.Waiting())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBodiesOverTheLimitAndBadJSONGetJSONErrors(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{MaxBody: 1 << 10}, nil)
	big := `{"query":"` + strings.Repeat("a", 2<<10) + `"}`
	wantError(t, post(t, hs.URL+"/v1/search", big), 413, "too_large", "over 1024 bytes")
	wantError(t, post(t, hs.URL+"/v1/ask", `{"question": "crows"`), 400, "bad_request", "request body")
	wantError(t, post(t, hs.URL+"/v1/search", `{"query": 5}`), 400, "bad_request", `field "query" wants a string`)
	wantError(t, post(t, hs.URL+"/v1/search", `{"qeury": "crows"}`), 400, "bad_request", `unknown field "qeury"`)
	wantError(t, post(t, hs.URL+"/v1/search", ``), 400, "bad_request", "empty request body")
	wantError(t, get(t, hs.URL+"/v1/nothing"), 404, "not_found", "GET /v1/nothing")
}

func TestANonLoopbackGatewayWithoutATokenRefusesToStart(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7600", ":7600", "192.168.1.5:7600"} {
		_, err := gateway.New(gateway.Config{Addr: addr}, nil, gateway.Deps{})
		if !errors.Is(err, gateway.ErrNoToken) || !strings.Contains(err.Error(), gateway.EnvToken) {
			t.Errorf("%s without a token: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:7600", "localhost:7600", "[::1]:7600"} {
		if _, err := gateway.New(gateway.Config{Addr: addr}, nil, gateway.Deps{}); err != nil {
			t.Errorf("%s without a token: %v", addr, err)
		}
	}
}

func TestTheTokenGuardsEveryRouteButHealthzAndTheMountedDoors(t *testing.T) {
	e := startEnv(t)
	door := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "door "+r.URL.Path) })
	_, hs := e.serve(t, gateway.Config{Addr: "0.0.0.0:0", Token: "s3cret", CORSOrigins: []string{"https://notes.example"},
		Mounts: map[string]http.Handler{"/metrics": door, "/": door}}, nil)
	resp := get(t, hs.URL+"/healthz")
	decodeAs(t, resp, 200, nil)
	wantError(t, get(t, hs.URL+"/v1/status"), 401, "unauthorized", "Bearer")
	wantError(t, get(t, hs.URL+"/v1/status", "Authorization", "Bearer wrong"), 401, "unauthorized", "EXOCORTEX_HTTP_TOKEN")
	wantError(t, get(t, hs.URL+"/metrics", "Authorization", "Bearer s3cre"), 401, "unauthorized", "token")
	wantError(t, get(t, hs.URL+"/"), 401, "unauthorized", "token")
	wantError(t, post(t, hs.URL+"/v1/search", `{"query":"crows"}`, "Authorization", "s3cret"), 401, "unauthorized", "token")
	var st map[string]any
	decodeAs(t, get(t, hs.URL+"/v1/status", "Authorization", "Bearer s3cret"), 200, &st)
	if st["running"] != true {
		t.Errorf("status %v", st)
	}
	for path, want := range map[string]string{"/metrics": "door /metrics", "/index.html": "door /index.html"} {
		resp := get(t, hs.URL+path, "Authorization", "Bearer s3cret")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("mounted %s: %d %q", path, resp.StatusCode, body)
		}
	}
	// CORS: a configured origin's preflight passes without the token; an
	// other origin gets no CORS headers.
	req, _ := http.NewRequest(http.MethodOptions, hs.URL+"/v1/ask", nil)
	req.Header.Set("Origin", "https://notes.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	pre, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pre.Body.Close()
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://notes.example" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	other := get(t, hs.URL+"/healthz", "Origin", "https://evil.example")
	other.Body.Close()
	if other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an unlisted origin got CORS headers: %v", other.Header)
	}
}

func TestCORSIsOffUnlessOriginsAreConfigured(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)
	resp := get(t, hs.URL+"/healthz", "Origin", "https://notes.example")
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS headers without configured origins: %v", resp.Header)
	}
}

func TestBlocksStatusDeadLettersIngestAndReadiness(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)
	var res gateway.SearchResult
	decodeAs(t, post(t, hs.URL+"/v1/search", `{"query":"robins sing"}`), 200, &res)
	if len(res.Results) == 0 {
		t.Fatal("no hit for robins")
	}
	// The hit's block, its note (the parent) and the note's children.
	var first gateway.Block
	decodeAs(t, get(t, hs.URL+"/v1/blocks/"+url.PathEscape(res.Results[0].BlockID)), 200, &first)
	if first.ID != res.Results[0].BlockID || first.DocID != res.Results[0].DocID || first.Title != "Birds" || first.Text == "" {
		t.Fatalf("block %+v\nhit %+v", first, res.Results[0])
	}
	var doc gateway.Block
	for _, n := range first.Neighbors {
		if n.Kind == "parent" {
			decodeAs(t, get(t, hs.URL+"/v1/blocks/"+url.PathEscape(n.ID)), 200, &doc)
		}
	}
	if doc.ID != first.DocID || !strings.Contains(doc.Text, "Robins") {
		t.Fatalf("the parent of %s: %+v", first.ID, doc)
	}
	var robins string
	for _, n := range doc.Neighbors {
		if n.Kind == "child" && strings.Contains(n.Text, "Robins") {
			robins = n.ID
		}
	}
	if robins == "" {
		t.Fatalf("no child neighbour with the robins paragraph: %+v", doc.Neighbors)
	}
	var b gateway.Block
	decodeAs(t, get(t, hs.URL+"/v1/blocks/"+url.PathEscape(robins)), 200, &b)
	if b.Text != "Robins sing at dawn in spring." || b.DocID != doc.DocID || b.Title != "Birds" ||
		strings.Join(b.SectionPath, " > ") != "Birds > Songbirds" {
		t.Fatalf("block %+v", b)
	}
	kinds := map[string]bool{}
	for _, n := range b.Neighbors {
		kinds[n.Kind] = true
	}
	if !kinds["parent"] || !kinds["prev"] {
		t.Errorf("neighbours %+v: want the parent and the previous block among them", b.Neighbors)
	}
	wantError(t, get(t, hs.URL+"/v1/blocks/no-such-block"), 404, "not_found", "no-such-block")

	var st map[string]any
	decodeAs(t, get(t, hs.URL+"/v1/status"), 200, &st)
	if stages, _ := st["stages"].([]any); len(stages) != len(system.StageSpecs()) {
		t.Errorf("status stages %v", st["stages"])
	}

	// A malformed event is dead-lettered; the list shows it and replay
	// takes its number.
	if err := e.sys.Bus.NC.Publish(schemas.SubjectDocChanged, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	var dl struct {
		DeadLetters []gateway.DeadLetterView `json:"dead_letters"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(dl.DeadLetters) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		decodeAs(t, get(t, hs.URL+"/v1/dlq"), 200, &dl)
	}
	if len(dl.DeadLetters) == 0 || dl.DeadLetters[0].Stage != "chunk" {
		t.Fatalf("dead letters %+v", dl)
	}
	var rep map[string]int
	decodeAs(t, post(t, hs.URL+"/v1/dlq/replay", `{"seqs":[`+jsonNum(dl.DeadLetters[0].Seq)+`]}`), 200, &rep)
	if rep["replayed"] != 1 {
		t.Errorf("replay %v", rep)
	}
	wantError(t, post(t, hs.URL+"/v1/dlq/replay", `{"seqs":[99999]}`), 404, "not_found", "#99999")

	// Ingest from the gateway's machine; the new note becomes searchable.
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "owls.md"), "# Owls\n\nOwls hunt mice at night.\n")
	var ing gateway.IngestResult
	decodeAs(t, post(t, hs.URL+"/v1/ingest", `{"paths":[`+jsonStr(vault)+`]}`), 202, &ing)
	if ing.Files.Sent != 1 || ing.TraceID == "" {
		t.Fatalf("ingest %+v", ing)
	}
	gatewaytest.WaitIdle(t, e.sys.Bus)
	decodeAs(t, post(t, hs.URL+"/v1/search", `{"query":"owls hunt mice"}`), 200, &res)
	if len(res.Results) == 0 || res.Results[0].Title != "Owls" {
		t.Errorf("after ingest: %+v", res.Results)
	}
	wantError(t, post(t, hs.URL+"/v1/ingest", `{"paths":["/no/such/dir"]}`), 400, "bad_request", "/no/such/dir")

	var rd gateway.Readiness
	decodeAs(t, get(t, hs.URL+"/readyz"), 200, &rd)
	if !rd.Ready || rd.Checks["nats"] != "ok" || rd.Checks["store"] != "ok" || rd.Checks["stage index"] != "ok" {
		t.Errorf("readyz %+v", rd)
	}
	// Without an index to read (a bus where no process has it open), not
	// ready, and it says why.
	noIndex := stagetest.New(t)
	empty := gateway.NewBusBackend(noIndex, gateway.BusOptions{})
	srv, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0"}, empty, gateway.Deps{Bus: noIndex, StoreReady: empty.StoreReady})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, localRequest(http.MethodGet, "/readyz"))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "no index at") {
		t.Errorf("readyz without an index: %d %s", rec.Code, rec.Body)
	}
}

func TestANonStreamingRoutePastItsTimeoutAnswers504(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{Timeouts: gateway.Timeouts{Request: time.Nanosecond}}, nil)
	wantError(t, post(t, hs.URL+"/v1/search", `{"query":"crows"}`), 504, "timeout", "search")
}

func TestResearchStreamsProgressThenTheReport(t *testing.T) {
	e := startEnv(t)
	_, hs := e.serve(t, gateway.Config{}, nil)
	resp := post(t, hs.URL+"/v1/research", `{"question":"What do birds do?","no_llm":true,"budget":{"sub_questions":2}}`)
	defer resp.Body.Close()
	var names []string
	var rep schemas.ResearchReport
	readSSE(t, resp.Body, func(ev sseEvent) bool {
		names = append(names, ev.Name)
		if ev.Name == "report" {
			if err := json.Unmarshal([]byte(ev.Data), &rep); err != nil {
				t.Fatal(err)
			}
		}
		if ev.Name == "error" {
			t.Fatalf("error event: %s", ev.Data)
		}
		return true
	})
	if len(names) < 2 || names[0] != "progress" || names[len(names)-1] != "report" {
		t.Fatalf("events %v: want progress ... report", names)
	}
	if rep.ResearchID != resp.Header.Get("X-Exocortex-Research-Id") || rep.Question != "What do birds do?" {
		t.Errorf("report %+v", rep)
	}
	// Read through the gateway, each source opens the note view at its block.
	if len(rep.Sources) == 0 {
		t.Fatalf("a report with no sources:\n%s", rep.Markdown)
	}
	for _, c := range rep.Sources {
		if link := "(" + research.NoteViewLink(c.DocID, c.BlockID) + ")"; !strings.Contains(rep.Markdown, link) {
			t.Errorf("the report's Markdown lacks the note view link %s:\n%s", link, rep.Markdown)
		}
	}
}

func TestOpenAPIDescribesExactlyTheServedRoutes(t *testing.T) {
	door := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	mounts := map[string]http.Handler{"/": door, "/v1/chat/completions": door, "/v1/models": door, "/mcp": door, "/metrics": door}
	srv, err := gateway.New(gateway.Config{Mounts: mounts}, nil, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, localRequest(http.MethodGet, "/v1/openapi.json"))
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || doc.OpenAPI == "" {
		t.Fatalf("openapi: %v %s", err, rec.Body)
	}
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for m, o := range ops {
			if _, ok := mounts[path]; ok {
				described[path] = true
			} else {
				described[strings.ToUpper(m)+" "+path] = true
			}
			if s, _ := o["summary"].(string); s == "" {
				t.Errorf("%s %s has no summary", m, path)
			}
		}
	}
	served := map[string]bool{}
	for _, r := range srv.Routes() {
		served[r] = true
	}
	for p := range mounts {
		served[p] = true
	}
	for r := range served {
		if !described[r] {
			t.Errorf("served but not described: %s", r)
		}
	}
	for r := range described {
		if !served[r] {
			t.Errorf("described but not served: %s", r)
		}
	}
	// Every served route answers something other than the catch-all 404.
	for _, r := range srv.Routes() {
		method, path, _ := strings.Cut(r, " ")
		path = strings.NewReplacer("{query_id}", "q-1", "{id}", "b-1").Replace(path)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, localRequest(method, path))
		if rec.Code == 404 && strings.Contains(rec.Body.String(), "no route") {
			t.Errorf("%s is not routed", r)
		}
	}
}

// localRequest is a request to the handler as a client of this machine
// sends it (httptest.NewRequest's Host, example.com, is a foreign one).
func localRequest(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, bytes.NewReader(nil))
	r.Host = "127.0.0.1:7600"
	return r
}

func jsonStr(s string) string { b, _ := json.Marshal(s); return string(b) }
func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestAnIdleEventStreamSendsHeartbeats(t *testing.T) {
	e := startEnv(t)
	e.llm.Script(llmtest.Delay(400 * time.Millisecond))
	_, hs := e.serve(t, gateway.Config{Heartbeat: 20 * time.Millisecond}, nil)
	resp := post(t, hs.URL+"/v1/ask", `{"question":"What do crows use?"}`)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	pings, sawDone := 0, false
	for sc.Scan() {
		line := sc.Text()
		if line == ": ping" {
			pings++
		}
		if line == "event: done" {
			sawDone = true
			break
		}
	}
	if pings == 0 || !sawDone {
		t.Errorf("%d heartbeats, done %v", pings, sawDone)
	}
}

// The web page's files load without the token (they hold no notes; the
// page then asks for the token), and nothing else does: not the API, not
// a POST to a public path, not a path beside the public folder.
func TestThePublicPageFilesLoadWithoutTheTokenAndNothingElse(t *testing.T) {
	e := startEnv(t)
	door := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "door "+r.URL.Path) })
	_, hs := e.serve(t, gateway.Config{Addr: "0.0.0.0:0", Token: "s3cret", Mounts: map[string]http.Handler{"/": door},
		Public: []string{"/", "/index.html", "/static/"}}, nil)
	for _, path := range []string{"/", "/index.html", "/static/app.js"} {
		resp := get(t, hs.URL+path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "door "+path {
			t.Errorf("public %s without a token: %d %q", path, resp.StatusCode, body)
		}
	}
	wantError(t, get(t, hs.URL+"/v1/status"), 401, "unauthorized", "token")
	wantError(t, get(t, hs.URL+"/staticx"), 401, "unauthorized", "token")
	wantError(t, post(t, hs.URL+"/index.html", `{}`), 401, "unauthorized", "token")
}
