package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/schemas"
)

// recordingGateway is the gateway over a Recorder: what each route hands
// the backend is kept, nothing runs.
func recordingGateway(t *testing.T) (*gatewaytest.Recorder, *httptest.Server) {
	t.Helper()
	rec := &gatewaytest.Recorder{}
	srv, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0", Log: testLog(t)}, rec, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return rec, hs
}

func TestSearchReadsTheScopeFieldAndTheOperatorsOfItsQuery(t *testing.T) {
	rec, hs := recordingGateway(t)
	tags := func(s *schemas.Scope) []string {
		if s == nil {
			return nil
		}
		return s.Include.Tags
	}
	cases := []struct {
		name, body     string
		wantQuery      string
		wantNotebooks  []string
		wantTags       []string
		wantSince      bool
		wantReasonPart string
	}{
		{name: "an English tag operator narrows the scope field", body: `{"query":"soup tag:recipe","scope":{"include":{"notebooks":["Home"]}}}`,
			wantQuery: "soup", wantNotebooks: []string{"Home"}, wantTags: []string{"recipe"}, wantReasonPart: "scope: notebooks Home; tags recipe"},
		{name: "Russian operators and a date", body: `{"query":"суп тег:рецепт после:2026-01-01"}`,
			wantQuery: "суп", wantTags: []string{"рецепт"}, wantSince: true, wantReasonPart: "tags рецепт"},
		{name: "the scope field alone", body: `{"query":"soup","scope":{"include":{"tags":["recipe"]},"recent":true}}`,
			wantQuery: "soup", wantTags: []string{"recipe"}, wantReasonPart: "newer first"},
		{name: "operators alone list the scope", body: `{"query":"tag:recipe"}`,
			wantQuery: "", wantTags: []string{"recipe"}, wantReasonPart: client.NoteListScope},
		{name: "an empty query with a scope lists it", body: `{"query":"","scope":{"include":{"notebooks":["Home"]}}}`,
			wantQuery: "", wantNotebooks: []string{"Home"}, wantReasonPart: client.NoteListScope},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			var res gateway.SearchResult
			decodeAs(t, post(t, hs.URL+"/v1/search", tc.body), http.StatusOK, &res)
			got := rec.Searched()
			if got == nil {
				t.Fatal("the backend was not asked")
			}
			if got.Query != tc.wantQuery || !reflect.DeepEqual(tags(got.Scope), tc.wantTags) {
				t.Errorf("backend got query %q scope %+v; want %q with tags %v", got.Query, got.Scope, tc.wantQuery, tc.wantTags)
			}
			if tc.wantNotebooks != nil && !reflect.DeepEqual(got.Scope.Include.Notebooks, tc.wantNotebooks) {
				t.Errorf("notebooks %v, want %v", got.Scope.Include.Notebooks, tc.wantNotebooks)
			}
			if tc.wantSince && (got.Scope == nil || !strings.HasPrefix(got.Scope.Since, "2026-01-01T00:00:00")) {
				t.Errorf("since %+v, want 2026-01-01", got.Scope)
			}
			if !strings.Contains(strings.Join(res.Reasons, "\n"), tc.wantReasonPart) {
				t.Errorf("reasons %q lack %q", res.Reasons, tc.wantReasonPart)
			}
			if !reflect.DeepEqual(res.Scope, got.Scope) {
				t.Errorf("the result's scope %+v is not the one searched %+v", res.Scope, got.Scope)
			}
		})
	}
}

