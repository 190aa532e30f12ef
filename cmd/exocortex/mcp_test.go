package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/exocortex/exocortex/models/llm/llmtest"
)

// TestMCPOnStdioServesTheToolsWithCitedResults runs `exocortex mcp` as an
// assistant would (a subprocess speaking MCP on stdin/stdout), with the
// stages started over --data and against a running `up`, and calls its
// tools with the SDK's client.
func TestMCPOnStdioServesTheToolsWithCitedResults(t *testing.T) {
	t.Parallel()
	for _, withUp := range []bool{false, true} {
		name := "stages here"
		if withUp {
			name = "against up"
		}
		t.Run(name, func(t *testing.T) {
			data, vault := t.TempDir(), t.TempDir()
			write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n")
			write(t, filepath.Join(vault, "plants.md"), "# Plants\n\nFerns reproduce by spores, not seeds.\n")
			srv := llmtest.New(t)
			srv.SetAnswer("Crows «use tools to get food» [1].")
			env := append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=", "EXOCORTEX_LLM_BASE_URL="+srv.URL(),
				"EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG=")
			if withUp {
				up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--no-models", "--log-level", "warn")
				up.Env = env
				upErr := &lockedBuffer{}
				up.Stderr = upErr
				if err := up.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = up.Process.Signal(syscall.SIGTERM); _ = up.Wait() }()
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("up did not start: %s", upErr.String())
					}
				}
			}
			mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
			stderr := mcpTools(t, env, data)
			if withUp != strings.Contains(stderr, `"stages_here":false`) {
				t.Errorf("exocortex mcp attached to the running system: %v, want %v: %s", !withUp, withUp, stderr)
			}
		})
	}
}

// mcpTools starts exocortex mcp over data and checks its tools; it
// returns what the command logged.
func mcpTools(t *testing.T, env []string, data string) string {
	cmd := exec.Command(binary, "mcp", "--data", data, "--no-models", "--log-level", "info")
	cmd.Env = env
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("stderr of exocortex mcp:\n%s", stderr.String())
		}
	}()
	if init := cs.InitializeResult(); init == nil || init.ServerInfo.Name != "exocortex" {
		t.Errorf("server info %+v", init)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "ask,get_block,research,search" {
		t.Fatalf("tools %v", names)
	}
	call := func(name string, args map[string]any, out any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError {
			t.Fatalf("%s failed: %s", name, text)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %s: %v", name, raw, err)
		}
		return text
	}
	var ans struct {
		Mode      string `json:"mode"`
		Citations []struct {
			Number  int    `json:"number"`
			BlockID string `json:"block_id"`
			Quote   string `json:"quote"`
			Link    string `json:"link"`
		} `json:"citations"`
	}
	text := call("ask", map[string]any{"question": "What do crows use?"}, &ans)
	if ans.Mode != "llm" || len(ans.Citations) != 1 || ans.Citations[0].Quote != "use tools to get food" {
		t.Fatalf("ask: %+v\n%s", ans, text)
	}
	c := ans.Citations[0]
	if !strings.Contains(text, "Sources:\n[1] Birds — block "+c.BlockID+" "+c.Link) {
		t.Errorf("ask text does not list its source: %q", text)
	}
	var blk struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	call("get_block", map[string]any{"id": c.BlockID}, &blk)
	if blk.ID != c.BlockID || !strings.Contains(blk.Text, "use tools to get food") {
		t.Errorf("get_block %s: %+v", c.BlockID, blk)
	}
	var found struct {
		Mode     string `json:"mode"`
		Passages []struct {
			BlockID string `json:"block_id"`
			Snippet string `json:"snippet"`
		} `json:"passages"`
	}
	call("search", map[string]any{"query": "ferns spores"}, &found)
	if found.Mode != "lexical" || len(found.Passages) == 0 || !strings.Contains(found.Passages[0].Snippet, "[spores]") {
		t.Errorf("search: %+v", found)
	}
	if !strings.Contains(stderr.String(), "mcp: serving on stdin/stdout") {
		t.Errorf("exocortex mcp does not log to stderr: %q", stderr.String())
	}
	return stderr.String()
}

// lockedBuffer is a bytes.Buffer the command's stderr copier and the test
// may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMCPIsTheSameOverStdioAndTheGateway: `exocortex mcp` (stdio) and the
// gateway's /mcp of a running `up` report the binary's version, mark a
// snippet's matches alike (in English and Russian), and refuse a request
// over 1 MiB with the same error while the session goes on.
func TestMCPIsTheSameOverStdioAndTheGateway(t *testing.T) {
	t.Parallel()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nRavens and crows use tools to get food.\n")
	write(t, filepath.Join(vault, "вороны.md"), "# Вороны\n\nВороны используют орудия, чтобы добыть еду.\n")
	srv := llmtest.New(t)
	srv.SetAnswer("Crows «use tools to get food» [1].")
	llmEnv := []string{"EXOCORTEX_LLM_BASE_URL=" + srv.URL(), "EXOCORTEX_LLM_MODEL=m", "EXOCORTEX_LLM_CONFIG="}
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	_, upErr := startUp(t, data, llmEnv, "--no-models", "--http", "127.0.0.1:0")
	addr := waitHTTP(t, upErr)
	version := strings.TrimSpace(mustExo(t, "version"))

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	overHTTP, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer overHTTP.Close()
	cmd := exec.Command(binary, "mcp", "--data", data, "--no-models", "--log-level", "warn")
	cmd.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS="), llmEnv...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	overStdio, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer overStdio.Close()

	snippets := map[string]string{}
	for name, cs := range map[string]*mcp.ClientSession{"stdio": overStdio, "gateway": overHTTP} {
		if v := cs.InitializeResult().ServerInfo.Version; v != version || strings.HasPrefix(v, "dev") {
			t.Errorf("%s: server version %q, want the binary's %q", name, v, version)
		}
		for _, q := range []string{"crows tools", "вороны орудия"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": q}})
			if err != nil || res.IsError {
				t.Fatalf("%s: search %q: %v %+v", name, q, err, res)
			}
			var found struct {
				Passages json.RawMessage `json:"passages"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(raw, &found)
			snippets[name] += string(found.Passages)
			if !strings.Contains(string(found.Passages), `"snippet":"`) || !strings.Contains(string(found.Passages), "]") || strings.Contains(string(found.Passages), "**") {
				t.Errorf("%s: search %q: want matches in [ ]: %s", name, q, raw)
			}
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": strings.Repeat("ворона ", 200_000)}})
		if err == nil || !strings.Contains(err.Error(), "request body over 1048576 bytes") {
			t.Errorf("%s: a request over 1 MiB: %v", name, err)
		}
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "crows"}}); err != nil || res.IsError {
			t.Errorf("%s: the session did not go on after the refusal: %v", name, err)
		}
	}
	if snippets["stdio"] != snippets["gateway"] {
		t.Errorf("the transports' passages differ:\nstdio   %s\ngateway %s", snippets["stdio"], snippets["gateway"])
	}
}
