package gateway

import (
	"net/http"
	"strings"
)

// The OpenAPI 3 description of the gateway, served at /v1/openapi.json.
// A test keeps it equal to the routes the server registers.

type op struct {
	summary string
	body    string // a schema name, "" for none
	resp    string // a schema name, or "sse" for an event stream
	sse     string // the events of a stream
}

// apiOps are the gateway's own operations by "METHOD /path".
var apiOps = map[string]op{
	"GET /healthz":               {summary: "The process is alive (no token needed).", resp: "Health"},
	"GET /readyz":                {summary: "Ready: NATS connected, the index readable, every stage consuming (503 with the failing checks otherwise).", resp: "Readiness"},
	"GET /v1/openapi.json":       {summary: "This description.", resp: "OpenAPI"},
	"POST /v1/search":            {summary: "Search the notes: the same hits as `exocortex search --json`.", body: "SearchRequest", resp: "SearchResult"},
	"POST /v1/ask":               {summary: "Ask a question; the answer streams as server-sent events. The response header X-Exocortex-Query-Id names the query. A client that disconnects abandons it.", body: "AskRequest", resp: "sse", sse: "`event: token` data {seq, text}, in order; `event: restart` data {} (drop the text so far: only when a provider broke off after verified sentences were sent and the answer starts again; every token is verified text that the answer keeps); then `event: done` data kb.answer.done; or `event: error` data {code, message}. Comment lines are heartbeats."},
	"GET /v1/answers/{query_id}": {summary: "A finished answer asked through this gateway (the last 1024 are kept).", resp: "AnswerDone"},
	"POST /v1/research":          {summary: "Research a broad question; progress streams as server-sent events, then the report.", body: "ResearchRequest", resp: "sse", sse: "`event: progress` data kb.research.progress, then `event: report` data kb.research.report, or `event: error` data {code, message}."},
	"GET /v1/status":             {summary: "What `exocortex status --json` prints: per-stage counts, index size, models, providers, the SiYuan bridge.", resp: "Status"},
	"GET /v1/blocks/{id}":        {summary: "An indexed block: its text, document, section path and graph neighbours (404 when there is none).", resp: "Block"},
	"GET /v1/dlq":                {summary: "Dead-lettered messages, oldest first (?stage=NAME for one stage's).", resp: "DeadLetters"},
	"POST /v1/dlq/replay":        {summary: "Replay the dead letters with these sequence numbers.", body: "ReplayRequest", resp: "Replayed"},
	"POST /v1/ingest":            {summary: "Read files or folders on the gateway's machine and put their documents on the bus (202; indexing goes on, GET /v1/status shows it).", body: "IngestRequest", resp: "IngestResult"},
}

// mountOps describe the doors other packages serve, by path: listed when
// mounted.
var mountOps = map[string]map[string]op{
	"/":                    {"get": {summary: "The web page.", resp: "html"}},
	"/v1/chat/completions": {"post": {summary: "OpenAI-compatible chat completions (streaming and not) over the knowledge base.", body: "object", resp: "object"}},
	"/v1/models":           {"get": {summary: "OpenAI-compatible model list: exocortex, exocortex-search.", resp: "object"}},
	"/mcp":                 {"post": {summary: "MCP over streamable HTTP (tools search, ask, get_block, research).", body: "object", resp: "object"}, "get": {summary: "MCP server-to-client stream.", resp: "object"}, "delete": {summary: "End an MCP session.", resp: "object"}},
	"/metrics":             {"get": {summary: "Prometheus metrics (text exposition format).", resp: "text"}},
}

