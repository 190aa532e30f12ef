package siyuan

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// PluginHeader carries the shared secret of a forwarding plugin.
const PluginHeader = "X-Exocortex-Secret"

// The plugin endpoint's default limits (Config.PluginMaxBody,
// PluginMaxInFlight, PluginBodyTimeout).
const (
	DefaultPluginMaxBody     = 32 << 20
	DefaultPluginMaxInFlight = 128 << 20
	DefaultPluginBodyTimeout = 30 * time.Second
)

// warnEvery is how often one kind of refused request is logged; the
// refusals in between are counted in the next warning.
const warnEvery = 10 * time.Second

// pluginGate holds what the plugin endpoint shares across requests: the
// bytes of bodies being read and when each kind of refusal was last logged.
type pluginGate struct {
	mu         sync.Mutex
	inFlight   int64
	warned     map[string]time.Time
	suppressed map[string]int
}

// take reserves n bytes of max, or reports that they are not there.
func (g *pluginGate) take(n, max int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight+n > max {
		return false
	}
	g.inFlight += n
	return true
}

func (g *pluginGate) give(n int64) {
	g.mu.Lock()
	g.inFlight -= n
	g.mu.Unlock()
}

// warnable says whether a refusal of this kind is logged now, and how many
// of its kind were not logged since the last one.
func (g *pluginGate) warnable(kind string) (bool, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.warned == nil {
		g.warned, g.suppressed = map[string]time.Time{}, map[string]int{}
	}
	if time.Since(g.warned[kind]) < warnEvery {
		g.suppressed[kind]++
		return false, 0
	}
	n := g.suppressed[kind]
	g.warned[kind], g.suppressed[kind] = time.Now(), 0
	return true, n
}

// refuse answers a refused request and logs it, at most once per warnEvery
// for each kind.
func (s *Source) refuse(w http.ResponseWriter, r *http.Request, status int, kind, msg string) {
	if ok, skipped := s.plugin.warnable(kind); ok {
		s.log.Warn().Str("remote", r.RemoteAddr).Int("status", status).Int("refused_since_last_warning", skipped).
			Msg("siyuan plugin: " + kind)
	}
	http.Error(w, msg, status)
}

// PluginOrigins are the browser origins the plugin endpoint answers (see
// Config.PluginOrigins): the configured ones, or the kernel URL's origin
// and its loopback twin (127.0.0.1 and localhost), where the desktop app's
// window and a local browser load SiYuan from.
func (s *Source) PluginOrigins() []string {
	if len(s.cfg.PluginOrigins) > 0 {
		out := make([]string, 0, len(s.cfg.PluginOrigins))
		for _, o := range s.cfg.PluginOrigins {
			if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
				out = append(out, o)
			}
		}
		return out
	}
	u, err := url.Parse(s.cfg.URL)
	if err != nil || u.Host == "" {
		return nil
	}
	out := []string{u.Scheme + "://" + u.Host}
	host, port := u.Hostname(), u.Port()
	if port != "" {
		port = ":" + port
	}
	switch host {
	case "127.0.0.1":
		out = append(out, u.Scheme+"://localhost"+port)
	case "localhost":
		out = append(out, u.Scheme+"://127.0.0.1"+port)
	}
	return out
}

// originAllowed says whether origin is in allowed ("*": any).
func originAllowed(allowed []string, origin string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(a, origin) {
			return true
		}
	}
	return false
}

// PluginHandler accepts events a SiYuan front-end plugin forwards (POST, a
// /ws message or a list of them, with the shared secret in PluginHeader or
// as a Bearer token). They are applied like /ws events. A request from a
// browser page (an Origin header) is answered only for PluginOrigins,
// preflights (OPTIONS) included; the secret is required all the same. A body over
// Config.PluginMaxBody is refused with 413, one that does not arrive within
// PluginBodyTimeout with 408, and one that would take the bodies being
// read past PluginMaxInFlight with 503.
func (s *Source) PluginHandler() http.Handler {
	p := &pluginEndpoint{s: s, maxBody: s.cfg.PluginMaxBody, maxInFlight: s.cfg.PluginMaxInFlight,
		timeout: s.cfg.PluginBodyTimeout, origins: s.PluginOrigins()}
	if p.maxBody <= 0 {
		p.maxBody = DefaultPluginMaxBody
	}
	if p.maxInFlight <= 0 {
		p.maxInFlight = DefaultPluginMaxInFlight
	}
	p.maxInFlight = max(p.maxInFlight, p.maxBody)
	if p.timeout <= 0 {
		p.timeout = DefaultPluginBodyTimeout
	}
	return p
}

