package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// countingBackend answers every call at once and counts them: a refused
// request must leave every count at 0.
type countingBackend struct{ search, ask, research, block atomic.Int64 }

func (b *countingBackend) Search(ctx context.Context, req gateway.SearchRequest) (*gateway.SearchResult, error) {
	b.search.Add(1)
	return &gateway.SearchResult{Mode: "lexical", Results: []gateway.SearchHit{{Rank: 1, Title: "Crows", Snippet: "crows use tools"}}}, nil
}

func (b *countingBackend) Ask(ctx context.Context, q *schemas.QuerySubmitted, onToken func(*schemas.AnswerToken)) (*schemas.AnswerDone, error) {
	b.ask.Add(1)
	return &schemas.AnswerDone{QueryID: q.QueryID, Answer: "Crows use tools [1].", Mode: schemas.AnswerSearchOnly}, nil
}

func (b *countingBackend) Research(ctx context.Context, r *schemas.ResearchRequested, onProgress func(*schemas.ResearchProgress)) (*schemas.ResearchReport, error) {
	b.research.Add(1)
	return &schemas.ResearchReport{ResearchID: r.ResearchID, Question: r.Question}, nil
}

func (b *countingBackend) Block(ctx context.Context, id string) (*gateway.Block, error) {
	b.block.Add(1)
	return &gateway.Block{ID: id, Text: "Crows use tools."}, nil
}

func (b *countingBackend) calls() int64 {
	return b.search.Load() + b.ask.Load() + b.research.Load() + b.block.Load()
}

// guarded is a gateway over a counting backend and an embedded bus, with
// every door mounted as a counting handler, served on 127.0.0.1.
type guarded struct {
	srv     *gateway.Server
	hs      *httptest.Server
	be      *countingBackend
	doors   atomic.Int64
	status  atomic.Int64
	ingests atomic.Int64 // documents published on kb.doc.changed
}

var guardMounts = []string{"/", "/v1/chat/completions", "/v1/models", "/mcp", "/metrics"}

