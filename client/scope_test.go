package client_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/schemas"
)

// scopeNow is a Friday, 2026-11-27 12:00 in Moscow.
var scopeNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.FixedZone("MSK", 3*3600))

func TestParseQuestionReadsOperatorsAndKeepsTheGivenScope(t *testing.T) {
	cases := []struct {
		name, text    string
		given         *schemas.Scope
		wantQuestion  string
		wantScope     *schemas.Scope
		wantNote      string // one note holds this
		wantNoScopeOK bool
	}{
		{name: "an English tag operator is read out of the words", text: "soup tag:recipe",
			wantQuestion: "soup", wantScope: &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"recipe"}}}, wantNote: "scope: tags recipe"},
		{name: "a Russian tag operator is read out of the words", text: "суп тег:рецепт",
			wantQuestion: "суп", wantScope: &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"рецепт"}}}},
		{name: "a quoted notebook and an excluded tag", text: `budget in:"Work notes" -tag:old`,
			wantQuestion: "budget", wantScope: &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Work notes"}}, Exclude: schemas.ScopeSet{Tags: []string{"old"}}}},
		{name: "a Russian path and date", text: "бюджет путь:projects/atlas после:2026-03-01",
			wantQuestion: "бюджет", wantScope: &schemas.Scope{Include: schemas.ScopeSet{Paths: []string{"projects/atlas"}}, Since: "2026-03-01T00:00:00+03:00"}},
		{name: "a date phrase becomes the range and a note says so", text: "what did I write this month",
			wantQuestion: "what did I write", wantScope: &schemas.Scope{Since: "2026-11-01T00:00:00+03:00", Until: "2026-12-01T00:00:00+03:00"}, wantNote: `(from "this month")`},
		{name: "a Russian date phrase too", text: "что я писал в прошлом месяце",
			wantQuestion: "что я писал", wantScope: &schemas.Scope{Since: "2026-10-01T00:00:00+03:00", Until: "2026-11-01T00:00:00+03:00"}, wantNote: "в прошлом месяце"},
		{name: "operators alone leave no words and list the scope", text: "tag:recipe",
			wantQuestion: "", wantScope: &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"recipe"}}}, wantNote: client.NoteListScope},
		{name: "a given scope and the text's operators both apply", text: "soup after:2026-01-01",
			given:        &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Home"}}, Recent: true},
			wantQuestion: "soup", wantScope: &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Home"}}, Since: "2026-01-01T00:00:00+03:00", Recent: true}},
		{name: "plain words keep no scope", text: "how to descale a kettle", wantQuestion: "how to descale a kettle", wantNoScopeOK: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, s, notes, err := client.ParseQuestion(tc.text, tc.given, scopeNow)
			if err != nil {
				t.Fatalf("ParseQuestion(%q): %v", tc.text, err)
			}
			if q != tc.wantQuestion {
				t.Errorf("question %q, want %q", q, tc.wantQuestion)
			}
			if tc.wantNoScopeOK {
				if s != nil {
					t.Errorf("scope %+v, want nil", s)
				}
				return
			}
			if !reflect.DeepEqual(s, tc.wantScope) {
				t.Errorf("scope %+v, want %+v", s, tc.wantScope)
			}
			if tc.wantNote != "" && !strings.Contains(strings.Join(notes, "\n"), tc.wantNote) {
				t.Errorf("notes %q lack %q", notes, tc.wantNote)
			}
		})
	}
}

func TestParseQuestionRefusesWhatItCannotRead(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"a misspelt operator names the known ones", "soup tga:recipe", "tag:, in:, path:"},
		{"a misspelt Russian operator too", "суп тэг:рецепт", "тег:"},
		{"a bad date says which forms it takes", "soup after:someday", "2024-03-01"},
		{"an unknown language", "soup lang:fr", "unknown language"},
		{"a reversed range", "soup after:2026-05-01 before:2026-03-01", "since"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := client.ParseQuestion(tc.text, nil, scopeNow)
			var se *client.ScopeError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseQuestion(%q) = %v, want a ScopeError holding %q", tc.text, err, tc.want)
			}
		})
	}
}

