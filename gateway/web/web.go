// Package web is the page people open in a browser: search, ask with the
// answer streaming in (rendered from Markdown, with a Stop button), the
// conversations kept in the browser's local storage, and the system's
// status, in Russian and English, from 360 px phones up. Under the query box
// a scope bar narrows search and ask (the request's scope): chips for each
// scope part, whether added with the bar (+ notebook, + tag and + folder
// with suggestions from GET /v1/scopes, a date range, recent first), taken
// from a facet under the results, or typed as an operator (tag:recipe,
// в:"Работа"), which stays in the text for the gateway to read. It is plain HTML,
// CSS and JavaScript embedded in the binary (no Node build, no external
// resources) and talks only to the gateway's own /v1 routes; its citations
// open the gateway's note view (/notes/{doc_id}#{block_id}) and SiYuan.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Handler serves the page at "/" (and /index.html) and its assets under
// /static/. Anything else is 404. Only GET and HEAD are allowed.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("web: embedded static directory: " + err.Error()) // the embed directive guarantees it
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Everything the page loads comes from here; the only links out are
		// the http(s) and siyuan:// ones the user clicks (the answer's
		// renderer allows no others), and the gateway's own /notes/ view.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		switch p := r.URL.Path; {
		case p == "/" || p == "/index.html":
			h.Set("Cache-Control", "no-cache")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/"
			files.ServeHTTP(w, r2)
		case strings.HasPrefix(p, "/static/") && !strings.HasSuffix(p, "/"):
			h.Set("Cache-Control", "no-cache")
			r2 := r.Clone(r.Context())
			r2.URL.Path = strings.TrimPrefix(p, "/static")
			if r2.URL.Path == "/index.html" {
				http.NotFound(w, r)
				return
			}
			files.ServeHTTP(w, r2)
		default:
			http.NotFound(w, r)
		}
	})
}