func startGuarded(t *testing.T, cfg gateway.Config) *guarded {
	t.Helper()
	b := stagetest.New(t)
	gatewaytest.AnswerIngests(t, b)
	g := &guarded{be: &countingBackend{}}
	sub, err := b.NC.Subscribe(schemas.SubjectDocChanged, func(*nats.Msg) { g.ingests.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	door := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.doors.Add(1)
		io.WriteString(w, "door "+r.URL.Path)
	})
	cfg.Mounts = map[string]http.Handler{}
	for _, p := range guardMounts {
		cfg.Mounts[p] = door
	}
	cfg.Public = []string{"/", "/index.html", "/static/"}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	cfg.Log = testLog(t)
	g.srv, err = gateway.New(cfg, g.be, gateway.Deps{Bus: b, Status: func(context.Context) (any, error) {
		g.status.Add(1)
		return map[string]any{"running": true}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	g.hs = httptest.NewServer(g.srv.Handler())
	t.Cleanup(g.hs.Close)
	return g
}

// untouched fails the test if any backend, door, status or ingest ran.
func (g *guarded) untouched(t *testing.T, what string) {
	t.Helper()
	if n := g.be.calls() + g.doors.Load() + g.status.Load(); n != 0 {
		t.Errorf("%s: %d calls reached the backend, the doors or status, want none", what, n)
	}
	if n := g.ingests.Load(); n != 0 {
		t.Errorf("%s: %d documents were ingested, want none", what, n)
	}
}

// request is one request of every route, with a body that would succeed.
type routeRequest struct{ method, path, body string }

// everyRoute is a request for each of the gateway's own routes and each
// mounted door, with a valid body.
func everyRoute(t *testing.T, g *guarded, vault string) []routeRequest {
	bodies := map[string]string{
		"/v1/search":           `{"query":"crows"}`,
		"/v1/ask":              `{"question":"What do crows use?"}`,
		"/v1/research":         `{"question":"What do birds do?","no_llm":true}`,
		"/v1/dlq/replay":       `{"seqs":[1]}`,
		"/v1/ingest":           `{"paths":[` + jsonStr(vault) + `]}`,
		"/v1/chat/completions": `{"model":"exocortex","messages":[{"role":"user","content":"crows?"}]}`,
		"/mcp":                 `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	}
	var out []routeRequest
	for _, r := range g.srv.Routes() {
		method, path, _ := strings.Cut(r, " ")
		path = strings.NewReplacer("{query_id}", "q-1", "{id}", "b-1").Replace(path)
		out = append(out, routeRequest{method, path, bodies[path]})
	}
	for _, p := range guardMounts {
		method := http.MethodGet
		if bodies[p] != "" {
			method = http.MethodPost
		}
		out = append(out, routeRequest{method, p, bodies[p]})
	}
	out = append(out, routeRequest{http.MethodGet, "/static/app.js", ""}, routeRequest{http.MethodGet, "/index.html", ""})
	return out
}

// send makes the request with a Host header of host (none: the server's
// address) and headers as pairs.
func send(t *testing.T, g *guarded, rr routeRequest, host string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(rr.method, g.hs.URL+rr.path, strings.NewReader(rr.body))
	if err != nil {
		t.Fatal(err)
	}
	if rr.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
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

func TestAForeignHostGetsNothingFromAnyRoute(t *testing.T) {
	g := startGuarded(t, gateway.Config{})
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "owls.md"), "# Owls\n\nOwls hunt at night.\n")
	for _, host := range []string{"attacker.example", "attacker.example:7600", "localhost.attacker.example", "127.0.0.1.nip.io", "0.0.0.0:7600"} {
		for _, rr := range everyRoute(t, g, vault) {
			resp := send(t, g, rr, host)
			if rr.path == "/healthz" {
				// Open to probes by any name: it says ok and nothing else.
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || strings.TrimSpace(string(raw)) != `{"status":"ok"}` {
					t.Errorf("GET /healthz with Host %s: %d %s", host, resp.StatusCode, raw)
				}
				continue
			}
			wantError(t, resp, 403, "forbidden", gateway.EnvHosts)
		}
	}
	g.untouched(t, "requests with a foreign Host")
}

func TestTheHostsTheGatewayAnswersTo(t *testing.T) {
	g := startGuarded(t, gateway.Config{Hosts: []string{"notes.example.org", "kb.example.com:443"}})
	status := routeRequest{http.MethodGet, "/v1/status", ""}
	for _, c := range []struct {
		name, host string
		ok         bool
	}{
		{"localhost with a port gets in", "localhost:7600", true},
		{"localhost in capitals gets in", "LOCALHOST:7600", true},
		{"localhost with a final dot gets in", "localhost.:7600", true},
		{"a name under .localhost gets in", "notes.localhost:7600", true},
		{"127.0.0.1 gets in", "127.0.0.1:7600", true},
		{"any 127/8 address gets in", "127.1.2.3", true},
		{"[::1] gets in", "[::1]:7600", true},
		{"a configured name gets in", "notes.example.org", true},
		{"a configured name on another port gets in", "notes.example.org:8443", true},
		{"a name configured with a port gets in", "kb.example.com", true},
		{"a foreign name is refused", "attacker.example", false},
		{"a name that only starts like localhost is refused", "localhost.attacker.example:7600", false},
		{"a subdomain of a configured name is refused", "evil.notes.example.org", false},
		{"the unspecified address is refused", "0.0.0.0:7600", false},
		{"another machine's address is refused", "192.168.1.5:7600", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := send(t, g, status, c.host)
			if c.ok {
				decodeAs(t, resp, 200, nil)
			} else {
				wantError(t, resp, 403, "forbidden", "--http-host")
			}
		})
	}
}

// A gateway bound to every address answers to the address a connection
// arrived on (a phone on the LAN opening http://192.168.1.5:7600/).
func TestTheAddressTheConnectionArrivedOnIsItsOwnHost(t *testing.T) {
	srv, err := gateway.New(gateway.Config{Addr: "0.0.0.0:7600", Token: "s3cret", Hosts: []string{"notes.example.org"}}, &countingBackend{}, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, host string
		status     int
	}{
		{"the address it arrived on gets in", "192.168.1.5:7600", 200},
		{"another address is refused", "192.168.1.6:7600", 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/v1/search", strings.NewReader(`{"query":"crows"}`))
			req.Host = c.host
			req.Header.Set("Authorization", "Bearer s3cret")
			req.Header.Set("Content-Type", "application/json")
			local := &net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 7600}
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Errorf("Host %s arriving on %s: %d %s, want %d", c.host, local, rec.Code, rec.Body, c.status)
			}
		})
	}
}

// The name the gateway is bound to is one of its hosts.
func TestTheNameTheGatewayIsBoundToIsItsOwnHost(t *testing.T) {
	srv, err := gateway.New(gateway.Config{Addr: "kb.lan:7600", Token: "s3cret", Hosts: []string{"notes.example.org"}}, &countingBackend{}, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"kb.lan:7600": 200, "KB.LAN": 200, "attacker.example": 403} {
		req := httptest.NewRequest(http.MethodGet, "/v1/blocks/b-1", nil)
		req.Host = host
		req.Header.Set("Authorization", "Bearer s3cret")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s to a gateway bound to kb.lan:7600: %d %s, want %d", host, rec.Code, rec.Body, want)
		}
	}
}

func TestOnlyTheGatewaysOwnPagesAndConfiguredOriginsGetIn(t *testing.T) {
	g := startGuarded(t, gateway.Config{CORSOrigins: []string{"https://notes.example"}})
	own := g.hs.URL // http://127.0.0.1:PORT
	search := routeRequest{http.MethodPost, "/v1/search", `{"query":"crows"}`}
	status := routeRequest{http.MethodGet, "/v1/status", ""}
	page := routeRequest{http.MethodGet, "/", ""}
	for _, c := range []struct {
		name   string
		rr     routeRequest
		header []string
		ok     bool
	}{
		{"a program without an Origin searches", search, nil, true},
		{"the gateway's own page searches", search, []string{"Origin", own, "Sec-Fetch-Site", "same-origin"}, true},
		{"the own page under another name is another origin and may not search", search, []string{"Origin", strings.Replace(own, "127.0.0.1", "localhost", 1)}, false},
		{"a configured CORS origin searches", search, []string{"Origin", "https://notes.example", "Sec-Fetch-Site", "cross-site"}, true},
		{"another site may not search", search, []string{"Origin", "https://evil.example"}, false},
		{"another port of this machine may not search", search, []string{"Origin", "http://127.0.0.1:1"}, false},
		{"Origin null may not search", search, []string{"Origin", "null"}, false},
		{"another site may not read the status", status, []string{"Origin", "https://evil.example"}, false},
		{"a request another site made without an Origin is refused", status, []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}, false},
		{"a same-site request without an Origin is refused", status, []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "cors"}, false},
		{"a link followed from another site opens the status", status, []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"}, true},
		{"a URL typed by the user opens the status", status, []string{"Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate"}, true},
		{"the page's own files load for any origin", page, []string{"Origin", "https://evil.example"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := send(t, g, c.rr, "", c.header...)
			if c.ok {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("%d, want 200", resp.StatusCode)
				}
				return
			}
			want := gateway.EnvCORS
			if c.header[1] == "null" {
				want = "Origin: null"
			}
			wantError(t, resp, 403, "forbidden", want)
		})
	}
	if g.be.search.Load() != 3 {
		t.Errorf("%d searches reached the backend, want the 3 allowed", g.be.search.Load())
	}
}

func TestPostBodiesMustBeJSON(t *testing.T) {
	g := startGuarded(t, gateway.Config{})
	vault := t.TempDir()
	writeFile(t, filepath.Join(vault, "owls.md"), "# Owls\n\nOwls hunt at night.\n")
	ingest := routeRequest{http.MethodPost, "/v1/ingest", `{"paths":[` + jsonStr(vault) + `]}`}
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp", "none"} {
		for _, path := range []string{"/v1/ingest", "/v1/ask", "/v1/search", "/v1/research", "/v1/dlq/replay", "/v1/chat/completions", "/mcp"} {
			req, _ := http.NewRequest(http.MethodPost, g.hs.URL+path, strings.NewReader(ingest.body))
			if ct != "none" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, resp, 415, "unsupported_media_type", "Content-Type: application/json")
		}
	}
	g.untouched(t, "bodies that are not application/json")
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		resp := send(t, g, ingest, "", "Content-Type", ct)
		decodeAs(t, resp, 202, nil)
	}
}

// With a token, the token is the guard: clients that worked before work
// as before, the scheme in any case; a configured host list still applies.
func TestWithATokenClientsBehaveAsBeforeAndTheSchemeIsCaseInsensitive(t *testing.T) {
	g := startGuarded(t, gateway.Config{Addr: "0.0.0.0:0", Token: "s3cret"})
	search := routeRequest{http.MethodPost, "/v1/search", `{"query":"crows"}`}
	for _, c := range []struct {
		name   string
		host   string
		header []string
		status int
	}{
		{"Bearer gets in", "", []string{"Authorization", "Bearer s3cret"}, 200},
		{"lowercase bearer gets in", "", []string{"Authorization", "bearer s3cret"}, 200},
		{"capital BEARER gets in", "", []string{"Authorization", "BEARER s3cret"}, 200},
		{"two spaces after the scheme get in", "", []string{"Authorization", "Bearer  s3cret"}, 200},
		{"a reverse proxy's host name gets in", "notes.example.org", []string{"Authorization", "Bearer s3cret"}, 200},
		{"a text/plain body gets in as before", "", []string{"Authorization", "Bearer s3cret", "Content-Type", "text/plain"}, 200},
		{"no token is refused", "", nil, 401},
		{"a wrong token is refused", "", []string{"Authorization", "bearer s3cre"}, 401},
		{"a longer token is refused", "", []string{"Authorization", "Bearer s3cret0"}, 401},
		{"another scheme is refused", "", []string{"Authorization", "Basic s3cret"}, 401},
		{"the token alone is refused", "", []string{"Authorization", "s3cret"}, 401},
		{"another site's page without the token is refused", "", []string{"Origin", "https://evil.example"}, 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := send(t, g, search, c.host, c.header...)
			if c.status == 401 {
				wantError(t, resp, 401, "unauthorized", "Bearer")
				return
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("%d %s, want %d", resp.StatusCode, raw, c.status)
			}
		})
	}
	// Named hosts apply with a token too.
	named := startGuarded(t, gateway.Config{Addr: "0.0.0.0:0", Token: "s3cret", Hosts: []string{"notes.example.org"}})
	wantError(t, send(t, named, search, "attacker.example", "Authorization", "Bearer s3cret"), 403, "forbidden", "attacker.example")
	decodeAs(t, send(t, named, search, "notes.example.org", "Authorization", "Bearer s3cret"), 200, nil)
	if n := named.be.search.Load(); n != 1 {
		t.Errorf("%d searches reached the backend, want the one from the named host", n)
	}
}

func TestConfiguredHostsAreNamesNotURLs(t *testing.T) {
	for _, c := range []struct {
		name  string
		hosts []string
		want  string
	}{
		{"a URL is refused", []string{"https://notes.example.org"}, "no scheme or path"},
		{"a path is refused", []string{"notes.example.org/kb"}, "no scheme or path"},
		{"an empty name is refused", []string{"[]"}, "empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.New(gateway.Config{Hosts: c.hosts}, nil, gateway.Deps{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("hosts %q: %v, want an error saying %q", c.hosts, err, c.want)
			}
		})
	}
	for _, ok := range [][]string{{"notes.example.org"}, {"notes.example.org:8443", "*"}, {"192.168.1.5", "[fd00::1]"}} {
		if _, err := gateway.New(gateway.Config{Hosts: ok}, nil, gateway.Deps{}); err != nil {
			t.Errorf("hosts %q: %v", ok, err)
		}
	}
}

// Body errors speak JSON (object, string, integer), never Go.
func TestBodyErrorsNameJSONShapesNotGoTypes(t *testing.T) {
	g := startGuarded(t, gateway.Config{})
	for _, c := range []struct {
		name, path, body, want string
	}{
		{"an array to search says the object it wants", "/v1/search", `[]`, "got an array, want a JSON object with the fields query (string), k (integer), mode (string), lang (string)"},
		{"a string to ask says the object it wants", "/v1/ask", `"crows?"`, "got a string, want a JSON object with the fields question (string), lang (string), mode (string), history (array of objects), k (integer)"},
		{"an array to research says the object it wants", "/v1/research", `[1]`, "want a JSON object with the fields question (string), lang (string), budget (object), no_llm (true or false)"},
		{"a number to replay says the object it wants", "/v1/dlq/replay", `5`, "got a number, want a JSON object with the fields seqs (array of whole numbers (0 or more))"},
		{"an array to ingest says the object it wants", "/v1/ingest", `["/notes"]`, "want a JSON object with the fields paths (array of strings), force (true or false)"},
		{"a number for the query says it wants a string", "/v1/search", `{"query":5}`, `field "query" wants a string, got a number`},
		{"a string for k says it wants an integer", "/v1/search", `{"query":"crows","k":"5"}`, `field "k" wants an integer, got a string`},
		{"a negative sequence says it wants a whole number", "/v1/dlq/replay", `{"seqs":[-1]}`, `field "seqs" wants a whole number (0 or more), got a number -1`},
		{"a string for the paths says it wants an array", "/v1/ingest", `{"paths":"/notes"}`, `field "paths" wants an array of strings, got a string`},
		{"a number for a turn's role says it wants a string", "/v1/ask", `{"question":"q","history":[{"role":1}]}`, `field "history.role" wants a string, got a number`},
		{"an unknown field names the fields there are", "/v1/search", `{"qeury":"crows"}`, `unknown field "qeury"; want a JSON object with the fields query (string)`},
		{"a cut-off body says it ends too early", "/v1/ask", `{"question": "crows"`, "ends too early"},
		{"two values say there is more than one", "/v1/search", `{"query":"a"} {"query":"b"}`, "more than one JSON value; send a JSON object with the fields query"},
		{"an empty body says what to send", "/v1/ingest", ``, "empty request body: send a JSON object with the fields paths (array of strings)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, g.hs.URL+c.path, c.body)
			var body gateway.ErrorBody
			decodeAs(t, resp, 400, &body)
			msg := body.Error.Message
			if body.Error.Code != "bad_request" || !strings.Contains(msg, c.want) {
				t.Errorf("error %+v, want bad_request saying %q", body.Error, c.want)
			}
			for _, goWord := range []string{"gateway.", "schemas.", "Request", "[]", "uint64", "int64", "struct", "json:"} {
				if strings.Contains(msg, goWord) {
					t.Errorf("the message %q names Go's %q", msg, goWord)
				}
			}
		})
	}
	g.untouched(t, "bad bodies")
}
