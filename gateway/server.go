package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// DefaultAddr is where up serves the gateway.
const DefaultAddr = "127.0.0.1:7600"

// Environment variables of the gateway.
const (
	EnvAddr  = "EXOCORTEX_HTTP"
	EnvToken = "EXOCORTEX_HTTP_TOKEN"
	EnvCORS  = "EXOCORTEX_HTTP_CORS"
)

// ErrNoToken is a gateway bound off loopback without a token.
var ErrNoToken = errors.New("the HTTP gateway listens beyond loopback and has no token: set " + EnvToken + " (clients send Authorization: Bearer <token>), or bind it to 127.0.0.1")

// ErrPortTaken is a gateway address another process holds.
var ErrPortTaken = errors.New("port already in use")

// Config is the gateway's HTTP side.
type Config struct {
	// Addr is host:port (default 127.0.0.1:7600; port 0 picks a free one).
	Addr string
	// Token is the bearer token every route but /healthz and Public checks
	// (the scheme in any case); required when Addr is not a loopback
	// address.
	Token string
	// CORSOrigins are the origins browsers may call from ("*" for any);
	// none turns CORS off. Without a token, a request whose Origin is
	// neither the gateway's own nor one of these is refused (guard.go).
	CORSOrigins []string
	// Hosts are the names (EXOCORTEX_HTTP_HOSTS) the gateway answers to
	// besides loopback names and the address it is bound to ("*": any).
	// Without a token any other Host header is refused (DNS rebinding);
	// with a token, only when Hosts names some.
	Hosts []string
	// MaxBody bounds a request body (default 1 MiB): larger is 413 too_large.
	MaxBody  int64
	Timeouts Timeouts
	// Heartbeat is how often an idle event stream sends a comment line
	// (default 15 s), so proxies keep it open.
	Heartbeat time.Duration
	// FollowUpsWait is how long an ask's stream stays open after its done
	// event for the answer's follow-up questions (default 10 s; negative:
	// not at all).
	FollowUpsWait time.Duration
	// Mounts are more handlers by pattern ("/", "/v1/chat/completions",
	// "/mcp", "/metrics"): the web page and the other doors. Access checks
	// apply to them as to every route.
	Mounts map[string]http.Handler
	// Public are the paths served without the token (GET and HEAD only; a
	// path ending in "/" covers what is under it, except "/" itself, which
	// is the page alone): the web page and its
	// assets, which hold no notes and must load before the page can ask
	// for the token.
	Public []string
	// Listener, when set, is used instead of binding Addr (a caller that
	// bound the port early to fail at once when it is taken).
	Listener net.Listener
	Log      zerolog.Logger
}

// Timeouts of the server; zero means the default.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (default 10 s).
	ReadHeader time.Duration
	// Request bounds a non-streaming route (default 60 s): past it the
	// reply is 504 timeout. Event streams are bounded by the backend's own
	// timeouts instead.
	Request time.Duration
	// Idle bounds a kept-alive connection between requests (default 2 min).
	Idle time.Duration
	// Shutdown is how long Serve waits for open requests when ctx ends
	// (default 5 s).
	Shutdown time.Duration
}

func (c *Config) defaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.FollowUpsWait == 0 {
		c.FollowUpsWait = 10 * time.Second
	}
	t := &c.Timeouts
	if t.ReadHeader <= 0 {
		t.ReadHeader = 10 * time.Second
	}
	if t.Request <= 0 {
		t.Request = 60 * time.Second
	}
	if t.Idle <= 0 {
		t.Idle = 2 * time.Minute
	}
	if t.Shutdown <= 0 {
		t.Shutdown = 5 * time.Second
	}
}

// Validate joins every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		errs = append(errs, fmt.Errorf("http address %q: want host:port such as %s", c.Addr, DefaultAddr))
	} else if !IsLoopback(host) && c.Token == "" {
		errs = append(errs, fmt.Errorf("http address %s: %w", c.Addr, ErrNoToken))
	}
	for _, h := range c.Hosts {
		if err := validHost(h); err != nil {
			errs = append(errs, err)
		}
	}
	for _, o := range c.CORSOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			errs = append(errs, fmt.Errorf("CORS origin %q: want http(s)://host[:port] or *", o))
		}
	}
	return errors.Join(errs...)
}

