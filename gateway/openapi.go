package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/schemas"
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
	"POST /v1/ingest":            {summary: "Read files or folders on the machine that writes the index (up's) and put their documents on the bus (202; indexing goes on, GET /v1/status shows it).", body: "IngestRequest", resp: "IngestResult"},
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

// bodyTypes are the Go types of the request and response bodies the
// document names: each schema is derived from its type (schemas.JSONSchemaOf,
// then OpenAPI 3.0's dialect), so a field added to a type is described at
// once.
var bodyTypes = map[string]reflect.Type{
	"SearchRequest":   reflect.TypeFor[SearchRequest](),
	"AskRequest":      reflect.TypeFor[AskRequest](),
	"ResearchRequest": reflect.TypeFor[ResearchRequest](),
	"ReplayRequest":   reflect.TypeFor[ReplayRequest](),
	"IngestRequest":   reflect.TypeFor[IngestRequest](),
	"IngestResult":    reflect.TypeFor[IngestResult](),
	"SearchResult":    reflect.TypeFor[SearchResult](),
	"Block":           reflect.TypeFor[Block](),
	"AnswerDone":      reflect.TypeFor[schemas.AnswerDone](),
	"DeadLetters":     reflect.TypeFor[DeadLetters](),
	"Replayed":        reflect.TypeFor[Replayed](),
	"Readiness":       reflect.TypeFor[Readiness](),
	"Health":          reflect.TypeFor[Health](),
	"Error":           reflect.TypeFor[ErrorBody](),
}

// untypedSchemas describe the bodies the gateway has no Go type of: the
// status document is the CLI's (`exocortex status --json`, Deps.Status), and
// this document is built as a map.
var untypedSchemas = map[string]map[string]any{
	"Status":  obj(map[string]any{"running": boolean, "stages": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}, "documents": integer, "chunks": integer}),
	"OpenAPI": obj(map[string]any{"openapi": str, "paths": map[string]any{"type": "object"}}),
}

// enums narrow string properties (schema name, then the property's path
// through properties and array items) to the values the gateway accepts.
var enums = map[string]map[string][]string{
	"SearchRequest":   {"mode": modes, "lang": langs},
	"AskRequest":      {"mode": modes, "lang": langs, "history.role": {"user", "assistant"}},
	"ResearchRequest": {"lang": langs},
	"Error":           {"error.code": slices.Sorted(maps.Keys(codeStatus))},
}

var (
	modes = []string{schemas.ModeLexical, schemas.ModeVector, schemas.ModeHybrid, schemas.ModeRerank}
	langs = []string{"ru", "en"}
)

var (
	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "integer"}
	boolean = map[string]any{"type": "boolean"}
)

func obj(props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props}
}

// componentSchemas are the document's components/schemas.
func componentSchemas() map[string]any {
	out := map[string]any{}
	for name, t := range bodyTypes {
		s := openAPI30(schemas.JSONSchemaOf(t))
		for path, values := range enums[name] {
			setEnum(s, strings.Split(path, "."), values)
		}
		out[name] = s
	}
	for name, s := range untypedSchemas {
		out[name] = s
	}
	return out
}

// openAPI30 rewrites a JSON Schema (draft 2020-12) into OpenAPI 3.0's
// dialect, in place: a nullable type ["array", "null"] becomes type "array"
// with nullable: true, and base64 content is format "byte".
func openAPI30(s map[string]any) map[string]any {
	if types, ok := s["type"].([]string); ok {
		for _, t := range types {
			if t == "null" {
				s["nullable"] = true
			} else {
				s["type"] = t
			}
		}
	}
	if s["contentEncoding"] == "base64" {
		delete(s, "contentEncoding")
		s["format"] = "byte"
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if sub, ok := s[key].(map[string]any); ok {
			openAPI30(sub)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			openAPI30(p.(map[string]any))
		}
	}
	return s
}

// setEnum sets the enum of the string property at path (through properties
// and, for an array, its items); it panics on a path the schema lacks, so a
// renamed field fails the gateway's tests, not the document.
func setEnum(s map[string]any, path []string, values []string) {
	for _, name := range path {
		if items, ok := s["items"].(map[string]any); ok {
			s = items
		}
		p, ok := s["properties"].(map[string]any)[name].(map[string]any)
		if !ok {
			panic(fmt.Sprintf("openapi: no property %q to narrow to %v", name, values))
		}
		s = p
	}
	e := make([]any, len(values))
	for i, v := range values {
		e[i] = v
	}
	s["enum"] = e
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

// pathParameters declares the {name} segments of path, as OpenAPI wants
// every one declared.
func pathParameters(path string) []any {
	var out []any
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, map[string]any{"name": strings.TrimSuffix(name, "}"), "in": "path", "required": true, "schema": str})
		}
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
		operation := o.operation(path != "/healthz")
		if params := pathParameters(path); len(params) > 0 {
			operation["parameters"] = params
		}
		p[method] = operation
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
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Exocortex HTTP gateway", "version": "1",
			"description": "REST and server-sent events over the Exocortex bus. Off loopback every route but /healthz needs Authorization: Bearer <EXOCORTEX_HTTP_TOKEN>."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         componentSchemas(),
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.OpenAPI())
}