var schemaProps = map[string]map[string]any{
	"SearchRequest": {"query": str, "k": integer, "mode": enum("lexical", "vector", "hybrid", "rerank"), "lang": enum("ru", "en")},
	"AskRequest": {"question": str, "lang": enum("ru", "en"), "mode": enum("lexical", "vector", "hybrid", "rerank"), "k": integer,
		"history": map[string]any{"type": "array", "items": obj(map[string]any{"role": enum("user", "assistant"), "text": str})}},
	"ResearchRequest": {"question": str, "lang": enum("ru", "en"), "no_llm": boolean,
		"budget": obj(map[string]any{"sub_questions": integer, "docs_per_task": integer, "llm_calls": integer, "wall_seconds": integer})},
	"ReplayRequest": {"seqs": map[string]any{"type": "array", "items": integer}},
	"IngestRequest": {"paths": map[string]any{"type": "array", "items": str}, "force": boolean},
	"IngestResult":  {"trace_id": str, "files": map[string]any{"type": "object"}, "file_errors": map[string]any{"type": "array"}},
	"SearchResult": {"mode": str, "reasons": map[string]any{"type": "array", "items": str}, "timings_ms": map[string]any{"type": "object"},
		"results": map[string]any{"type": "array", "items": obj(map[string]any{"rank": integer, "score": num, "title": str, "section_path": map[string]any{"type": "array", "items": str},
			"block_id": str, "doc_id": str, "chunk_id": str, "snippet": str, "link": str, "source": str})}},
	"Block": {"id": str, "doc_id": str, "title": str, "type": str, "text": str, "link": str, "section_path": map[string]any{"type": "array", "items": str},
		"neighbors": map[string]any{"type": "array", "items": obj(map[string]any{"id": str, "kind": str, "text": str})}},
	"AnswerDone":  {"query_id": str, "answer": str, "mode": str, "reasons": map[string]any{"type": "array", "items": str}, "citations": map[string]any{"type": "array"}},
	"DeadLetters": {"dead_letters": map[string]any{"type": "array", "items": obj(map[string]any{"seq": integer, "stage": str, "subject": str, "reason": str, "delivered": integer, "trace_id": str, "time": str, "data": str})}},
	"Replayed":    {"replayed": integer},
	"Readiness":   {"ready": boolean, "checks": map[string]any{"type": "object", "additionalProperties": str}},
	"Health":      {"status": str},
	"Status":      {"running": boolean, "stages": map[string]any{"type": "array"}, "documents": integer, "chunks": integer},
	"OpenAPI":     {"openapi": str, "paths": map[string]any{"type": "object"}},
	"Error":       {"error": obj(map[string]any{"code": enum("bad_request", "unauthorized", "forbidden", "not_found", "too_large", "unsupported_media_type", "timeout", "unavailable", "internal"), "message": str})},
}

var (
	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "integer"}
	num     = map[string]any{"type": "number"}
	boolean = map[string]any{"type": "boolean"}
)

func enum(v ...string) map[string]any {
	e := make([]any, len(v))
	for i, s := range v {
		e[i] = s
	}
	return map[string]any{"type": "string", "enum": e}
}

func obj(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonContent(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func (o op) operation(secured bool) map[string]any {
	out := map[string]any{"summary": o.summary}
	if o.body != "" {
		s := map[string]any{"type": "object"}
		if o.body != "object" {
			s = ref(o.body)
		}
		out["requestBody"] = map[string]any{"required": true, "content": jsonContent(s)}
	}
	var ok map[string]any
	switch o.resp {
	case "sse":
		ok = map[string]any{"description": o.sse, "content": map[string]any{"text/event-stream": map[string]any{"schema": str}}}
	case "html":
		ok = map[string]any{"description": "HTML", "content": map[string]any{"text/html": map[string]any{"schema": str}}}
	case "text":
		ok = map[string]any{"description": "text", "content": map[string]any{"text/plain": map[string]any{"schema": str}}}
	case "object":
		ok = map[string]any{"description": "OK", "content": jsonContent(map[string]any{"type": "object"})}
	default:
		ok = map[string]any{"description": "OK", "content": jsonContent(ref(o.resp))}
	}
	errResp := map[string]any{"description": "an error: code and message", "content": jsonContent(ref("Error"))}
	out["responses"] = map[string]any{"200": ok, "default": errResp}
	if !secured {
		out["security"] = []any{}
	}
	return out
}

// OpenAPI returns the description of the routes this server serves: its
// own and the doors mounted on it.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]any{}
	add := func(path, method string, o op) {
		p, _ := paths[path].(map[string]any)
		if p == nil {
			p = map[string]any{}
			paths[path] = p
		}
		p[method] = o.operation(path != "/healthz")
	}
	for _, r := range s.routes {
		method, path, _ := strings.Cut(r, " ")
		add(path, strings.ToLower(method), apiOps[r])
	}
	for p := range s.cfg.Mounts {
		ops, ok := mountOps[p]
		if !ok {
			ops = map[string]op{"get": {summary: "Mounted handler.", resp: "object"}}
		}
		for m, o := range ops {
			add(p, m, o)
		}
	}
	schemas := map[string]any{}
	for name, props := range schemaProps {
		schemas[name] = obj(props)
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Exocortex HTTP gateway", "version": "1",
			"description": "REST and server-sent events over the Exocortex bus. Off loopback every route but /healthz needs Authorization: Bearer <EXOCORTEX_HTTP_TOKEN>."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.OpenAPI())
}