// pluginEndpoint is the plugin endpoint of a source, with its limits
// resolved (see PluginHandler).
type pluginEndpoint struct {
	s                    *Source
	maxBody, maxInFlight int64
	timeout              time.Duration
	origins              []string
}

func (p *pluginEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := p.s
	if s.cfg.PluginSecret == "" {
		http.Error(w, "the SiYuan bridge has no plugin secret configured", http.StatusForbidden)
		return
	}
	if p.answeredOrigin(w, r) {
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST events here", http.StatusMethodNotAllowed)
		return
	}
	if !p.authorized(r) {
		s.refuse(w, r, http.StatusUnauthorized, "wrong or missing secret", "wrong or missing secret")
		return
	}
	need, ok := p.reserve(w, r)
	if !ok {
		return
	}
	defer s.plugin.give(need)
	raw, ok := p.readBody(w, r)
	if !ok {
		return
	}
	evs, err := pluginEvents(raw)
	if err != nil {
		http.Error(w, "not a SiYuan event: "+err.Error(), http.StatusBadRequest)
		return
	}
	p.queue(w, evs)
}

// answeredOrigin handles a request from a browser page: a plugin in a
// browser-served SiYuan posts from that page's origin; the browser asks
// first (a preflight) and reads the answer only with these headers. It
// says whether the request has been answered (refused, or a preflight).
func (p *pluginEndpoint) answeredOrigin(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	if !originAllowed(p.origins, origin) {
		p.s.refuse(w, r, http.StatusForbidden, "origin not allowed",
			fmt.Sprintf("origin %s may not post here: add it to EXOCORTEX_SIYUAN_PLUGIN_ORIGINS (plugin_origins in the settings file)", origin))
		return true
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Add("Vary", "Origin")
	if r.Method != http.MethodOptions {
		return false
	}
	w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, "+PluginHeader)
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// authorized says whether r carries the shared secret (in PluginHeader or
// as a Bearer token).
func (p *pluginEndpoint) authorized(r *http.Request) bool {
	got := r.Header.Get(PluginHeader)
	if got == "" {
		got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(p.s.cfg.PluginSecret)) == 1
}

// reserve counts r's body (its declared length, or the most allowed when
// unknown) in the bytes in flight, to be given back when it is handled;
// a body declared too large, or one that does not fit, is refused.
func (p *pluginEndpoint) reserve(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if r.ContentLength > p.maxBody {
		p.s.refuse(w, r, http.StatusRequestEntityTooLarge, "body too large",
			fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, p.maxBody))
		return 0, false
	}
	need := p.maxBody // an unknown length may be as long as allowed
	if r.ContentLength >= 0 {
		need = r.ContentLength
	}
	if !p.s.plugin.take(need, p.maxInFlight) {
		w.Header().Set("Retry-After", "1")
		p.s.refuse(w, r, http.StatusServiceUnavailable, "too many bodies in flight",
			fmt.Sprintf("busy: bodies in flight would pass %d bytes", p.maxInFlight))
		return 0, false
	}
	return need, true
}

// readBody reads r's body within the size and time limits, answering the
// request itself when it cannot.
func (p *pluginEndpoint) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	// The deadline covers the body; a server without deadlines (a
	// test recorder) reads without one.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(p.timeout))
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.maxBody))
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		p.s.refuse(w, r, http.StatusRequestEntityTooLarge, "body too large",
			fmt.Sprintf("body is over the limit of %d bytes", p.maxBody))
		return nil, false
	case errors.As(err, &netErr) && netErr.Timeout():
		p.s.refuse(w, r, http.StatusRequestTimeout, "body too slow",
			fmt.Sprintf("the body did not arrive within %s", p.timeout))
		return nil, false
	case err != nil:
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return raw, true
}

// pluginEvents decodes a plugin's body: one /ws message or a list of them.
func pluginEvents(raw []byte) ([]Event, error) {
	if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
		var evs []Event
		err := json.Unmarshal(raw, &evs)
		return evs, err
	}
	var ev Event
	err := json.Unmarshal(raw, &ev)
	return []Event{ev}, err
}

// queue hands the events to Run and answers how many it took; a full
// inbox is answered 503 (the events before it stay queued).
func (p *pluginEndpoint) queue(w http.ResponseWriter, evs []Event) {
	n := 0
	for _, ev := range evs {
		if ev.Cmd == "" {
			continue
		}
		select {
		case p.s.inbox <- ev:
			n++
		default:
			http.Error(w, fmt.Sprintf("busy: %d events queued", len(p.s.inbox)), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"accepted":%d}`+"\n", n)
}
