package mcpserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/mcpserver"
	"github.com/exocortex/exocortex/schemas"
)

// recordingSession is an MCP client session, in memory, with a server over
// a Recorder.
func recordingSession(t *testing.T) (*gatewaytest.Recorder, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	rec := &gatewaytest.Recorder{}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.NewServer(rec).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return rec, cs
}

func TestTheToolsTakeScopeArgumentsTyped(t *testing.T) {
	_, cs := recordingSession(t)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name == "get_block" {
			continue
		}
		raw, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]struct {
				Type json.RawMessage `json:"type"` // "array", or ["null","array"] for a list
			} `json:"properties"`
		}
		_ = json.Unmarshal(raw, &s)
		want := map[string]string{"in": "array", "not_in": "array", "path": "array", "not_path": "array", "doc": "array",
			"tag": "array", "not_tag": "array", "since": "string", "until": "string", "recent": "boolean", "lang": "string"}
		for name, typ := range want {
			if got := string(s.Properties[name].Type); !strings.Contains(got, `"`+typ+`"`) {
				t.Errorf("tool %s: argument %s is %s, want %s", tool.Name, name, got, typ)
			}
		}
	}
}

func TestTheToolsSendTheScopeOfTheirArgumentsAndOperators(t *testing.T) {
	rec, cs := recordingSession(t)

	var found mcpserver.SearchOutput
	call(t, cs, "search", map[string]any{"query": "soup тег:рецепт", "in": []string{"Home"}, "not_tag": []string{"old"}, "since": "2026-01-01"}, &found)
	s := rec.Searched()
	if s.Query != "soup" || s.Scope == nil || !reflect.DeepEqual(s.Scope.Include.Tags, []string{"рецепт"}) ||
		!reflect.DeepEqual(s.Scope.Include.Notebooks, []string{"Home"}) || !reflect.DeepEqual(s.Scope.Exclude.Tags, []string{"old"}) ||
		!strings.HasPrefix(s.Scope.Since, "2026-01-01T00:00:00") {
		t.Errorf("search sent %q with scope %+v", s.Query, s.Scope)
	}
	if !strings.Contains(strings.Join(found.Reasons, "\n"), "scope: notebooks Home; tags рецепт") {
		t.Errorf("search reasons %q do not say the scope", found.Reasons)
	}

	var answered mcpserver.AskOutput
	call(t, cs, "ask", map[string]any{"question": "what did I decide path:projects/atlas", "tag": []string{"work"}, "recent": true}, &answered)
	q := rec.Asked()
	want := &schemas.Scope{Include: schemas.ScopeSet{Paths: []string{"projects/atlas"}, Tags: []string{"work"}}, Recent: true}
	if q.Question != "what did I decide" || !reflect.DeepEqual(q.Options.Scope, want) {
		t.Errorf("ask sent %q with scope %+v, want %+v", q.Question, q.Options.Scope, want)
	}
	if !strings.Contains(strings.Join(answered.Reasons, "\n"), "newer first") {
		t.Errorf("ask reasons %q do not say the scope", answered.Reasons)
	}

	var reported mcpserver.ResearchOutput
	call(t, cs, "research", map[string]any{"question": "budget in:Work", "until": "2026-06"}, &reported)
	r := rec.Researched()
	if r.Question != "budget" || r.Scope == nil || r.Scope.Include.Notebooks[0] != "Work" || !strings.HasPrefix(r.Scope.Until, "2026-07-01T00:00:00") {
		t.Errorf("research sent %q with scope %+v", r.Question, r.Scope)
	}
}

func TestABadScopeIsAToolErrorNamingTheFix(t *testing.T) {
	rec, cs := recordingSession(t)
	cases := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"a misspelt operator names the known ones", "search", map[string]any{"query": "soup tga:recipe"}, "tag:, in:"},
		{"a bad since names the forms", "search", map[string]any{"query": "soup", "since": "someday"}, "2024-03-01"},
		{"a question of a scope alone", "ask", map[string]any{"question": "тег:рецепт"}, "only a scope"},
		{"a tag kept and left out", "research", map[string]any{"question": "x tag:a", "not_tag": []string{"a"}}, "both included and excluded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if text := toolText(res); !res.IsError || !strings.Contains(text, "invalid_scope") || !strings.Contains(text, tc.want) {
				t.Errorf("%s: error %v %q, want invalid_scope with %q", tc.tool, res.IsError, text, tc.want)
			}
			if rec.Searched() != nil || rec.Asked() != nil || rec.Researched() != nil {
				t.Error("a refused scope reached the backend")
			}
		})
	}
}
