package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recencyCorpus holds, in English and in Russian, a note that matches the
// query well but is two months old and one that matches less well but is a
// day old, among unrelated notes (so that BM25 weighs the words).
func recencyCorpus(t *testing.T) string {
	t.Helper()
	data, vault := t.TempDir(), t.TempDir()
	day := func(n int) string { return time.Now().AddDate(0, 0, -n).Format("2006-01-02") }
	notes := map[string]string{
		"old.md":    fmt.Sprintf("---\ndate: %s\n---\n# Old plan\n\nThe Atlas budget: the Atlas budget review and the Atlas budget cuts.\n", day(60)),
		"new.md":    fmt.Sprintf("---\ndate: %s\n---\n# New plan\n\nA long note about travel, birds, gardens and the budget once, among many other words.\n", day(1)),
		"старый.md": fmt.Sprintf("---\ndate: %s\n---\n# Старый план\n\nБюджет Атласа: пересмотр бюджета Атласа и сокращение бюджета Атласа.\n", day(60)),
		"новый.md":  fmt.Sprintf("---\ndate: %s\n---\n# Новый план\n\nДлинная заметка о поездках, птицах, садах и один раз о бюджете среди многих других слов.\n", day(1)),
	}
	for i, filler := range []string{"Crows use tools to crack nuts.", "Tomatoes need full sun.", "Вороны раскалывают орехи.", "Томатам нужно солнце."} {
		notes[fmt.Sprintf("filler%d.md", i)] = fmt.Sprintf("---\ndate: %s\n---\n# Filler %d\n\n%s\n", day(10), i, filler)
	}
	for name, text := range notes {
		write(t, filepath.Join(vault, name), text)
	}
	mustExo(t, "ingest", vault, "--data", data)
	return data
}

// TestRecentHalfLifeAndWeightReachTheRetriever: the well-matching note is 60
// days old, the weaker one a day. With a half-life of 100 years the two are
// about equally fresh and the better match leads; with 7 days (or the
// default 90) the newer one does; a tiny weight gives recency no say. Were
// the settings ignored, every row would put the newer note first.
func TestRecentHalfLifeAndWeightReachTheRetriever(t *testing.T) {
	data := recencyCorpus(t)
	cases := []struct {
		name string
		env  []string
		args []string
		old  bool // the better-matching old note leads
	}{
		{"the default half-life of 90 days puts the newer note first", nil, nil, false},
		{"a half-life of 7 days puts the newer note first", nil, []string{"--recent-half-life", "7d"}, false},
		{"a half-life of 100 years leaves the better match first", nil, []string{"--recent-half-life", "36500d"}, true},
		{"hours are read as hours", nil, []string{"--recent-half-life", "876000h"}, true},
		{"the environment sets the half-life", []string{"EXOCORTEX_RECENT_HALF_LIFE=5200w"}, nil, true},
		{"the flag wins over the environment", []string{"EXOCORTEX_RECENT_HALF_LIFE=5200w"}, []string{"--recent-half-life", "2w"}, false},
		{"a tiny weight gives recency no say", nil, []string{"--recent-half-life", "7d", "--recent-weight", "0.01"}, true},
		{"the environment sets the weight", []string{"EXOCORTEX_RECENT_WEIGHT=0.01"}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, q := range []struct{ query, old, new string }{
				{"Atlas budget", "Old plan", "New plan"},
				{"бюджет Атласа", "Старый план", "Новый план"},
			} {
				args := append([]string{"search", "--data", data, "--json", "--mode", "lexical", "--recent"}, c.args...)
				out, errOut, err := exoEnv(t, c.env, append(args, q.query)...)
				if err != nil {
					t.Fatalf("search %q: %v\n%s", q.query, err, errOut)
				}
				var res scopedSearch
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("search --json: %v\n%s", err, out)
				}
				want, other := q.new, q.old
				if c.old {
					want, other = q.old, q.new
				}
				if titles := titlesOf(res.Results); len(titles) < 2 || titles[0] != want || titles[1] != other {
					t.Errorf("%q: order %v, want %s before %s", q.query, titles, want, other)
				}
			}
		})
	}
}

func titlesOf(hits []hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Title)
	}
	return out
}

