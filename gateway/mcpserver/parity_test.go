package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/mcpserver"
)

// bothTransports connects the SDK's client to the server over streamable
// HTTP and over newline-delimited stdio (RunIO on pipes), and returns the
// sessions by name and the HTTP server's URL.
func bothTransports(t *testing.T, b *gatewaytest.Backend) (map[string]*mcp.ClientSession, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(mcpserver.HTTPHandler(b))
	t.Cleanup(srv.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	overHTTP, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- mcpserver.RunIO(ctx, b, toServer, fromServer) }()
	overStdio, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = overHTTP.Close()
		_ = overStdio.Close()
		cancel()
		_ = clientOut.Close()
		_ = fromServer.Close()
		<-served
	})
	return map[string]*mcp.ClientSession{"streamable HTTP": overHTTP, "stdio": overStdio}, srv.URL
}

func TestBothTransportsGiveTheSameVersionMarksLimitsAndErrors(t *testing.T) {
	defer func(v string) { mcpserver.Version = v }(mcpserver.Version)
	mcpserver.Version = "exocortex v1.2.3 (commit 0123456789ab)"
	b, pv := gatewaytest.Start(t, map[string]string{
		"birds.md":  birds["birds.md"],
		"вороны.md": "# Вороны\n\nВороны используют орудия, чтобы добыть еду.\n",
	})
	pv.Fast.SetAnswer("Crows «use tools to get food» [1].")
	sessions, _ := bothTransports(t, b)
	ctx := context.Background()
	snippets := map[string][]string{}
	for name, cs := range sessions {
		t.Run(name, func(t *testing.T) {
			if v := cs.InitializeResult().ServerInfo.Version; v != mcpserver.Version {
				t.Errorf("server version %q, want the build's %q", v, mcpserver.Version)
			}
			for _, q := range []string{"crows tools", "вороны орудия"} {
				var found mcpserver.SearchOutput
				call(t, cs, "search", map[string]any{"query": q}, &found)
				if len(found.Passages) == 0 || !strings.Contains(found.Passages[0].Snippet, "[") || strings.Contains(found.Passages[0].Snippet, "**") {
					t.Errorf("search %q: want matches in [ ]: %+v", q, found.Passages)
				}
				for _, p := range found.Passages {
					snippets[name] = append(snippets[name], p.Snippet)
				}
			}

			// A request over the limit is refused, and the session goes on.
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search",
				Arguments: map[string]any{"query": strings.Repeat("ворона ", mcpserver.MaxBody/6)}})
			if err == nil || !strings.Contains(err.Error(), "request body over 1048576 bytes") {
				t.Errorf("a request over the limit: %v, want the too_large message", err)
			}
			var found mcpserver.SearchOutput
			call(t, cs, "search", map[string]any{"query": "crows"}, &found)

			// Arguments that are not an object are explained in JSON's words.
			for _, args := range []string{`[]`, `"crows"`} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: json.RawMessage(args)})
				if err != nil || !res.IsError {
					t.Fatalf("arguments %s: %v %+v", args, err, res)
				}
				text := toolText(res)
				if !strings.Contains(text, "want a JSON object of the tool's inputs") || strings.Contains(text, "Go value") || strings.Contains(text, "map[string]") {
					t.Errorf("arguments %s: %q", args, text)
				}
			}
		})
	}
	if strings.Join(snippets["stdio"], "|") != strings.Join(snippets["streamable HTTP"], "|") {
		t.Errorf("the snippets differ between the transports:\nstdio %q\nHTTP  %q", snippets["stdio"], snippets["streamable HTTP"])
	}
}

func TestAnHTTPRequestOverTheLimitIs413WithTheJSONRPCErrorOfItsID(t *testing.T) {
	b, _ := gatewaytest.Start(t, birds)
	_, url := bothTransports(t, b)
	// The id last, as the TypeScript SDK writes it.
	big := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","arguments":{"query":"` + strings.Repeat("a", mcpserver.MaxBody) + `"}},"id":9}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = io.MultiReader(strings.NewReader(big)) // no length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			ID    int `json:"id"`
			Error struct {
				Code    int                   `json:"code"`
				Message string                `json:"message"`
				Data    struct{ Code string } `json:"data"`
			} `json:"error"`
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(raw, &e) != nil || e.ID != 9 || e.Error.Code != -32600 || e.Error.Data.Code != "too_large" ||
			e.Error.Message != "request body over 1048576 bytes" {
			t.Errorf("chunked %v: %d %s %s", chunked, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
	}
}
