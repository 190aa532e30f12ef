package scope_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/scope"
)

func TestOperatorsBecomeTheScopeAndLeaveTheText(t *testing.T) {
	cases := []struct {
		name, text, clean string
		scope             schemas.Scope
	}{
		{"a tag keeps notes tagged so", "tag:recipe soup", "soup",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"recipe"}}}},
		{"a minus excludes a tag", "soup -tag:old", "soup",
			schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"old"}}}},
		{"not- excludes a tag too", "not-tag:old soup", "soup",
			schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"old"}}}},
		{"a quoted notebook holds spaces", `in:"Work notes" Atlas budget`, "Atlas budget",
			schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Work notes"}}}},
		{"a path is a prefix without its slashes", "path:/projects/atlas/ budget", "budget",
			schemas.Scope{Include: schemas.ScopeSet{Paths: []string{"projects/atlas"}}}},
		{"a document id", "doc:20240301120000-abcdefg what is it", "what is it",
			schemas.Scope{Include: schemas.ScopeSet{Docs: []string{"20240301120000-abcdefg"}}}},
		{"a language by name", "lang:English backups", "backups",
			schemas.Scope{Include: schemas.ScopeSet{Langs: []string{"en"}}}},
		{"operator names ignore case and trailing punctuation", "Tag:Recipe, soup?", "soup?",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"Recipe"}}}},
		{"a tag's # is dropped", "tag:#recipe soup", "soup",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"recipe"}}}},
		{"after and before bound by days", "after:2024-03-01 before:2024-04-01 Atlas", "Atlas",
			schemas.Scope{Since: "2024-03-01T00:00:00+03:00", Until: "2024-04-01T00:00:00+03:00"}},
		{"until keeps its day", "until:2024-03-31 Atlas", "Atlas",
			schemas.Scope{Until: "2024-04-01T00:00:00+03:00"}},
		{"since takes a span back from now", "since:7d backups", "backups",
			schemas.Scope{Since: "2026-11-11T15:00:00+03:00"}},
		{"before takes a month name", "before:May ideas", "ideas",
			schemas.Scope{Until: "2026-05-01T00:00:00+03:00"}},
		{"a quoted period phrase is a value", `since:"last week" ideas`, "ideas",
			schemas.Scope{Since: "2026-11-09T00:00:00+03:00"}},
		{"тег is tag", "тег:рецепт суп", "суп",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"рецепт"}}}},
		{"не-тег excludes", "не-тег:старое суп", "суп",
			schemas.Scope{Exclude: schemas.ScopeSet{Tags: []string{"старое"}}}},
		{"в with guillemets is a notebook", "в:«Рабочие заметки» бюджет", "бюджет",
			schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Рабочие заметки"}}}},
		{"блокнот is a notebook too", "блокнот:Работа бюджет", "бюджет",
			schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{"Работа"}}}},
		{"путь is path", "путь:проекты/атлас бюджет", "бюджет",
			schemas.Scope{Include: schemas.ScopeSet{Paths: []string{"проекты/атлас"}}}},
		{"язык takes a Russian name", "язык:русский бэкап", "бэкап",
			schemas.Scope{Include: schemas.ScopeSet{Langs: []string{"ru"}}}},
		{"после and до bound by days", "после:01.03.2024 до:2024-04-01 атлас", "атлас",
			schemas.Scope{Since: "2024-03-01T00:00:00+03:00", Until: "2024-04-01T00:00:00+03:00"}},
		{"до takes a genitive month", "до:мая идеи", "идеи",
			schemas.Scope{Until: "2026-05-01T00:00:00+03:00"}},
		{"a date phrase is removed and becomes the range", "what did I decide about Atlas this month", "what did I decide about Atlas",
			schemas.Scope{Since: "2026-11-01T00:00:00+03:00", Until: "2026-12-01T00:00:00+03:00"}},
		{"a Russian date phrase too", "что я решил по Атласу в прошлом месяце", "что я решил по Атласу",
			schemas.Scope{Since: "2026-10-01T00:00:00+03:00", Until: "2026-11-01T00:00:00+03:00"}},
		{"an operator and a phrase intersect", "after:2026-10-15 notes last month", "notes",
			schemas.Scope{Since: "2026-10-15T00:00:00+03:00", Until: "2026-11-01T00:00:00+03:00"}},
		{"an operator inside quotes is words", `"tag:recipe" soup`, `"tag:recipe" soup`, schemas.Scope{}},
		{"links, times, labels and drives are words", `http://example.com 10:30 Note: C:\dir`, `http://example.com 10:30 Note: C:\dir`, schemas.Scope{}},
		{"only operators leave no text", "tag:recipe", "", schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"recipe"}}}},
		{"a repeated tag counts once", "tag:a tag:a tag:b x", "x",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"a", "b"}}}},
		{"sort:recent puts newer notes first", "Atlas budget sort:recent", "Atlas budget", schemas.Scope{Recent: true}},
		{"sort:newest and sort:latest too, in any case", "Sort:Newest backups sort:latest", "backups", schemas.Scope{Recent: true}},
		{"sort:recent joins other operators", "tag:work sort:recent budget", "budget",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"work"}}, Recent: true}},
		{"сортировка:новые is sort:recent", "бюджет Атласа сортировка:новые", "бюджет Атласа", schemas.Scope{Recent: true}},
		{"сортировка:новизна too", "бэкап сортировка:новизна", "бэкап", schemas.Scope{Recent: true}},
		{"сортировка:свежие with a Russian tag", "тег:работа сортировка:свежие бюджет", "бюджет",
			schemas.Scope{Include: schemas.ScopeSet{Tags: []string{"работа"}}, Recent: true}},
		{"a quoted sort:recent is words", `"sort:recent" flag`, `"sort:recent" flag`, schemas.Scope{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clean, s, _, err := scope.Parse(c.text, now, moscow)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.text, err)
			}
			if clean != c.clean {
				t.Errorf("clean %q, want %q", clean, c.clean)
			}
			got, _ := json.Marshal(s)
			want, _ := json.Marshal(c.scope)
			if string(got) != string(want) {
				t.Errorf("scope\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestNothingIsSilent(t *testing.T) {
	cases := []struct {
		name, text string
		errHas     string // "" when Parse must succeed
		noteHas    string // "" when no note is wanted
	}{
		{"a misspelt operator is an error naming the known ones", "tga:recipe soup", `unknown operator "tga:": did you mean tag:? Known: tag:, in:`, ""},
		{"a misspelt Russian operator too", "пуьт:проекты бюджет", `did you mean путь:?`, ""},
		{"an unknown name stays words, with a note", "foo:bar soup", "", `"foo:bar" is searched as words`},
		{"re:invent stays words, with a note", "re:invent talks", "", `"re:" is not an operator`},
		{"a #tag is a word, and the note shows the operator", "#recipe soup", "", "tag:recipe keeps only notes tagged recipe"},
		{"a #number is a word without a note", "issue #29", "", ""},
		{"an unknown language is an error", "lang:de x", "lang:de: unknown language: want ru or en", ""},
		{"a bad date is an error saying what is wanted", "after:soon x", "want a span back from now (7d", ""},
		{"an unclosed quote is an error", `in:"Work notes x`, "is not closed", ""},
		{"a negated date is an error", "-after:2024-01-01 x", "cannot be negated", ""},
		{"a reversed range is an error", "after:2024-05-01 before:2024-03-01 x", "is not before until", ""},
		{"a tag both kept and excluded is an error", "tag:old -tag:old x", "both included and excluded", ""},
		{"a phrase read as a range is told", "notes this month", "", `searching 2026-11-01 to 2026-11-30 (from "this month")`},
		{"contradicting phrases are dropped and told", "last year vs this year", "", "leave no time between them"},
		{"links and times need no note", "http://x.org at 10:30", "", ""},
		{"an unknown sort order is an error naming the one there is", "sort:oldest x", "sort:oldest: unknown order: want sort:recent", ""},
		{"an unknown Russian sort order too", "сортировка:старые x", "want сортировка:recent (newest, latest; Russian новые", ""},
		{"sort cannot be negated", "-sort:recent x", "cannot be negated", ""},
		{"port:8080 is no misspelt sort:", "port:8080 firewall", "", `"port:" is not an operator`},
		{"сорт:антоновка names an apple variety, not an order", "сорт:антоновка урожай", "", `"сорт:" is not an operator`},
		{"спорт:футбол stays words", "спорт:футбол счёт", "", `"спорт:" is not an operator`},
		{"a misspelt сортировка is an error", "сортирвка:новые x", "did you mean сортировка:?", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, notes, err := scope.Parse(c.text, now, moscow)
			switch {
			case c.errHas == "" && err != nil:
				t.Fatalf("Parse(%q): %v", c.text, err)
			case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
				t.Fatalf("Parse(%q) error %v, want one saying %q", c.text, err, c.errHas)
			}
			joined := strings.Join(notes, "\n")
			if c.noteHas == "" && c.errHas == "" && len(notes) > 0 {
				t.Errorf("unwanted notes: %q", notes)
			}
			if c.noteHas != "" && !strings.Contains(joined, c.noteHas) {
				t.Errorf("notes %q do not say %q", notes, c.noteHas)
			}
		})
	}
}

func TestParseJoinsEveryProblem(t *testing.T) {
	_, _, _, err := scope.Parse("tga:x lang:de after:soon x", now, moscow)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"tga:", "lang:de", "after:"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not name %s: %v", w, err)
		}
	}
}
