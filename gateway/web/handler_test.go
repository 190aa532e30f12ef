package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/gateway/web"
)

func TestTheHandlerServesThePageAndItsAssetsAndNothingElse(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	tests := []struct {
		name, method, path string
		status             int
		contentType, body  string
	}{
		{"the page is at the root", "GET", "/", 200, "text/html", `<script src="/static/app.js"`},
		{"index.html is the same page", "GET", "/index.html", 200, "text/html", `id="view-ask"`},
		{"the script is JavaScript", "GET", "/static/app.js", 200, "javascript", "readSSE"},
		{"the style sheet is CSS", "GET", "/static/app.css", 200, "text/css", ".cite"},
		{"an unknown path is not found", "GET", "/nope", 404, "", ""},
		{"an unknown asset is not found", "GET", "/static/nope.js", 404, "", ""},
		{"the asset directory is not listed", "GET", "/static/", 404, "", ""},
		{"a POST is refused", "POST", "/", 405, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(tc.method, tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, tc.contentType) {
				t.Errorf("content type %q, want %q", ct, tc.contentType)
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body does not contain %q", tc.body)
			}
			if tc.status == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("no content security policy keeping the page to its own origin")
			}
		})
	}
	// The page loads nothing from elsewhere (it must work offline).
	_, page := get("GET", "/")
	_, script := get("GET", "/static/app.js")
	_, style := get("GET", "/static/app.css")
	for name, text := range map[string]string{"page": page, "script": script, "style": style} {
		for _, ext := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(text, ext) {
				t.Errorf("the %s refers to %q: it must not load external resources", name, ext)
			}
		}
	}
}
