package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/exocortex/exocortex/schemas"
)

var update = flag.Bool("update", false, "rewrite schemas/json/*.schema.json from the structs")

// TestJSONSchemasMatchTheStructs keeps the published JSON Schemas in step
// with the Go structs: a field added to a struct without regenerating the
// schema file fails here (go test ./schemas -update rewrites them).
func TestJSONSchemasMatchTheStructs(t *testing.T) {
	for _, spec := range schemas.Specs() {
		got, err := schemas.JSONSchema(spec.Type)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("json", spec.Type+".schema.json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./schemas -update)", path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with the %s struct (run go test ./schemas -update)", path, spec.Type)
		}
	}
}

func samples() []schemas.Event {
	return []schemas.Event{
		&schemas.DocChanged{DocID: "d1", Source: schemas.SourceSiYuan, Path: "/n/d1.sy", Title: "T", Hash: "h", Version: 1,
			Blocks: []schemas.Block{{ID: "b1", Type: schemas.BlockHeading, Level: 1, Text: "T", Refs: []string{"d2"}}}},
		&schemas.DocChanged{DocID: "d1", Deleted: true, Version: 2},
		&schemas.ChunkCreated{ChunkID: "c1", DocID: "d1", Hash: "h", Text: "x", BlockIDs: []string{"b1"}, SectionPath: []string{"T"}, Lang: "en"},
		&schemas.ChunkCreated{ChunkID: "c1", DocID: "d1", Hash: "h", Tombstone: true},
		&schemas.DocStructure{DocID: "d1", Hash: "h", ChunkIDs: []string{"c1"}, Blocks: []schemas.BlockNode{{ID: "b1", Type: "heading", ChunkID: "c1"}}},
		&schemas.EmbedDone{Model: "e5@abc", Dim: 2, Items: []schemas.EmbeddedChunk{{ChunkID: "c1", DocID: "d1", Hash: "h", Vector: schemas.Vector{0.6, -0.8}}}},
		&schemas.EmbedRequest{Model: "e5@abc", Pass: "p1", Chunk: schemas.ChunkCreated{ChunkID: "c1", DocID: "d1", Hash: "h", Text: "x"}},
		&schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q1", Question: "где живут вороны?", Lang: "ru",
			History: []schemas.Turn{{Role: "user", Text: "hi"}}, Options: schemas.QueryOptions{Mode: schemas.ModeHybrid, K: 5,
				Scope: &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Work notes"}, Tags: []string{"recipe"}},
					Exclude: schemas.ScopeSet{Tags: []string{"old"}}, Since: "2024-03-01T00:00:00+03:00", Until: "2024-04-01", Recent: true}}}},
		&schemas.QueryRetrieved{Query: schemas.Query{QueryID: "q1", Question: "q"}, Searched: "q", Mode: schemas.ModeHybrid,
			Candidates: []schemas.Candidate{{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Text: "x"},
				Lexical: &schemas.RetrieverHit{Rank: 1, Score: 3.2}, Fused: 1.0 / 61, FusedRank: 1}},
			TimingsMS: map[string]float64{"lexical": 1.5}},
		&schemas.AnswerDone{QueryID: "q1", Question: "q", Mode: schemas.AnswerExtractive, Answer: "a", Confidence: 0.5,
			Citations: []schemas.Citation{{BlockID: "20210808180117-abc", Quote: "a", Link: "siyuan://blocks/20210808180117-abc"}}},
		&schemas.AnswerToken{QueryID: "q1", Seq: 1, Text: "Hel"},
		&schemas.QueryReranked{Query: schemas.Query{QueryID: "q1", Question: "q"}, Searched: "q", Mode: schemas.ModeRerank,
			Contexts: []schemas.Context{{Passage: schemas.Passage{ChunkID: "c1", DocID: "d1", Text: "x"}, Rank: 1, Score: 4.2, Source: "rerank"}}},
	}
}

func TestAnswerTokensGoToTheirQuerysSubject(t *testing.T) {
	if got := schemas.Stamp(&schemas.AnswerToken{QueryID: "q42", Seq: 3, Text: "x"}, "t"); got != "kb.answer.tokens.q42" {
		t.Errorf("token subject = %q", got)
	}
	if got := schemas.Stamp(&schemas.AnswerDone{QueryID: "q42", Mode: schemas.AnswerLLM}, "t"); got != schemas.SubjectAnswerDone {
		t.Errorf("done subject = %q", got)
	}
}