// IsLoopback reports whether host (a name or an IP) only reaches this
// machine: localhost or a loopback IP. An empty host listens everywhere.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Deps are what the operator routes need besides the Backend.
type Deps struct {
	// Bus serves /v1/dlq, /v1/ingest and the NATS part of /readyz.
	Bus *bus.Bus
	// Stages are the consumers /readyz checks: the system's stages (its
	// catalog's specs; the gateway role gets them as stage.Deps.Stages).
	// None: /readyz checks no stage.
	Stages []bus.StageSpec
	// Status returns what `exocortex status --json` prints (GET /v1/status).
	Status func(ctx context.Context) (any, error)
	// StoreReady reports whether the index can be read (for /readyz); nil
	// skips the check.
	StoreReady func() error
}

// Server is the HTTP gateway.
type Server struct {
	cfg     Config
	backend Backend
	deps    Deps
	mux     *http.ServeMux
	handler http.Handler
	routes  []string // the patterns this server registered (for OpenAPI)
	guard   *guard
	answers *answerCache

	mu   sync.Mutex
	ln   net.Listener
	http *http.Server
}

// New checks the configuration and builds the routes. A non-loopback
// address without a token is refused (ErrNoToken).
func New(cfg Config, be Backend, deps Deps) (*Server, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s := &Server{cfg: cfg, backend: be, deps: deps, mux: http.NewServeMux(), answers: newAnswerCache(1024), ln: cfg.Listener, guard: newGuard(cfg)}
	s.routesInit()
	s.handler = s.withLog(s.withAccess(s.mux))
	return s, nil
}

// Handler is the whole gateway (access checks included).
func (s *Server) Handler() http.Handler { return s.handler }

// Routes lists the method and path patterns of the gateway's own routes
// (not the mounts).
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

func (s *Server) handle(pattern string, h http.HandlerFunc, timeout bool) {
	s.routes = append(s.routes, pattern)
	var hh http.Handler = h
	if timeout {
		hh = s.withTimeout(h)
	}
	s.mux.Handle(pattern, hh)
}

func (s *Server) routesInit() {
	s.handle("GET /healthz", s.healthz, true)
	s.handle("GET /readyz", s.readyz, true)
	s.handle("GET /v1/openapi.json", s.openapi, true)
	s.handle("POST /v1/search", s.search, true)
	s.handle("POST /v1/ask", s.ask, false)
	s.handle("GET /v1/answers/{query_id}", s.answer, true)
	s.handle("POST /v1/research", s.research, false)
	s.handle("GET /v1/status", s.status, true)
	s.handle("GET /v1/blocks/{id}", s.block, true)
	s.handle("GET /v1/dlq", s.dlq, true)
	s.handle("POST /v1/dlq/replay", s.dlqReplay, true)
	s.handle("POST /v1/ingest", s.ingest, true)
	s.notesRoutes()
	s.scopesRoutes()
	hasRoot := false
	for p, h := range s.cfg.Mounts {
		s.mux.Handle(p, h)
		if p == "/" {
			hasRoot = true
		}
	}
	if !hasRoot {
		s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, apiErr(CodeNotFound, fmt.Sprintf("no route %s %s (GET /v1/openapi.json lists them)", r.Method, r.URL.Path)))
		})
	}
}

// Listen binds the address; a taken port fails at once, naming it.
func (s *Server) Listen() error {
	ln, err := Listen(s.cfg.Addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return nil
}

// Listen binds addr for the gateway; a taken port is ErrPortTaken.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("start the HTTP gateway on %s: %w", addr, ErrPortTaken)
	}
	if err != nil {
		return nil, fmt.Errorf("start the HTTP gateway on %s: %w", addr, err)
	}
	return ln, nil
}

// Addr is the bound address (after Listen), else the configured one.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.cfg.Addr
}

