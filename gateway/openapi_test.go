package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/schemas"
)

// routeBodies are the Go types each route decodes and encodes, written here
// apart from openapi.go so that the test checks the document's wiring too.
var routeBodies = map[string]struct{ req, resp any }{
	"GET /healthz":                {resp: gateway.Health{}},
	"GET /readyz":                 {resp: gateway.Readiness{}},
	"POST /v1/search":             {req: gateway.SearchRequest{}, resp: gateway.SearchResult{}},
	"POST /v1/ask":                {req: gateway.AskRequest{}},
	"GET /v1/answers/{query_id}":  {resp: schemas.AnswerDone{}},
	"POST /v1/research":           {req: gateway.ResearchRequest{}},
	"GET /v1/blocks/{id}":         {resp: gateway.Block{}},
	"GET /v1/dlq":                 {resp: gateway.DeadLetters{}},
	"POST /v1/dlq/replay":         {req: gateway.ReplayRequest{}, resp: gateway.Replayed{}},
	"POST /v1/ingest":             {req: gateway.IngestRequest{}, resp: gateway.IngestResult{}},
	"GET /v1/notes/{doc_id}/link": {resp: gateway.NoteLink{}},
	"GET /v1/scopes":              {resp: schemas.ScopeListing{}},
	// Bodies with no Go type in the gateway: the document itself (a map),
	// the CLI's status document, and an HTML page.
	"GET /v1/openapi.json": {},
	"GET /v1/status":       {},
	"GET /notes/{doc_id}":  {},
}

// TestEveryRoutesSchemaNamesTheFieldsOfItsGoType: the request and response
// schemas of every route hold exactly the JSON fields of the Go types the
// route decodes and encodes, nested objects too, and every error response
// is the ErrorBody's; the document keeps to OpenAPI 3.0 (one type per
// schema, items on every array, every $ref resolved, path parameters
// declared).
func TestEveryRoutesSchemaNamesTheFieldsOfItsGoType(t *testing.T) {
	door := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	srv, err := gateway.New(gateway.Config{Mounts: map[string]http.Handler{"/mcp": door}}, nil, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, localRequest(http.MethodGet, "/v1/openapi.json"))
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Fatalf("openapi %q, want 3.0.x", v)
	}
	components := doc["components"].(map[string]any)["schemas"].(map[string]any)
	resolve := func(where string, s any) map[string]any {
		m, _ := s.(map[string]any)
		if r, ok := m["$ref"].(string); ok {
			name := strings.TrimPrefix(r, "#/components/schemas/")
			if m, ok = components[name].(map[string]any); !ok {
				t.Fatalf("%s: $ref %s names no schema", where, r)
			}
		}
		return m
	}
	jsonSchema := func(content any) any {
		return content.(map[string]any)["application/json"].(map[string]any)["schema"]
	}
	paths := doc["paths"].(map[string]any)
	for _, route := range srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		op := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		bodies, ok := routeBodies[route]
		if !ok {
			t.Errorf("%s: the test does not know the Go types of its bodies (add it to routeBodies)", route)
			continue
		}
		if body, ok := op["requestBody"].(map[string]any); ok != (bodies.req != nil) {
			t.Errorf("%s: request body described %v, Go type %T", route, ok, bodies.req)
		} else if ok {
			sameFields(t, route+" request", resolve(route, jsonSchema(body["content"])), reflect.TypeOf(bodies.req), resolve)
		}
		responses := op["responses"].(map[string]any)
		if bodies.resp != nil {
			ok := responses["200"].(map[string]any)
			sameFields(t, route+" response", resolve(route, jsonSchema(ok["content"])), reflect.TypeOf(bodies.resp), resolve)
		}
		errResp := responses["default"].(map[string]any)
		sameFields(t, route+" error", resolve(route, jsonSchema(errResp["content"])), reflect.TypeFor[gateway.ErrorBody](), resolve)
		var params []string
		ps, _ := op["parameters"].([]any)
		for _, p := range ps {
			params = append(params, "{"+p.(map[string]any)["name"].(string)+"}")
		}
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, "{") && !slices.Contains(params, seg) {
				t.Errorf("%s: path parameter %s is not declared", route, seg)
			}
		}
	}
	for name, s := range components {
		openAPI30Only(t, "components/schemas/"+name, s)
	}
}

// sameFields checks that schema s has exactly the JSON fields of t, and
// recursively the same of its nested structs.
func sameFields(t *testing.T, where string, s map[string]any, typ reflect.Type, resolve func(string, any) map[string]any) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == reflect.TypeFor[time.Time]():
		return
	case typ.Kind() == reflect.Slice && typ.Elem().Kind() != reflect.Uint8:
		items, _ := s["items"].(map[string]any)
		if items == nil {
			t.Errorf("%s: an array without items", where)
			return
		}
		sameFields(t, where+"[]", resolve(where, items), typ.Elem(), resolve)
		return
	case typ.Kind() != reflect.Struct:
		return
	}
	props, _ := s["properties"].(map[string]any)
	want := goFields(typ)
	var got []string
	for name := range props {
		got = append(got, name)
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s: schema names %v, the Go type %s has %v", where, got, typ, names)
		return
	}
	for name, ft := range want {
		sameFields(t, where+"."+name, resolve(where, props[name]), ft, resolve)
	}
}

// goFields are the JSON field names of a struct (embedded structs
// flattened) with their types.
func goFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case f.Anonymous && name == "":
			for n, ft := range goFields(f.Type) {
				out[n] = ft
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

// openAPI30Only fails on what OpenAPI 3.0's schema objects do not allow: a
// list of types (3.1's JSON Schema), an array without items.
func openAPI30Only(t *testing.T, where string, s any) {
	t.Helper()
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	if typ, ok := m["type"]; ok {
		if _, isString := typ.(string); !isString {
			t.Errorf("%s: type %v is not one type name", where, typ)
		}
		if typ == "array" && m["items"] == nil {
			t.Errorf("%s: an array without items", where)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			openAPI30Only(t, where+"."+name, p)
		}
	}
	for k, v := range m {
		if k == "properties" {
			continue
		}
		switch v := v.(type) {
		case map[string]any:
			openAPI30Only(t, where+"."+k, v)
		case []any:
			for _, e := range v {
				openAPI30Only(t, where+"."+k, e)
			}
		}
	}
}