func TestAVectorTravelsExactlyAsBase64(t *testing.T) {
	in := &schemas.EmbedDone{Model: "m", Dim: 3, Items: []schemas.EmbeddedChunk{{ChunkID: "c", DocID: "d", Hash: "h",
		Vector: schemas.Vector{0.1, -1.5e-7, 3.4028235e38}}}}
	schemas.Stamp(in, "t")
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"vector":"`) {
		t.Fatalf("vector is not a base64 string: %s", raw)
	}
	out, err := schemas.DecodeAs[*schemas.EmbedDone](raw)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Items[0].Vector
	for i, x := range in.Items[0].Vector {
		if got[i] != x {
			t.Fatalf("component %d: %v != %v", i, got[i], x)
		}
	}
	bad := strings.Replace(string(raw), `"dim":3`, `"dim":4`, 1)
	if _, err := schemas.Decode([]byte(bad)); !errors.Is(err, schemas.ErrInvalid) || !strings.Contains(err.Error(), "3 dimensions, want 4") {
		t.Errorf("a vector of the wrong dimension decoded: %v", err)
	}
}

func TestEventsThatGoOnTheWireValidateAgainstTheirSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	for _, spec := range schemas.Specs() {
		raw, _ := schemas.JSONSchema(spec.Type)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(spec.Type+".json", doc); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range samples() {
		schemas.Stamp(ev, "trace-1")
		raw, _ := json.Marshal(ev)
		sch, err := c.Compile(ev.Env().Type + ".json")
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s does not validate: %v\n%s", ev.Env().Type, err, raw)
		}
		// And the schema rejects what Decode rejects: an unknown field.
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		m["surprise"] = 1
		bad, _ := json.Marshal(m)
		inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(bad))
		if sch.Validate(inst) == nil {
			t.Errorf("%s schema accepts an unknown field", ev.Env().Type)
		}
		if _, err := schemas.Decode(bad); !errors.Is(err, schemas.ErrMalformed) {
			t.Errorf("Decode accepted an unknown field: %v", err)
		}
	}
}

func TestDecodeRejectsBadInputWithAClearError(t *testing.T) {
	cases := []struct {
		name, in string
		want     error
		mention  string
	}{
		{"broken JSON is malformed", `{"type":`, schemas.ErrMalformed, "unexpected end"},
		{"a missing type is malformed", `{"doc_id":"d"}`, schemas.ErrMalformed, `no "type"`},
		{"an unregistered type is unknown", `{"type":"kb.doc.changed.v9"}`, schemas.ErrUnknownType, "kb.doc.changed.v9"},
		{"a wrongly typed field is malformed", `{"type":"kb.doc.changed.v1","doc_id":5}`, schemas.ErrMalformed, "doc_id"},
		{"a document without id is invalid", `{"type":"kb.doc.changed.v1","hash":"h"}`, schemas.ErrInvalid, "doc_id is empty"},
		{"repeated block ids are invalid", `{"type":"kb.doc.changed.v1","doc_id":"d","hash":"h","blocks":[{"id":"a","type":"paragraph"},{"id":"a","type":"paragraph"}]}`, schemas.ErrInvalid, "repeats"},
		{"a chunk without hash is invalid", `{"type":"kb.chunk.created.v1","chunk_id":"c","doc_id":"d"}`, schemas.ErrInvalid, "hash"},
		{"a query id with a dot is invalid", `{"type":"kb.query.submitted.v1","query_id":"a.b","question":"q"}`, schemas.ErrInvalid, "subject token"},
		{"an unknown mode is invalid", `{"type":"kb.query.submitted.v1","query_id":"a","question":"q","options":{"mode":"magic"}}`, schemas.ErrInvalid, "magic"},
		{"a vector that is not base64 is malformed", `{"type":"kb.embed.done.v1","model":"m","dim":1,"items":[{"chunk_id":"c","doc_id":"d","hash":"h","vector":"%%"}]}`, schemas.ErrMalformed, "vector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schemas.Decode([]byte(tc.in))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("Decode(%s) = %v, want %v mentioning %q", tc.in, err, tc.want, tc.mention)
			}
		})
	}
}

func TestStampGivesDeterministicIDsAndTheRegisteredSubject(t *testing.T) {
	a := &schemas.ChunkCreated{ChunkID: "c1", DocID: "d1", Hash: "abc"}
	if subj := schemas.Stamp(a, "t"); subj != schemas.SubjectChunkCreated {
		t.Errorf("subject = %s", subj)
	}
	if a.ID != "chunk:c1@abc:0" || a.Type != schemas.TypeChunkCreatedV1 || a.TraceID != "t" || a.Time.IsZero() {
		t.Errorf("envelope = %+v", a.Envelope)
	}
	b := &schemas.ChunkCreated{ChunkID: "c1", DocID: "d1", Hash: "abc"}
	schemas.Stamp(b, "other")
	if a.MsgID() != b.MsgID() {
		t.Error("the same chunk gave two message ids")
	}
	del := &schemas.DocChanged{DocID: "d1", Deleted: true, Version: 7}
	if del.MsgID() != "doc:d1@deleted:7" {
		t.Errorf("deletion id = %s", del.MsgID())
	}
}