func TestAScopeThatCannotBeKeptIs400InvalidScope(t *testing.T) {
	rec, hs := recordingGateway(t)
	cases := []struct{ name, route, body, want string }{
		{"a misspelt operator names the known ones", "/v1/search", `{"query":"soup tga:recipe"}`, "tag:, in:, path:"},
		{"a misspelt Russian operator", "/v1/search", `{"query":"суп тэг:рецепт"}`, "тег:"},
		{"a bad date in the scope field", "/v1/search", `{"query":"soup","scope":{"since":"yesterday"}}`, "since"},
		{"a tag both included and excluded", "/v1/search", `{"query":"soup -tag:old","scope":{"include":{"tags":["old"]}}}`, "both included and excluded"},
		{"a question of a scope alone", "/v1/ask", `{"question":"tag:recipe"}`, "only a scope"},
		{"a misspelt operator in a question", "/v1/ask", `{"question":"soup pth:x"}`, "path:"},
		{"a research of a scope alone", "/v1/research", `{"question":"в:Работа"}`, "only a scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			wantError(t, post(t, hs.URL+tc.route, tc.body), http.StatusBadRequest, gateway.CodeInvalidScope, tc.want)
			if rec.Searched() != nil || rec.Asked() != nil || rec.Researched() != nil {
				t.Error("a refused scope reached the backend")
			}
		})
	}
}

func TestAskAndResearchCarryTheScopeAndSayWhatWasRead(t *testing.T) {
	rec, hs := recordingGateway(t)
	resp := post(t, hs.URL+"/v1/ask", `{"question":"what did I cook this month тег:рецепт","scope":{"exclude":{"notebooks":["Archive"]}}}`)
	var done schemas.AnswerDone
	readSSE(t, resp.Body, func(ev sseEvent) bool {
		if ev.Name == "done" {
			_ = json.Unmarshal([]byte(ev.Data), &done)
		}
		return true
	})
	resp.Body.Close()
	q := rec.Asked()
	if q == nil || q.Question != "what did I cook" || q.Options.Scope == nil {
		t.Fatalf("asked %+v", q)
	}
	s := q.Options.Scope
	if !reflect.DeepEqual(s.Include.Tags, []string{"рецепт"}) || !reflect.DeepEqual(s.Exclude.Notebooks, []string{"Archive"}) || s.Since == "" || s.Until == "" {
		t.Errorf("scope %+v: want tag рецепт, not notebook Archive and this month", s)
	}
	if r := strings.Join(done.Reasons, "\n"); !strings.Contains(r, `(from "this month")`) || !strings.Contains(r, "scope: ") {
		t.Errorf("the done event's reasons %q do not say what was read", done.Reasons)
	}

	resp = post(t, hs.URL+"/v1/research", `{"question":"budget decisions in:Work","scope":{"since":"2026-01-01"}}`)
	var report schemas.ResearchReport
	readSSE(t, resp.Body, func(ev sseEvent) bool {
		if ev.Name == "report" {
			_ = json.Unmarshal([]byte(ev.Data), &report)
		}
		return true
	})
	resp.Body.Close()
	r := rec.Researched()
	if r == nil || r.Question != "budget decisions" || r.Scope == nil || r.Scope.Since != "2026-01-01" ||
		!reflect.DeepEqual(r.Scope.Include.Notebooks, []string{"Work"}) {
		t.Fatalf("research request %+v scope %+v", r, r.Scope)
	}
	if !strings.Contains(strings.Join(report.Reasons, "\n"), "notebooks Work") {
		t.Errorf("the report's reasons %q do not say the scope", report.Reasons)
	}
}

func TestOpenAPIDescribesTheScopeAndInvalidScope(t *testing.T) {
	srv, err := gateway.New(gateway.Config{}, nil, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(srv.OpenAPI())
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"SearchRequest", "AskRequest", "ResearchRequest", "SearchResult"} {
		scope := string(doc.Components.Schemas[body].Properties["scope"])
		for _, want := range []string{"include", "exclude", "notebooks", "tags", "since", "until", "recent"} {
			if !strings.Contains(scope, want) {
				t.Errorf("%s.scope lacks %q: %s", body, want, scope)
			}
		}
	}
	if code := string(doc.Components.Schemas["Error"].Properties["error"]); !strings.Contains(code, gateway.CodeInvalidScope) {
		t.Errorf("the error codes lack invalid_scope: %s", code)
	}
}
