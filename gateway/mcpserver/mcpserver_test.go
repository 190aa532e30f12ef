package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/mcpserver"
)

var birds = map[string]string{
	"birds.md":  "# Birds\n\nRavens and crows use tools to get food.\n",
	"plants.md": "# Plants\n\nFerns reproduce by spores, not seeds.\n",
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := toolText(res)
	if res.IsError {
		t.Fatalf("%s failed: %s", tool, text)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s structured content %s: %v", tool, raw, err)
	}
	return text
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// exercise lists the tools and calls search, ask and get_block, checking
// that each result is cited.
func exercise(t *testing.T, cs *mcp.ClientSession) {
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s lacks a description or schemas", tool.Name)
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "ask,get_block,research,search" {
		t.Fatalf("tools %v", names)
	}

	var found mcpserver.SearchOutput
	text := call(t, cs, "search", map[string]any{"query": "crows tools"}, &found)
	if len(found.Passages) == 0 || found.Mode == "" {
		t.Fatalf("search: %+v", found)
	}
	p := found.Passages[0]
	if p.Number != 1 || !strings.Contains(p.Snippet, "[crows]") || p.BlockID == "" || p.Link == "" {
		t.Errorf("first passage %+v", p)
	}
	if !strings.Contains(text, "[1] Birds\n") || !strings.Contains(text, "block "+p.BlockID+" "+p.Link) {
		t.Errorf("search text does not cite its first passage: %q", text)
	}

	var ans mcpserver.AskOutput
	text = call(t, cs, "ask", map[string]any{"question": "What do crows use?"}, &ans)
	if ans.Mode != "llm" || len(ans.Citations) != 1 || ans.Citations[0].Quote != "use tools to get food" || ans.Citations[0].Number != 1 {
		t.Fatalf("ask: %+v", ans)
	}
	c := ans.Citations[0]
	want := "Crows «use tools to get food» [1].\n\nSources:\n[1] Birds — block " + c.BlockID + " " + c.Link
	if !strings.HasPrefix(text, want) {
		t.Errorf("ask text %q, want it to start with %q", text, want)
	}

	var blk struct {
		ID, DocID, Text, Link string
	}
	text = call(t, cs, "get_block", map[string]any{"id": c.BlockID}, &blk)
	if blk.ID != c.BlockID || !strings.Contains(blk.Text, "use tools to get food") || !strings.Contains(text, "use tools to get food") {
		t.Errorf("get_block %s: %+v\n%s", c.BlockID, blk, text)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_block", Arguments: map[string]any{"id": "20990101000000-nothing"}})
	if err != nil || !res.IsError || !strings.Contains(toolText(res), "no block 20990101000000-nothing") {
		t.Errorf("get_block of no block: %+v (%v)", res, err)
	}
}

func TestTheMCPClientListsAndCallsTheToolsInMemory(t *testing.T) {
	b, pv := gatewaytest.Start(t, birds)
	pv.Fast.SetAnswer("Crows «use tools to get food» [1].")
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.NewServer(b).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exercise(t, cs)
}

func TestTheMCPClientCallsTheToolsOverStreamableHTTP(t *testing.T) {
	b, pv := gatewaytest.Start(t, birds)
	pv.Fast.SetAnswer("Crows «use tools to get food» [1].")
	srv := httptest.NewServer(mcpserver.HTTPHandler(b))
	defer srv.Close()
	var mu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		}})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exercise(t, cs)

	// ask with a progress token: the tokens stream as notifications.
	params := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "What do crows use?"}}
	params.SetProgressToken("a1")
	if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
		t.Fatalf("ask: %v", err)
	}
	// Notifications are handled apart from the result: wait for them.
	var streamed string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		streamed = strings.Join(progress, "")
		mu.Unlock()
		if strings.HasSuffix(streamed, "[1].") {
			break
		}
	}
	mu.Lock()
	progress = nil
	mu.Unlock()
	if streamed != "Crows «use tools to get food» [1]." {
		t.Errorf("the answer's tokens as progress: %q", streamed)
	}

	// research without a language model: an evidence-only report, cited.
	params = &mcp.CallToolParams{Name: "research", Arguments: map[string]any{"question": "What do crows use to get food?", "no_llm": true}}
	params.SetProgressToken("r1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("research: %v %s", err, toolText(res))
	}
	var rep mcpserver.ResearchOutput
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "evidence_only" || len(rep.Sources) == 0 || !strings.Contains(toolText(res), rep.Sources[0].BlockID) {
		t.Errorf("research report %+v\n%s", rep, toolText(res))
	}
	n := 0
	for deadline := time.Now().Add(5 * time.Second); n == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n = len(progress)
		mu.Unlock()
	}
	if n == 0 {
		t.Errorf("no progress notifications during the research")
	}
}

func TestTheSearchToolGivesFacetsAndDatesWhenAsked(t *testing.T) {
	b, _ := gatewaytest.Start(t, map[string]string{
		"budget.md": "---\ntags: [budget]\ndate: 2026-03-02\n---\n# Budget\n\nThe Atlas budget is 40k.\n",
		"бюджет.md": "---\ntags: [бюджет]\ndate: 2025-12-01\n---\n# Бюджет\n\nБюджет семьи на продукты: budget 600.\n",
	})
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.NewServer(b).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var found mcpserver.SearchOutput
	text := call(t, cs, "search", map[string]any{"query": "budget", "k": 1, "facets": true}, &found)
	if found.Facets == nil || found.Facets.Docs != 2 || len(found.Facets.Tags) != 2 || len(found.Facets.Months) != 2 {
		t.Fatalf("facets %+v", found.Facets)
	}
	if len(found.Passages) != 1 || found.Passages[0].Updated == "" {
		t.Errorf("passages %+v", found.Passages)
	}
	if !strings.Contains(text, "Facets of 2 candidate documents:") || !strings.Contains(text, "Tags: budget 1, бюджет 1") ||
		!strings.Contains(text, "Months: 2026-03 1, 2025-12 1") {
		t.Errorf("search text %q", text)
	}
}