func TestIntersectKeepsWhatBothScopesKeep(t *testing.T) {
	set := func(f func(*schemas.ScopeSet)) *schemas.Scope { s := &schemas.Scope{}; f(&s.Include); return s }
	cases := []struct {
		name    string
		a, b    *schemas.Scope
		want    *schemas.Scope
		wantErr string
	}{
		{name: "nothing and nothing is nil"},
		{name: "one side alone is kept", a: set(func(s *schemas.ScopeSet) { s.Tags = []string{"x"} }),
			want: set(func(s *schemas.ScopeSet) { s.Tags = []string{"x"} })},
		{name: "notebooks keep those both name", a: set(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Work", "Home"} }),
			b: set(func(s *schemas.ScopeSet) { s.Notebooks = []string{"work"} }), want: set(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Work"} })},
		{name: "nested paths keep the longer", a: set(func(s *schemas.ScopeSet) { s.Paths = []string{"projects"} }),
			b: set(func(s *schemas.ScopeSet) { s.Paths = []string{"projects/atlas"} }), want: set(func(s *schemas.ScopeSet) { s.Paths = []string{"projects/atlas"} })},
		{name: "tags in no common are an error", a: set(func(s *schemas.ScopeSet) { s.Tags = []string{"recipe"} }),
			b: set(func(s *schemas.ScopeSet) { s.Tags = []string{"рецепт"} }), wantErr: "no note is in both"},
		{name: "exclusions add up", a: &schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"old"}}},
			b: &schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"draft"}}}, want: &schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"old", "draft"}}}},
		{name: "the range is the later since and the earlier until", a: &schemas.Scope{Since: "2026-01-01", Until: "2026-12-01"},
			b: &schemas.Scope{Since: "2026-03-01T00:00:00+03:00", Until: "2027-01-01"}, want: &schemas.Scope{Since: "2026-03-01T00:00:00+03:00", Until: "2026-12-01"}},
		{name: "ranges that do not meet are an error", a: &schemas.Scope{Until: "2026-01-01"}, b: &schemas.Scope{Since: "2026-03-01"}, wantErr: "not before"},
		{name: "an inclusion the other side excludes is an error", a: set(func(s *schemas.ScopeSet) { s.Tags = []string{"old"} }),
			b: &schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"old"}}}, wantErr: "both included and excluded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.Intersect(tc.a, tc.b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Intersect = %+v, %v; want an error holding %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Intersect = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestScopeQueryAndScopeResearchRewriteWhatLeaves(t *testing.T) {
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: "q1", Question: "тег:рецепт",
		Options: schemas.QueryOptions{Scope: &schemas.Scope{Recent: true}}}}
	notes, err := client.ScopeQuery(q, scopeNow)
	if err != nil {
		t.Fatal(err)
	}
	want := &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"рецепт"}}, Recent: true}
	if q.Question != "" || !reflect.DeepEqual(q.Options.Scope, want) || len(notes) == 0 {
		t.Fatalf("query %q scope %+v notes %q; want no words, %+v and notes", q.Question, q.Options.Scope, notes, want)
	}
	if err := q.Validate(); err != nil {
		t.Errorf("a query of a scope alone must be valid (it lists the scope): %v", err)
	}
	if _, err := client.ScopeQuery(&schemas.QuerySubmitted{Query: schemas.Query{Question: "  "}}, scopeNow); err == nil {
		t.Error("an empty question without a scope must be refused")
	}

	r := &schemas.ResearchRequested{ResearchID: "r1", Question: "budget decisions in:Work since:2026-01-01"}
	if _, err := client.ScopeResearch(r, scopeNow); err != nil {
		t.Fatal(err)
	}
	if r.Question != "budget decisions" || r.Scope == nil || r.Scope.Include.Notebooks[0] != "Work" || r.Scope.Since == "" {
		t.Errorf("research %q scope %+v", r.Question, r.Scope)
	}
	var se *client.ScopeError
	if _, err := client.ScopeResearch(&schemas.ResearchRequested{Question: "tag:recipe"}, scopeNow); !errors.As(err, &se) {
		t.Errorf("a research of operators alone: %v, want a ScopeError", err)
	}
}
