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
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/gateway/gatewaytest"
	"github.com/exocortex/exocortex/gateway/mcpserver"
)

// Behind the gateway's guard (no token, loopback), the official SDK's
// client over streamable HTTP gets in (it sends application/json and no
// Origin), and a foreign Host gets the gateway's JSON refusal: the one
// Host check of the gateway, not the SDK's plain-text one.
func TestTheMCPClientWorksThroughTheGatewaysGuardAndAForeignHostDoesNot(t *testing.T) {
	b, pv := gatewaytest.Start(t, birds)
	pv.Fast.SetAnswer("Crows «use tools to get food» [1].")
	srv, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0", Mounts: map[string]http.Handler{"/mcp": mcpserver.HTTPHandler(b)},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}, b, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("the MCP client through the guard: %v", err)
	}
	defer cs.Close()
	exercise(t, cs)

	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Host = "attacker.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body gateway.ErrorBody
	if resp.StatusCode != 403 || json.Unmarshal(raw, &body) != nil || body.Error.Code != gateway.CodeForbidden ||
		!strings.Contains(body.Error.Message, gateway.EnvHosts) {
		t.Errorf("POST /mcp with Host attacker.example: %d %s, want 403 forbidden naming %s", resp.StatusCode, raw, gateway.EnvHosts)
	}
}
