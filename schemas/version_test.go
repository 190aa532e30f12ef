package schemas_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func TestEveryProducerEmitsTheSecondVersionOfTheEventsThatCarryAScope(t *testing.T) {
	cases := []struct {
		name string
		ev   schemas.Event
		want string
	}{
		{"a query is stamped kb.query.submitted.v2", &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q", Question: "q"}}, schemas.TypeQuerySubmittedV2},
		{"a research request is stamped kb.research.requested.v2", &schemas.ResearchRequested{ResearchID: "r", Question: "q"}, schemas.TypeResearchRequestedV2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			schemas.Stamp(tc.ev, "t")
			if got := tc.ev.Env().Type; got != tc.want {
				t.Errorf("stamped %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBothVersionsOfAQueryDecodeIntoTheSameStruct(t *testing.T) {
	cases := []struct {
		name, in  string
		wantType  string
		readsText bool
		scoped    bool
	}{
		{"a v1 question without a scope is read as it was", `{"type":"kb.query.submitted.v1","id":"query:a","time":"2026-11-21T10:00:00Z","query_id":"a","question":"tag:recipe soup"}`,
			schemas.TypeQuerySubmittedV1, false, false},
		{"a v1 question with a scope (this branch's builds sent it) keeps its scope", `{"type":"kb.query.submitted.v1","id":"query:a","time":"2026-11-21T10:00:00Z","query_id":"a","question":"soup","options":{"scope":{"include":{"tags":["recipe"]}}}}`,
			schemas.TypeQuerySubmittedV1, false, true},
		{"a v2 question without literal has its text read by the stage", `{"type":"kb.query.submitted.v2","id":"query:a","time":"2026-11-21T10:00:00Z","query_id":"a","question":"тег:рецепт суп"}`,
			schemas.TypeQuerySubmittedV2, true, false},
		{"a v2 question a door read is searched as it is", `{"type":"kb.query.submitted.v2","id":"query:a","time":"2026-11-21T10:00:00Z","query_id":"a","question":"soup","options":{"literal":true,"scope":{"include":{"tags":["recipe"]}}}}`,
			schemas.TypeQuerySubmittedV2, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := schemas.DecodeAs[*schemas.QuerySubmitted]([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if q.Type != tc.wantType || q.ReadsText() != tc.readsText || (q.Options.Scope != nil) != tc.scoped {
				t.Errorf("type %s, reads text %v, scope %+v; want %s, %v, scoped %v", q.Type, q.ReadsText(), q.Options.Scope, tc.wantType, tc.readsText, tc.scoped)
			}
		})
	}
}

func TestVersionsAWorkerDoesNotReadAreRefusedSayingWhatToDo(t *testing.T) {
	cases := []struct {
		name, in string
		want     error
		mention  []string
	}{
		{"a newer query version names the versions read and says to upgrade the workers", `{"type":"kb.query.submitted.v3","query_id":"a","question":"q"}`,
			schemas.ErrUnknownType, []string{`"kb.query.submitted.v3" is newer than this worker`, "kb.query.submitted.v1, kb.query.submitted.v2", "upgrade the workers"}},
		{"a newer research version says the same", `{"type":"kb.research.requested.v7","research_id":"r","question":"q"}`,
			schemas.ErrUnknownType, []string{"kb.research.requested.v1, kb.research.requested.v2", "upgrade the workers"}},
		{"a type of no known family is only unknown", `{"type":"kb.query.asked.v2"}`, schemas.ErrUnknownType, []string{`"kb.query.asked.v2"`}},
		{"literal in a v1 question is refused: v1 is searched as it is", `{"type":"kb.query.submitted.v1","query_id":"a","question":"q","options":{"literal":true}}`,
			schemas.ErrInvalid, []string{"options.literal", "publish kb.query.submitted.v2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schemas.Decode([]byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want %v", err, tc.want)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q does not say %q", err, m)
				}
			}
		})
	}
}

func TestTheFirstVersionsSchemaHasNoFieldOfTheSecond(t *testing.T) {
	props := func(typ string) map[string]any {
		raw, err := schemas.JSONSchema(typ)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Properties struct {
				Options struct {
					Properties map[string]any `json:"properties"`
				} `json:"options"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s.Properties.Options.Properties
	}
	v1, v2 := props(schemas.TypeQuerySubmittedV1), props(schemas.TypeQuerySubmittedV2)
	if _, ok := v1["literal"]; ok {
		t.Error("kb.query.submitted.v1's schema has options.literal")
	}
	for _, p := range []string{"literal", "scope"} {
		if _, ok := v2[p]; !ok {
			t.Errorf("kb.query.submitted.v2's schema lacks options.%s", p)
		}
	}
	if _, ok := v1["scope"]; !ok {
		t.Error("kb.query.submitted.v1's schema lost options.scope (builds of i29 sent it)")
	}
}
