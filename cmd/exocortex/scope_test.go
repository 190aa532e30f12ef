package main_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/schemas"
)

// scopeCorpus is a small vault of notes in three notebooks (folders), with
// tags and dates, in English and Russian; it is ingested once per test.
func scopeCorpus(t *testing.T) string {
	t.Helper()
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "Work", "projects", "atlas", "budget.md"),
		"---\ntags: [work, budget]\ndate: 2026-03-10\n---\n# Atlas budget\n\nThe Atlas budget was cut by ten percent in March.\n")
	write(t, filepath.Join(vault, "Work", "old.md"), "---\ntags: [work, old]\ndate: 2023-05-01\n---\n# Old budget\n\nThe budget of 2023 was larger.\n")
	write(t, filepath.Join(vault, "Home", "soup.md"), "---\ntags: [recipe]\ndate: 2025-12-01\n---\n# Soup\n\nBorscht soup with beets and dill.\n")
	write(t, filepath.Join(vault, "Дом", "суп.md"), "---\ntags: [рецепт]\ndate: 2026-11-20\n---\n# Суп\n\nБорщ: суп из свёклы с укропом.\n")
	// Each folder is ingested as its own root: a notebook of its name.
	mustExo(t, "ingest", filepath.Join(vault, "Work"), filepath.Join(vault, "Home"), filepath.Join(vault, "Дом"), "--data", data)
	return data
}

// scopedSearch is what search --json says of the query it ran.
type scopedSearch struct {
	Query   string         `json:"query"`
	Scope   *schemas.Scope `json:"scope"`
	Reasons []string       `json:"reasons"`
	Results []hit          `json:"results"`
}

func searchScoped(t *testing.T, data string, args ...string) scopedSearch {
	t.Helper()
	out := mustExo(t, append([]string{"search", "--data", data, "--json"}, args...)...)
	var res scopedSearch
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("search --json %q: %v\n%s", args, err, out)
	}
	return res
}

