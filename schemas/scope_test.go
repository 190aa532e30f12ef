package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

func TestAQueryFromAClientBeforeScopesIsStillAcceptedAndSearchesEverything(t *testing.T) {
	for _, path := range []string{"testdata/recorded/kb.query.submitted.v1.json", "testdata/recorded/kb.query.submitted.v1.minimal.json"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		q, err := schemas.DecodeAs[*schemas.QuerySubmitted](raw)
		if err != nil {
			t.Fatalf("%s: an old client's query is refused: %v", path, err)
		}
		if q.Options.Scope != nil || !q.Options.Scope.IsZero() {
			t.Errorf("%s: an old query got a scope: %+v", path, q.Options.Scope)
		}
		out, _ := json.Marshal(q)
		if bytes.Contains(out, []byte(`"scope"`)) {
			t.Errorf("%s: an unscoped query writes a scope key: %s", path, out)
		}
	}
}

func TestAScopedQueryTravelsWholeThroughDecode(t *testing.T) {
	in := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q1", Question: "бюджет Атласа",
		Options: schemas.QueryOptions{Scope: &schemas.Scope{
			Include: schemas.ScopeSet{Notebooks: []string{"Работа"}, Paths: []string{"projects/atlas"}, Docs: []string{"20240301120000-abcdefg"}, Tags: []string{"бюджет"}, Langs: []string{"ru"}},
			Exclude: schemas.ScopeSet{Tags: []string{"old"}, Paths: []string{"archive"}},
			Since:   "2024-03-01T00:00:00+03:00", Until: "2024-06-30", Recent: true}}}}
	schemas.Stamp(in, "t")
	raw, _ := json.Marshal(in)
	got, err := schemas.DecodeAs[*schemas.QuerySubmitted](raw)
	if err != nil {
		t.Fatalf("a scoped query does not decode: %v\n%s", err, raw)
	}
	a, _ := json.Marshal(got.Options.Scope)
	b, _ := json.Marshal(in.Options.Scope)
	if !bytes.Equal(a, b) {
		t.Fatalf("the scope changed on the way:\n got %s\nwant %s", a, b)
	}
	if !strings.Contains(string(raw), `"scope":{"include":{"notebooks":["Работа"]`) {
		t.Errorf("the wire form is not options.scope.include...: %s", raw)
	}
}

// oldOptions is QueryOptions as a worker from before scopes decodes it.
type oldOptions struct {
	Mode           string `json:"mode,omitempty"`
	K              int    `json:"k,omitempty"`
	Lang           string `json:"lang,omitempty"`
	Expand         int    `json:"expand,omitempty"`
	NoAnswer       bool   `json:"no_answer,omitempty"`
	IncludeReports bool   `json:"include_reports,omitempty"`
}

func TestAWorkerBeforeScopesRefusesAScopedQueryInsteadOfIgnoringIt(t *testing.T) {
	raw := []byte(`{"mode":"hybrid","scope":{"include":{"tags":["recipe"]}}}`)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // as schemas.Decode always has
	var old oldOptions
	if err := dec.Decode(&old); err == nil || !strings.Contains(err.Error(), `unknown field "scope"`) {
		t.Fatalf("an old worker would search every note for a scoped query: %v", err)
	}
}

func TestScopeValidateJoinsEveryProblem(t *testing.T) {
	cases := []struct {
		name  string
		scope schemas.Scope
		want  []string // every one must be in the error; none means valid
	}{
		{"an empty scope is valid", schemas.Scope{}, nil},
		{"a date and a time with its zone are valid", schemas.Scope{Since: "2024-03-01", Until: "2024-03-02T10:00:00+03:00"}, nil},
		{"the same day as since and until is valid, until keeping its day", schemas.Scope{Since: "2024-03-01", Until: "2024-03-01"}, nil},
		{"a date people write is not RFC 3339", schemas.Scope{Since: "01.03.2024"}, []string{`since: "01.03.2024" is neither`}},
		{"since after until is refused", schemas.Scope{Since: "2024-05-01", Until: "2024-03-01"}, []string{"since 2024-05-01 is not before until 2024-03-01"}},
		{"an unknown language is named", schemas.Scope{Include: schemas.ScopeSet{Langs: []string{"de"}}}, []string{`include.langs: unknown language "de"`}},
		{"an empty tag is refused", schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{" "}}}, []string{"exclude.tags[0] is empty"}},
		{"a tag both included and excluded is refused, whatever its # and case", schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"#Рецепт"}}, Exclude: schemas.ScopeSet{Tags: []string{"рецепт"}}},
			[]string{`tags "#Рецепт" is both included and excluded`}},
		{"every problem is reported at once", schemas.Scope{Since: "yesterday", Until: "tomorrow", Include: schemas.ScopeSet{Langs: []string{"fr"}, Notebooks: []string{""}}},
			[]string{"since:", "until:", `unknown language "fr"`, "include.notebooks[0] is empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.scope.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("a valid scope is refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("an invalid scope is accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestABadScopeMakesTheQueryInvalid(t *testing.T) {
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q1", Question: "x",
		Options: schemas.QueryOptions{Scope: &schemas.Scope{Since: "2024-05-01", Until: "2024-03-01"}}}}
	schemas.Stamp(q, "t")
	raw, _ := json.Marshal(q)
	if _, err := schemas.Decode(raw); !errors.Is(err, schemas.ErrInvalid) || !strings.Contains(err.Error(), "options.scope: since") {
		t.Fatalf("a query with a reversed range decoded: %v", err)
	}
}

func TestABareUntilDateKeepsItsWholeDay(t *testing.T) {
	s := &schemas.Scope{Since: "2024-03-01", Until: "2024-03-31"}
	since, until, err := s.Range()
	if err != nil {
		t.Fatal(err)
	}
	if !since.Equal(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)) || !until.Equal(time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("range %v .. %v, want March 1 to April 1 (exclusive)", since, until)
	}
}
