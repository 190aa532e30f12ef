package schemas

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// JSONSchema returns the JSON Schema (draft 2020-12) of a registered event
// type, derived from its Go struct: field names and types from the json tags,
// required = fields without omitempty, "type" pinned to the type constant,
// unknown fields rejected (as Decode rejects them).
func JSONSchema(typ string) ([]byte, error) {
	spec, ok := registry[typ]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	root := schemaOf(reflect.TypeOf(spec.New()).Elem())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = "https://exocortex.local/schemas/" + typ + ".json"
	root["title"] = typ
	root["description"] = spec.Description + " Subject: " + spec.Subject + "."
	props := root["properties"].(map[string]any)
	props["type"] = map[string]any{"const": typ}
	for _, path := range spec.Lacks {
		dropProperty(root, strings.Split(path, "."))
	}
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// dropProperty removes the property at path (and its "required" entry)
// from the object schema s: what an older version of a type lacks.
func dropProperty(s map[string]any, path []string) {
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return
	}
	if len(path) > 1 {
		if sub, ok := props[path[0]].(map[string]any); ok {
			dropProperty(sub, path[1:])
		}
		return
	}
	delete(props, path[0])
	if req, ok := s["required"].([]string); ok {
		s["required"] = slices.DeleteFunc(slices.Clone(req), func(r string) bool { return r == path[0] })
	}
}

// JSONSchemaOf returns the JSON Schema (draft 2020-12) of any Go type,
// derived as JSONSchema derives an event's: properties from the json tags
// (embedded structs flattened), required = fields without omitempty or
// omitzero, no other properties allowed on an object. The gateway's OpenAPI
// document derives its request and response schemas with it.
func JSONSchemaOf(t reflect.Type) map[string]any { return schemaOf(t) }

var (
	timeType   = reflect.TypeOf(time.Time{})
	vectorType = reflect.TypeOf(Vector(nil))
)

func schemaOf(t reflect.Type) map[string]any {
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if t == vectorType {
		return map[string]any{"type": "string", "contentEncoding": "base64",
			"description": "little-endian float32 values"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": []string{"array", "null"}, "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": schemaOf(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		addFields(t, props, &required)
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return map[string]any{}
}

func addFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			addFields(f.Type, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = schemaOf(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}