// Serve serves until ctx ends (listening first if Listen was not called),
// then shuts down, giving open requests Timeouts.Shutdown; event streams
// end with the server's context.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
		ln = s.ln
	}
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.Timeouts.ReadHeader,
		IdleTimeout:       s.cfg.Timeouts.Idle,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http gateway on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	cancelBase() // ends the event streams
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeouts.Shutdown)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// withLog gives each request a logger in its context (with a trace id:
// the client's X-Trace-Id or a new one) and logs it when done, at debug
// level (warn for a 5xx).
func (s *Server) withLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trace := r.Header.Get("X-Trace-Id")
		if trace == "" || len(trace) > 64 {
			trace = NewID("http")
		}
		log := s.cfg.Log.With().Str("trace_id", trace).Logger()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r.WithContext(log.WithContext(r.Context())))
		ev := log.Debug()
		if rec.status >= 500 {
			ev = log.Warn()
		}
		ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", rec.status).
			Dur("took", time.Since(start)).Str("query_id", w.Header().Get("X-Exocortex-Query-Id")).Msg("http request")
	})
}

// statusRecorder keeps the status a handler wrote; Unwrap lets
// http.ResponseController reach the Flusher underneath.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets handlers that assert http.Flusher (mounted doors) stream.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// withAccess runs the guard (guard.go): the Host, then CORS, then the
// Origin and the content type, or the bearer token when there is one.
func (s *Server) withAccess(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := s.guard.checkHost(r); e != nil {
			writeError(w, e)
			return
		}
		if s.cors(w, r) {
			return
		}
		if e := s.guard.check(r, s.public(r)); e != nil {
			if e.Code == CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="exocortex"`)
			}
			writeError(w, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// public tells whether r reads a file that holds no notes (the web page
// and its assets: Config.Public), which a browser must load before it can
// send the token.
func (s *Server) public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range s.cfg.Public {
		if r.URL.Path == p || (p != "/" && strings.HasSuffix(p, "/") && strings.HasPrefix(r.URL.Path, p)) {
			return true
		}
	}
	return false
}

// cors sets the CORS headers for an allowed origin and answers preflight
// requests (true when it answered).
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.CORSOrigins) == 0 {
		return false
	}
	if !slices.Contains(s.cfg.CORSOrigins, "*") && !slices.Contains(s.cfg.CORSOrigins, origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h.Set("Access-Control-Expose-Headers", "X-Exocortex-Query-Id, Mcp-Session-Id")
	return false
}

func (s *Server) withTimeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeouts.Request)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// decode reads a JSON body into v (a pointer to a request struct): a body
// over MaxBody is too_large, anything but one JSON object of the right
// shape is bad_request, its message in JSON's words (object, string,
// integer), never Go's.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *APIError {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &mbe):
			return apiErr(CodeTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
		case errors.Is(err, io.EOF):
			return apiErr(CodeBadRequest, "empty request body: send "+bodyShape(v))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return apiErr(CodeBadRequest, "request body: the JSON ends too early (a missing } or \"?)")
		case errors.As(err, &se):
			return apiErr(CodeBadRequest, fmt.Sprintf("request body is not valid JSON at byte %d: %v", se.Offset, err))
		case errors.As(err, &te) && te.Field == "":
			return apiErr(CodeBadRequest, fmt.Sprintf("request body: got %s, want %s", jsonValue(te.Value), bodyShape(v)))
		case errors.As(err, &te):
			return apiErr(CodeBadRequest, fmt.Sprintf("request body: field %q wants %s, got %s", te.Field, jsonKind(te.Type), jsonValue(te.Value)))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return apiErr(CodeBadRequest, fmt.Sprintf("request body: unknown field %s; want %s",
				strings.TrimPrefix(err.Error(), "json: unknown field "), bodyShape(v)))
		}
		return apiErr(CodeBadRequest, "request body: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(CodeTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
		}
		return apiErr(CodeBadRequest, "request body: more than one JSON value; send "+bodyShape(v))
	}
	return nil
}

// bodyShape says what JSON a request struct takes: "a JSON object with
// the fields query (string), k (integer), ...".
func bodyShape(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return jsonKind(t)
	}
	var fields []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, fmt.Sprintf("%s (%s)", name, strings.TrimPrefix(strings.TrimPrefix(jsonKind(f.Type), "a "), "an ")))
	}
	return "a JSON object with the fields " + strings.Join(fields, ", ")
}

// jsonKind names the JSON a Go type takes: "a string", "an integer", "an
// array of strings", "an object".
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return "a time (RFC 3339 string)"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number (0 or more)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		elem := jsonKind(t.Elem())
		switch {
		case strings.HasPrefix(elem, "a string"), strings.HasPrefix(elem, "an integer"), strings.HasPrefix(elem, "an object"), strings.HasPrefix(elem, "a number"):
			_, noun, _ := strings.Cut(elem, " ")
			return "an array of " + noun + "s"
		case strings.HasPrefix(elem, "a whole number"):
			return "an array of whole numbers (0 or more)"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}

// jsonValue is what encoding/json says it found ("array", "number -1"),
// as a phrase.
func jsonValue(v string) string {
	kind, rest, _ := strings.Cut(v, " ")
	phrase := map[string]string{"array": "an array", "object": "an object", "string": "a string", "number": "a number", "bool": "true or false"}[kind]
	if phrase == "" {
		return v
	}
	if rest != "" {
		return phrase + " " + rest
	}
	return phrase
}

// Health is /healthz's body: {"status":"ok"}.
type Health struct {
	Status string `json:"status"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// Readiness is /readyz's body: ready when NATS is connected, the index can
// be read and every stage is consuming.
type Readiness struct {
	Ready  bool              `json:"ready"`
	Checks map[string]string `json:"checks"`
}

// readyz: NATS connected; the index opens; every stage's consumer exists
// and is consuming: it has a pull request waiting or messages in hand, or
// nothing pending (a stage with work pending and nobody pulling is down).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd := Readiness{Ready: true, Checks: map[string]string{}}
	fail := func(k, why string) { rd.Ready = false; rd.Checks[k] = why }
	if s.deps.Bus == nil || s.deps.Bus.NC == nil || !s.deps.Bus.NC.IsConnected() {
		fail("nats", "not connected")
	} else {
		rd.Checks["nats"] = "ok"
		for _, st := range s.deps.Stages {
			c, err := s.deps.Bus.JS.Consumer(r.Context(), st.Stream, st.Name)
			if err != nil {
				fail("stage "+st.Name, "no consumer: "+err.Error())
				continue
			}
			info, err := c.Info(r.Context())
			if err != nil {
				fail("stage "+st.Name, err.Error())
				continue
			}
			if info.NumPending > 0 && info.NumWaiting == 0 && info.NumAckPending == 0 {
				fail("stage "+st.Name, fmt.Sprintf("%d pending and no worker pulling", info.NumPending))
				continue
			}
			rd.Checks["stage "+st.Name] = "ok"
		}
	}
	if s.deps.StoreReady != nil {
		if err := s.deps.StoreReady(); err != nil {
			fail("store", err.Error())
		} else {
			rd.Checks["store"] = "ok"
		}
	}
	status := http.StatusOK
	if !rd.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, rd)
}

