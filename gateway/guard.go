package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The guard keeps the knowledge base to the user's own pages and clients.
// A web page on another site can make the user's browser send requests to
// the gateway; three checks turn those away before any route runs:
//
//   - Host: a page that rebinds its own name to 127.0.0.1 (DNS rebinding)
//     reaches the gateway with its own name in the Host header, and the
//     browser then lets it read the answers. Only loopback names, the
//     address the connection arrived on and the names in Config.Hosts
//     (EXOCORTEX_HTTP_HOSTS) get in.
//   - Origin: a page may send a "simple" cross-origin request (a form, or
//     fetch with mode no-cors) that the browser does not stop; it carries
//     the page's Origin, which must be the gateway's own or one of
//     Config.CORSOrigins. "Origin: null" (sandboxed frames, files) is
//     refused; without an Origin, Sec-Fetch-Site naming another site is
//     refused but for a top-level navigation.
//   - Content type: a simple request can only carry text/plain, a form or
//     multipart, so POST bodies must be application/json, which a page on
//     another origin cannot send without a CORS preflight.
//
// With a token (Config.Token) the token is the guard: a page on another
// origin cannot attach an Authorization header without a preflight that
// only Config.CORSOrigins pass. Then the Origin and content-type checks are
// off (every client behaves as before) and the Host check applies only
// when Config.Hosts names hosts. /healthz is open to all: it says "ok" and
// nothing else, and probes call it by whatever name they have.
//
// This is the one Host and Origin check of the gateway: the MCP door at
// /mcp relies on it (its SDK's own loopback check is off).

// EnvHosts are the host names (comma-separated) the gateway answers to
// besides loopback names and the address it is bound to.
const EnvHosts = "EXOCORTEX_HTTP_HOSTS"

// Codes of the guard's refusals.
const (
	CodeForbidden        = "forbidden"
	CodeUnsupportedMedia = "unsupported_media_type"
)

// guard is the checks of every request, from the configuration.
type guard struct {
	token     []byte // sha256 of the token; nil without one
	hosts     map[string]bool
	anyHost   bool
	boundHost string // the configured address's host, when it is a name or a specific IP
	origins   []string
	anyOrigin bool
}

func newGuard(cfg Config) *guard {
	g := &guard{hosts: map[string]bool{}, origins: cfg.CORSOrigins, anyOrigin: slices.Contains(cfg.CORSOrigins, "*")}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		g.token = sum[:]
	}
	for _, h := range cfg.Hosts {
		if h == "*" {
			g.anyHost = true
			continue
		}
		g.hosts[hostName(h)] = true
	}
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			g.boundHost = hostName(host)
		}
	}
	return g
}

// check runs the guard's checks but the Host's (checkHost, which comes
// before CORS) on r, public when it reads one of the page's files: nil
// lets it through.
func (g *guard) check(r *http.Request, public bool) *APIError {
	if r.URL.Path == "/healthz" {
		return nil
	}
	if g.token != nil {
		if public || noteViewChecksItsOwnToken(r) { // a signed link, checked by the note view
			return nil
		}
		return g.checkToken(r)
	}
	if public {
		return nil
	}
	if e := g.checkOrigin(r); e != nil {
		return e
	}
	return checkContentType(r)
}

// checkHost lets in loopback names, the address the connection arrived
// on, the configured address's host and Config.Hosts; with a token and no
// Config.Hosts, any host.
func (g *guard) checkHost(r *http.Request) *APIError {
	if r.URL.Path == "/healthz" || g.anyHost || (g.token != nil && len(g.hosts) == 0) || r.Host == "" {
		// An empty Host is HTTP/1.0 from a program: browsers always send one.
		return nil
	}
	h := hostName(r.Host)
	if isLoopbackName(h) || g.hosts[h] || (g.boundHost != "" && h == g.boundHost) {
		return nil
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
		if lh, _, err := net.SplitHostPort(local.String()); err == nil && net.ParseIP(h) != nil && net.ParseIP(h).Equal(net.ParseIP(lh)) {
			return nil
		}
	}
	return apiErr(CodeForbidden, fmt.Sprintf("this gateway does not answer to the host %q: it answers to localhost, 127.0.0.1, [::1] and the names in %s "+
		"(a page that reaches it through another name, as DNS rebinding does, gets nothing). If you reach the gateway by this name, "+
		"add it: %s=%s (comma-separated) or --http-host %s", r.Host, EnvHosts, EnvHosts, h, h))
}

// checkOrigin lets in requests without an Origin (programs, the page's own
// GETs) unless Sec-Fetch-Site says another site sent them, and requests
// whose Origin is the gateway's own (its host is the request's Host, which
// checkHost vouched for) or a configured CORS origin.
func (g *guard) checkOrigin(r *http.Request) *APIError {
	origin := r.Header.Get("Origin")
	if origin == "" {
		site := r.Header.Get("Sec-Fetch-Site")
		if (site == "cross-site" || site == "same-site") && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			return apiErr(CodeForbidden, fmt.Sprintf("a request from another site (Sec-Fetch-Site: %s) may not call this gateway: "+
				"only its own page may, and the origins in %s", site, EnvCORS))
		}
		return nil
	}
	if origin == "null" {
		return apiErr(CodeForbidden, "a request with Origin: null (a sandboxed frame, a local file or a redirect) may not call this gateway: "+
			"open the gateway's own page, or call it from a program (which sends no Origin)")
	}
	if g.anyOrigin || slices.Contains(g.origins, origin) {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	return apiErr(CodeForbidden, fmt.Sprintf("the page at %s may not call this gateway: only the gateway's own page may, and the origins in %s. "+
		"If you trust that page with your notes, add it: %s=%s (comma-separated)", origin, EnvCORS, EnvCORS, origin))
}

// checkContentType wants a request with a body (POST, PUT, PATCH) to say
// application/json (parameters such as charset allowed).
func checkContentType(r *http.Request) *APIError {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	got := "none"
	if ct != "" {
		got = fmt.Sprintf("%q", ct)
	}
	return apiErr(CodeUnsupportedMedia, fmt.Sprintf("the request body must be JSON: send Content-Type: application/json (got %s)", got))
}

// checkToken wants Authorization: Bearer <token>, the scheme in any case,
// the token compared in constant time.
func (g *guard) checkToken(r *http.Request) *APIError {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(sum[:], g.token) == 1 {
		return nil
	}
	return apiErr(CodeUnauthorized, "missing or wrong token: send Authorization: Bearer <the gateway's "+EnvToken+">")
}

// hostName is the lower-case host of a Host header or a configured name:
// without its port, brackets or final dot.
func hostName(hostport string) string {
	h := strings.ToLower(strings.TrimSpace(hostport))
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimPrefix(strings.TrimSuffix(h, "]"), "[")
	return strings.TrimSuffix(h, ".")
}

// isLoopbackName: localhost, a name under .localhost (RFC 6761: browsers
// resolve them to loopback themselves) or a loopback IP.
func isLoopbackName(h string) bool {
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || IsLoopback(h)
}

// validHost checks a configured host name.
func validHost(h string) error {
	switch {
	case h == "*":
		return nil
	case strings.Contains(h, "://") || strings.ContainsAny(h, "/?# "):
		return fmt.Errorf("http host %q: give a host name such as notes.example.org (no scheme or path)", h)
	case hostName(h) == "":
		return fmt.Errorf("http host %q is empty", h)
	}
	return nil
}
