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
	maxBody, maxInFlight, timeout := s.cfg.PluginMaxBody, s.cfg.PluginMaxInFlight, s.cfg.PluginBodyTimeout
	if maxBody <= 0 {
		maxBody = DefaultPluginMaxBody
	}
	if maxInFlight <= 0 {
		maxInFlight = DefaultPluginMaxInFlight
	}
	maxInFlight = max(maxInFlight, maxBody)
	if timeout <= 0 {
		timeout = DefaultPluginBodyTimeout
	}
	origins := s.PluginOrigins()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.PluginSecret == "" {
			http.Error(w, "the SiYuan bridge has no plugin secret configured", http.StatusForbidden)
			return
		}
		// A plugin in a browser-served SiYuan posts from that page's
		// origin: the browser asks first (a preflight) and reads the answer
		// only with these headers.
		if origin := r.Header.Get("Origin"); origin != "" {
			if !originAllowed(origins, origin) {
				s.refuse(w, r, http.StatusForbidden, "origin not allowed",
					fmt.Sprintf("origin %s may not post here: add it to EXOCORTEX_SIYUAN_PLUGIN_ORIGINS (plugin_origins in the settings file)", origin))
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, "+PluginHeader)
				w.Header().Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if r.Method != http.MethodPost {
			http.Error(w, "POST events here", http.StatusMethodNotAllowed)
			return
		}
		got := r.Header.Get(PluginHeader)
		if got == "" {
			got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.PluginSecret)) != 1 {
			s.refuse(w, r, http.StatusUnauthorized, "wrong or missing secret", "wrong or missing secret")
			return
		}
		if r.ContentLength > maxBody {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, "body too large",
				fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, maxBody))
			return
		}
		need := maxBody // an unknown length may be as long as allowed
		if r.ContentLength >= 0 {
			need = r.ContentLength
		}
		if !s.plugin.take(need, maxInFlight) {
			w.Header().Set("Retry-After", "1")
			s.refuse(w, r, http.StatusServiceUnavailable, "too many bodies in flight",
				fmt.Sprintf("busy: bodies in flight would pass %d bytes", maxInFlight))
			return
		}
		defer s.plugin.give(need)
		// The deadline covers the body; a server without deadlines (a
		// test recorder) reads without one.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			s.refuse(w, r, http.StatusRequestEntityTooLarge, "body too large",
				fmt.Sprintf("body is over the limit of %d bytes", maxBody))
			return
		case errors.As(err, &netErr) && netErr.Timeout():
			s.refuse(w, r, http.StatusRequestTimeout, "body too slow",
				fmt.Sprintf("the body did not arrive within %s", timeout))
			return
		case err != nil:
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var evs []Event
		if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
			err = json.Unmarshal(raw, &evs)
		} else {
			var ev Event
			err = json.Unmarshal(raw, &ev)
			evs = []Event{ev}
		}
		if err != nil {
			http.Error(w, "not a SiYuan event: "+err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, ev := range evs {
			if ev.Cmd == "" {
				continue
			}
			select {
			case s.inbox <- ev:
				n++
			default:
				http.Error(w, fmt.Sprintf("busy: %d events queued", len(s.inbox)), http.StatusServiceUnavailable)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"accepted":%d}`+"\n", n)
	})
}