// needBackend answers 503 when the server has no backend.
func (s *Server) needBackend(w http.ResponseWriter) bool {
	if s.backend == nil {
		writeError(w, apiErr(CodeUnavailable, "this gateway has no backend to answer from"))
		return false
	}
	return true
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	if !s.needBackend(w) {
		return
	}
	var req SearchRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if strings.TrimSpace(req.Query) == "" && req.Scope.IsZero() {
		writeError(w, apiErr(CodeBadRequest, "the query is empty: give words to search, or a scope to list"))
		return
	}
	if e := checkQuery(req.Mode, req.Lang, req.K); e != nil {
		writeError(w, e)
		return
	}
	q, sc, notes, err := ParseScope(req.Query, req.Scope)
	if err != nil {
		writeError(w, classify(err))
		return
	}
	req.Query, req.Scope = q, sc
	res, err := s.backend.Search(r.Context(), req)
	if err != nil {
		s.fail(w, r, "search", err)
		return
	}
	res.Reasons = append(res.Reasons, notes...)
	writeJSON(w, http.StatusOK, res)
}

// checkQuery checks a search's or question's settings (its text is
// checked by its handler).
func checkQuery(mode, lang string, k int) *APIError {
	if !schemas.ValidMode(mode) {
		return apiErr(CodeBadRequest, fmt.Sprintf("mode %q: want lexical, vector, hybrid or rerank (or leave it out)", mode))
	}
	switch lang {
	case "", "ru", "en":
	default:
		return apiErr(CodeBadRequest, fmt.Sprintf("lang %q: want ru or en (or leave it out)", lang))
	}
	if k < 0 || k > 200 {
		return apiErr(CodeBadRequest, fmt.Sprintf("k %d: want 1 to 200 (0 = the default)", k))
	}
	return nil
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	e := classify(err)
	if r.Context().Err() == context.DeadlineExceeded {
		e = apiErr(CodeTimeout, fmt.Sprintf("%s took longer than %s: %v", what, s.cfg.Timeouts.Request, err))
	}
	zerolog.Ctx(r.Context()).Warn().Err(err).Str("route", r.URL.Path).Str("code", e.Code).Msg(what + " failed")
	writeError(w, e)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("query_id")
	if d := s.answers.get(id); d != nil {
		writeJSON(w, http.StatusOK, d)
		return
	}
	writeError(w, apiErr(CodeNotFound, fmt.Sprintf("no finished answer %s here (answers asked through this gateway are kept for the last %d questions)", id, s.answers.max)))
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if s.deps.Status == nil {
		writeError(w, apiErr(CodeUnavailable, "status is not available from this gateway"))
		return
	}
	st, err := s.deps.Status(r.Context())
	if err != nil {
		s.fail(w, r, "status", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) block(w http.ResponseWriter, r *http.Request) {
	if !s.needBackend(w) {
		return
	}
	id := r.PathValue("id")
	b, err := s.backend.Block(r.Context(), id)
	if err != nil {
		s.fail(w, r, "block", err)
		return
	}
	if b == nil {
		writeError(w, apiErr(CodeNotFound, fmt.Sprintf("no block %s in the index", id)))
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// DeadLetterView is one dead letter as GET /v1/dlq lists it (its body cut
// to 500 bytes), as `exocortex dlq list --json` prints it.
type DeadLetterView struct {
	Seq       uint64    `json:"seq"`
	Stage     string    `json:"stage"`
	Subject   string    `json:"subject"`
	Reason    string    `json:"reason"`
	Delivered uint64    `json:"delivered"`
	TraceID   string    `json:"trace_id,omitempty"`
	Time      time.Time `json:"time"`
	Data      string    `json:"data"`
}

// ViewDeadLetter is the listed form of a dead letter.
func ViewDeadLetter(dl bus.DeadLetter) DeadLetterView {
	data := string(dl.Data)
	if len(data) > 500 {
		data = data[:500] + "…"
	}
	return DeadLetterView{Seq: dl.Seq, Stage: dl.Stage, Subject: dl.Subject, Reason: dl.Reason,
		Delivered: dl.Delivered, TraceID: dl.TraceID, Time: dl.Time, Data: data}
}

func (s *Server) needBus(w http.ResponseWriter) bool {
	if s.deps.Bus == nil {
		writeError(w, apiErr(CodeUnavailable, "this gateway has no bus connection"))
		return false
	}
	return true
}

func (s *Server) dlq(w http.ResponseWriter, r *http.Request) {
	if !s.needBus(w) {
		return
	}
	letters, err := s.deps.Bus.DeadLetters(r.Context(), r.URL.Query().Get("stage"))
	if err != nil {
		s.fail(w, r, "dead letters", err)
		return
	}
	out := make([]DeadLetterView, 0, len(letters))
	for _, dl := range letters {
		out = append(out, ViewDeadLetter(dl))
	}
	writeJSON(w, http.StatusOK, DeadLetters{DeadLetters: out})
}

// DeadLetters is GET /v1/dlq's body, oldest first.
type DeadLetters struct {
	DeadLetters []DeadLetterView `json:"dead_letters"`
}

// ReplayRequest is POST /v1/dlq/replay's body.
type ReplayRequest struct {
	Seqs []uint64 `json:"seqs"`
}

func (s *Server) dlqReplay(w http.ResponseWriter, r *http.Request) {
	if !s.needBus(w) {
		return
	}
	var req ReplayRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Seqs) == 0 {
		writeError(w, apiErr(CodeBadRequest, "seqs is empty: give the sequence numbers GET /v1/dlq lists"))
		return
	}
	letters, err := s.deps.Bus.DeadLetters(r.Context(), "")
	if err != nil {
		s.fail(w, r, "dead letters", err)
		return
	}
	by := map[uint64]bus.DeadLetter{}
	for _, dl := range letters {
		by[dl.Seq] = dl
	}
	var sel []bus.DeadLetter
	var missing []string
	for _, n := range req.Seqs {
		dl, ok := by[n]
		if !ok {
			missing = append(missing, fmt.Sprintf("#%d", n))
			continue
		}
		sel = append(sel, dl)
	}
	if len(missing) > 0 {
		writeError(w, apiErr(CodeNotFound, "no dead letter "+strings.Join(missing, ", ")+" (GET /v1/dlq lists them)"))
		return
	}
	n, err := s.deps.Bus.Replay(r.Context(), sel)
	if err != nil {
		s.fail(w, r, "replay", err)
		return
	}
	writeJSON(w, http.StatusOK, Replayed{Replayed: n})
}

// Replayed is POST /v1/dlq/replay's body: how many dead letters went back.
type Replayed struct {
	Replayed int `json:"replayed"`
}

// IngestRequest is POST /v1/ingest's body: files or folders on the
// machine of the process that writes the index (up's).
type IngestRequest struct {
	Paths []string `json:"paths"`
	Force bool     `json:"force,omitempty"`
}

// IngestResult is what POST /v1/ingest answers once the documents are on
// the bus (indexing goes on; GET /v1/status shows it).
type IngestResult struct {
	TraceID    string                    `json:"trace_id"`
	Files      schemas.IngestStats       `json:"files"`
	FileErrors []schemas.IngestFileError `json:"file_errors,omitempty"`
}

// ingest asks the process that writes the index (kb.files.ingest) to read
// the paths on its machine: the gateway's machine may have no notes.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	if !s.needBus(w) {
		return
	}
	var req IngestRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Paths) == 0 {
		writeError(w, apiErr(CodeBadRequest, "paths is empty: give files or folders on the machine that writes the index"))
		return
	}
	res := IngestResult{TraceID: NewID("ingest")}
	rep, err := bus.Request[*schemas.IngestReply](r.Context(), s.deps.Bus, &schemas.IngestRequest{Paths: req.Paths, Force: req.Force}, res.TraceID)
	if errors.Is(err, bus.ErrNoResponders) {
		writeError(w, apiErr(CodeUnavailable, fmt.Sprintf("nobody reads files to ingest (%v): run exocortex up, or the index stage "+
			"(worker --stage index), on the machine with the notes and the data directory", err)))
		return
	}
	if err == nil {
		err = replyErr(rep.Error)
	}
	if err != nil {
		s.fail(w, r, "ingest", err)
		return
	}
	res.Files, res.FileErrors = rep.Files, rep.FileErrors
	writeJSON(w, http.StatusAccepted, res)
}

// answerCache keeps the last answers asked through this gateway.
type answerCache struct {
	mu    sync.Mutex
	max   int
	order []string
	by    map[string]*schemas.AnswerDone
}

func newAnswerCache(n int) *answerCache {
	return &answerCache{max: n, by: map[string]*schemas.AnswerDone{}}
}

func (c *answerCache) put(d *schemas.AnswerDone) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.by[d.QueryID]; !ok {
		c.order = append(c.order, d.QueryID)
	}
	c.by[d.QueryID] = d
	for len(c.order) > c.max {
		delete(c.by, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *answerCache) get(id string) *schemas.AnswerDone {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[id]
}