func TestCLIScopeFlagsAndOperatorsMakeTheQueryScope(t *testing.T) {
	data := scopeCorpus(t)
	now := time.Now()
	lastMonth := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.Local).Format("2006-01-02")
	thisMonth := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.Local).Format("2006-01-02")
	inc := func(f func(*schemas.ScopeSet)) *schemas.Scope { s := &schemas.Scope{}; f(&s.Include); return s }
	exc := func(f func(*schemas.ScopeSet)) *schemas.Scope { s := &schemas.Scope{}; f(&s.Exclude); return s }
	cases := []struct {
		name      string
		args      []string
		wantQuery string
		want      *schemas.Scope // compared without Since and Until
		since     string         // the start of Since ("" = none)
		until     string         // the start of Until
	}{
		{name: "--in keeps a notebook", args: []string{"--in", "Work", "budget"}, wantQuery: "budget", want: inc(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Work"} })},
		{name: "--in repeats for any of several", args: []string{"--in", "Work", "--in", "Дом", "budget"}, wantQuery: "budget",
			want: inc(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Work", "Дом"} })},
		{name: "--not-in leaves a notebook out", args: []string{"--not-in", "Home", "soup"}, wantQuery: "soup", want: exc(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Home"} })},
		{name: "--path keeps a folder", args: []string{"--path", "/projects/atlas/", "budget"}, wantQuery: "budget", want: inc(func(s *schemas.ScopeSet) { s.Paths = []string{"projects/atlas"} })},
		{name: "--not-path leaves one out", args: []string{"--not-path", "projects", "budget"}, wantQuery: "budget", want: exc(func(s *schemas.ScopeSet) { s.Paths = []string{"projects"} })},
		{name: "--doc keeps a document", args: []string{"--doc", "md-1", "budget"}, wantQuery: "budget", want: inc(func(s *schemas.ScopeSet) { s.Docs = []string{"md-1"} })},
		{name: "--tag keeps tags without their #", args: []string{"--tag", "recipe", "--tag", "#рецепт", "soup"}, wantQuery: "soup",
			want: inc(func(s *schemas.ScopeSet) { s.Tags = []string{"recipe", "рецепт"} })},
		{name: "--not-tag leaves a tag out", args: []string{"--not-tag", "old", "budget"}, wantQuery: "budget", want: exc(func(s *schemas.ScopeSet) { s.Tags = []string{"old"} })},
		{name: "--since takes a date", args: []string{"--since", "2024-03-01", "budget"}, wantQuery: "budget", want: &schemas.Scope{}, since: "2024-03-01T00:00:00"},
		{name: "--since takes a span back from now", args: []string{"--since", "7d", "budget"}, wantQuery: "budget", want: &schemas.Scope{},
			since: now.AddDate(0, 0, -7).Format("2006-01-02T")},
		{name: "--since takes a Russian period", args: []string{"--since", "в прошлом месяце", "budget"}, wantQuery: "budget", want: &schemas.Scope{}, since: lastMonth + "T00:00:00"},
		{name: "--until keeps its day", args: []string{"--until", "2024-03-31", "budget"}, wantQuery: "budget", want: &schemas.Scope{}, until: "2024-04-01T00:00:00"},
		{name: "--recent prefers newer notes", args: []string{"--recent", "budget"}, wantQuery: "budget", want: &schemas.Scope{Recent: true}},
		{name: "tag: in the text", args: []string{"soup tag:recipe"}, wantQuery: "soup", want: inc(func(s *schemas.ScopeSet) { s.Tags = []string{"recipe"} })},
		{name: "тег: in the text", args: []string{"суп тег:рецепт"}, wantQuery: "суп", want: inc(func(s *schemas.ScopeSet) { s.Tags = []string{"рецепт"} })},
		{name: "a quoted in: notebook", args: []string{`budget in:"Work notes"`}, wantQuery: "budget", want: inc(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Work notes"} })},
		{name: "в: a Russian notebook", args: []string{"суп в:Дом"}, wantQuery: "суп", want: inc(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Дом"} })},
		{name: "path: and путь:", args: []string{"budget path:projects/atlas путь:projects"}, wantQuery: "budget",
			want: inc(func(s *schemas.ScopeSet) { s.Paths = []string{"projects/atlas", "projects"} })},
		{name: "doc: and док:", args: []string{"budget doc:md-1 док:md-2"}, wantQuery: "budget", want: inc(func(s *schemas.ScopeSet) { s.Docs = []string{"md-1", "md-2"} })},
		{name: "-tag: and не-тег: leave tags out", args: []string{"budget -tag:old не-тег:черновик"}, wantQuery: "budget",
			want: exc(func(s *schemas.ScopeSet) { s.Tags = []string{"old", "черновик"} })},
		{name: "lang: and язык:", args: []string{"суп язык:ru"}, wantQuery: "суп", want: inc(func(s *schemas.ScopeSet) { s.Langs = []string{"ru"} })},
		{name: "after: and before:", args: []string{"budget after:2024-03-01 before:2024-06-01"}, wantQuery: "budget", want: &schemas.Scope{},
			since: "2024-03-01T00:00:00", until: "2024-06-01T00:00:00"},
		{name: "после: and до:", args: []string{"бюджет после:2024-03-01 до:2024-06-01"}, wantQuery: "бюджет", want: &schemas.Scope{},
			since: "2024-03-01T00:00:00", until: "2024-06-01T00:00:00"},
		{name: "an English date phrase", args: []string{"budget since 2024-03-01"}, wantQuery: "budget", want: &schemas.Scope{}, since: "2024-03-01T00:00:00"},
		{name: "a Russian date phrase", args: []string{"бюджет в прошлом месяце"}, wantQuery: "бюджет", want: &schemas.Scope{},
			since: lastMonth + "T00:00:00", until: thisMonth + "T00:00:00"},
		{name: "flags and operators both apply", args: []string{"--in", "Work", "--in", "Home", "--not-tag", "old", "soup in:Home tag:recipe"}, wantQuery: "soup",
			want: &schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Home"}, Tags: []string{"recipe"}}, Exclude: schemas.ScopeSet{Tags: []string{"old"}}}},
		{name: "operators alone list the scope", args: []string{"tag:recipe"}, wantQuery: "", want: inc(func(s *schemas.ScopeSet) { s.Tags = []string{"recipe"} })},
		{name: "a flag alone lists the scope", args: []string{"--in", "Дом"}, wantQuery: "", want: inc(func(s *schemas.ScopeSet) { s.Notebooks = []string{"Дом"} })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := searchScoped(t, data, tc.args...)
			if res.Query != tc.wantQuery || res.Scope == nil {
				t.Fatalf("searched %q with scope %+v, want %q and a scope", res.Query, res.Scope, tc.wantQuery)
			}
			got := *res.Scope
			if !strings.HasPrefix(got.Since, tc.since) || (tc.since == "") != (got.Since == "") ||
				!strings.HasPrefix(got.Until, tc.until) || (tc.until == "") != (got.Until == "") {
				t.Errorf("range %q to %q, want %q to %q", got.Since, got.Until, tc.since, tc.until)
			}
			got.Since, got.Until = "", ""
			if !reflect.DeepEqual(&got, tc.want) {
				t.Errorf("scope %+v, want %+v", got, *tc.want)
			}
			if !strings.Contains(strings.Join(res.Reasons, "\n"), "scope: ") {
				t.Errorf("reasons %q do not say the scope", res.Reasons)
			}
		})
	}
}

func TestCLIScopeMistakesAreUsageErrorsNamingTheFix(t *testing.T) {
	data := scopeCorpus(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a misspelt operator names the known ones", []string{"search", "soup tga:recipe"}, "tag:, in:, path:"},
		{"a misspelt Russian operator", []string{"search", "суп тэг:рецепт"}, "тег:"},
		{"a bad --since names the forms", []string{"search", "--since", "someday", "soup"}, "7d"},
		{"a reversed range", []string{"search", "--since", "2024-06-01", "--until", "2024-03-01", "soup"}, "not before"},
		{"a flag and an operator that keep nothing together", []string{"search", "--in", "Work", "soup in:Home"}, "no note is in both"},
		{"ask of a scope alone", []string{"ask", "tag:recipe"}, "give a question besides the scope"},
		{"research of a scope alone", []string{"research", "--tag", "recipe", "в:Дом"}, "scope without a question"},
		{"no words and no scope", []string{"search", ""}, "give a query"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{tc.args[0], "--data", data}, tc.args[1:]...)
			_, errOut, err := exo(t, args...)
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exocortex %q: %v, stderr %q; want an error holding %q", args, err, errOut, tc.want)
			}
			if tc.name != "no words and no scope" && exitCode(err) != 2 {
				t.Errorf("exit code %d, want 2 (usage)", exitCode(err))
			}
		})
	}
}

// TestCLIAskAndResearchPublishTheirScope runs ask and research against a
// NATS server of the test's and reads what they publish: the scope goes
// out on kb.query.submitted and kb.research.requested; nobody answers.
func TestCLIAskAndResearchPublishTheirScope(t *testing.T) {
	b := bustest.New(t, bus.Topology{})
	nc, err := nats.Connect(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	got := map[string][]byte{}
	for _, subj := range []string{schemas.SubjectQuery, schemas.SubjectResearchRequested} {
		if _, err := nc.Subscribe(subj, func(m *nats.Msg) { mu.Lock(); got[m.Subject] = m.Data; mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
	}
	data := t.TempDir()
	_, _, _ = exo(t, "ask", "--nats", b.URL(), "--data", data, "--timeout", "2s", "--in", "Work", "--since", "2026-01-01",
		"what did I decide about the budget тег:бюджет")
	_, _, _ = exo(t, "research", "--nats", b.URL(), "--data", data, "--timeout", "2s", "--not-tag", "old", "--recent",
		"budget decisions path:projects/atlas")
	read := func(subj string, v any) {
		t.Helper()
		mu.Lock()
		raw := got[subj]
		mu.Unlock()
		if raw == nil {
			t.Fatalf("nothing was published on %s", subj)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v: %s", subj, err, raw)
		}
	}
	var q schemas.QuerySubmitted
	read(schemas.SubjectQuery, &q)
	if q.Question != "what did I decide about the budget" || q.Options.Scope == nil ||
		!reflect.DeepEqual(q.Options.Scope.Include.Notebooks, []string{"Work"}) || !reflect.DeepEqual(q.Options.Scope.Include.Tags, []string{"бюджет"}) ||
		!strings.HasPrefix(q.Options.Scope.Since, "2026-01-01T00:00:00") {
		t.Errorf("ask published %q with scope %+v", q.Question, q.Options.Scope)
	}
	var r schemas.ResearchRequested
	read(schemas.SubjectResearchRequested, &r)
	want := &schemas.Scope{Include: schemas.ScopeSet{Paths: []string{"projects/atlas"}}, Exclude: schemas.ScopeSet{Tags: []string{"old"}}, Recent: true}
	if r.Question != "budget decisions" || !reflect.DeepEqual(r.Scope, want) {
		t.Errorf("research published %q with scope %+v, want %+v", r.Question, r.Scope, want)
	}
}

// TestCLIScopedSearchKeepsOnlyTheScope is end to end: the binary searches
// within each scope kind, and a scope alone lists its notes.
func TestCLIScopedSearchKeepsOnlyTheScope(t *testing.T) {
	data := scopeCorpus(t)
	titles := func(res scopedSearch) []string {
		var out []string
		for _, h := range res.Results {
			out = append(out, h.Title)
		}
		return out
	}
	cases := []struct {
		name string
		args []string
		want []string // the titles, in any order
	}{
		{"a tag keeps its notes", []string{"budget soup tag:recipe"}, []string{"Soup"}},
		{"a Russian tag", []string{"суп тег:рецепт"}, []string{"Суп"}},
		{"a notebook", []string{"--in", "Work", "budget"}, []string{"Atlas budget", "Old budget"}},
		{"a notebook and an excluded tag", []string{"budget в:Work -tag:old"}, []string{"Atlas budget"}},
		{"a path", []string{"budget path:projects/atlas"}, []string{"Atlas budget"}},
		{"a date range", []string{"--since", "2024-01-01", "--until", "2026-06-30", "budget"}, []string{"Atlas budget"}},
		{"operators alone list the scope", []string{"tag:recipe"}, []string{"Soup"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := titles(searchScoped(t, data, tc.args...))
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.want))) {
				t.Errorf("titles %q, want %q", got, tc.want)
			}
		})
	}
}