// TestBadRecencySettingsAreRefusedNamingTheSetting: a bad half-life or
// weight, as a flag or in the environment, stops the command before any
// work with a message naming the setting and what to write.
func TestBadRecencySettingsAreRefusedNamingTheSetting(t *testing.T) {
	data := t.TempDir()
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"a negative span", nil, []string{"--recent-half-life", "-3d"},
			`invalid value "-3d" for flag --recent-half-life: want a positive span such as 90d, 2w or 720h`},
		{"a word", nil, []string{"--recent-half-life", "abc"}, `invalid value "abc" for flag --recent-half-life: want a positive span`},
		{"zero days", nil, []string{"--recent-half-life", "0d"}, `--recent-half-life: want a positive span`},
		{"months written as minutes", nil, []string{"--recent-half-life", "3m"}, `--recent-half-life: 3m0s is under an hour`},
		{"over a century", nil, []string{"--recent-half-life", "40000d"}, `--recent-half-life: over 100 years`},
		{"a zero weight", nil, []string{"--recent-weight", "0"}, `invalid value "0" for flag --recent-weight: want a number over 0 and at most 10`},
		{"a weight in words", nil, []string{"--recent-weight", "much"}, `--recent-weight: want a number over 0`},
		{"a word in the environment", []string{"EXOCORTEX_RECENT_HALF_LIFE=soon"}, nil,
			`EXOCORTEX_RECENT_HALF_LIFE="soon": want a positive span such as 90d, 2w or 720h`},
		{"a negative weight in the environment", []string{"EXOCORTEX_RECENT_WEIGHT=-1"}, nil, `EXOCORTEX_RECENT_WEIGHT="-1": want a number over 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, err := exoEnv(t, c.env, append([]string{"search", "--data", data, "--recent", "budget"}, c.args...)...)
			if err == nil || !strings.Contains(errOut, c.want) {
				t.Errorf("search: %v\n%s\nwant %q", err, errOut, c.want)
			}
		})
	}
}

// TestARunningSystemsRecencyHoldsAndTheClientSaysSo: with 'up' running
// (half-life 30 days) a client's own recency settings do not apply to the
// queries it answers; search and ask say so, naming both, on stderr and in
// --json reasons; the running system's own values, or none given, need no
// note.
func TestARunningSystemsRecencyHoldsAndTheClientSaysSo(t *testing.T) {
	data, vault := t.TempDir(), t.TempDir()
	write(t, filepath.Join(vault, "birds.md"), "# Birds\n\nCrows use tools to get food.\n")
	mustExo(t, "ingest", vault, "--data", data, "--no-models", "--quiet")
	startUp(t, data, []string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}, "--no-models", "--recent-half-life", "30d")
	mustExo(t, "search", "crows", "--data", data, "--json") // up has answered: its settings are recorded
	const running = "ranks newer notes first with its own recency settings (half-life 30d, weight 1), not your "
	cases := []struct {
		name string
		env  []string
		args []string
		want string // "" when no recency note is wanted
	}{
		{"search with a half-life of its own names both", nil, []string{"search", "--recent", "crows", "--recent-half-life", "7d"}, running + "--recent-half-life 7d"},
		{"a weight from the environment is named by its variable", []string{"EXOCORTEX_RECENT_WEIGHT=2"}, []string{"search", "вороны"}, running + "EXOCORTEX_RECENT_WEIGHT=2"},
		{"both given are named together", nil, []string{"search", "crows", "--recent-half-life", "7d", "--recent-weight", "3"},
			running + "--recent-half-life 7d and --recent-weight 3"},
		{"ask says so too", nil, []string{"ask", "what do crows use?", "--recent-half-life", "2w"}, running + "--recent-half-life 14d"},
		{"the running system's own half-life needs no note", nil, []string{"search", "crows", "--recent-half-life", "720h"}, ""},
		{"no setting given needs no note", nil, []string{"search", "--recent", "crows"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := append([]string{"EXOCORTEX_LLM_BASE_URL=", "EXOCORTEX_LLM_CONFIG="}, c.env...)
			out, errOut, err := exoEnv(t, env, append(c.args, "--data", data, "--json")...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", c.args, err, errOut)
			}
			var res struct {
				Reasons []string `json:"reasons"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("--json: %v\n%s", err, out)
			}
			reasons := strings.Join(res.Reasons, "\n")
			if c.want == "" {
				if strings.Contains(errOut, "recency settings") || strings.Contains(reasons, "recency settings") {
					t.Errorf("an unwanted recency note:\n%s\n%q", errOut, res.Reasons)
				}
				return
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("stderr does not say %q:\n%s", c.want, errOut)
			}
			if !strings.Contains(reasons, "running_system_settings: ") || !strings.Contains(reasons, c.want) {
				t.Errorf("--json reasons do not say %q: %q", c.want, res.Reasons)
			}
		})
	}
}
