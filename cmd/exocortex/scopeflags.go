package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/schemas"
)

// listFlag is a flag that may be given more than once.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ", ") }

func (l *listFlag) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("an empty value")
	}
	*l = append(*l, strings.TrimSpace(v))
	return nil
}

// scopeFlags are the scope flags of search, ask and research: they make
// QueryOptions.Scope, which the question's own operators (tag:recipe,
// в:Работа, after:2024-03-01) narrow further.
type scopeFlags struct {
	in, notIn, paths, notPaths, docs, tags, notTags listFlag
	since, until                                    string
	recent                                          bool
}

func (s *scopeFlags) register(fs *flag.FlagSet) {
	fs.Var(&s.in, "in", "only notes in this notebook (SiYuan notebook name or id, or ingested folder); repeat for any of several")
	fs.Var(&s.notIn, "not-in", "leave out notes in this notebook; repeatable")
	fs.Var(&s.paths, "path", "only notes under this path prefix (projects/atlas); repeat for any of several")
	fs.Var(&s.notPaths, "not-path", "leave out notes under this path prefix; repeatable")
	fs.Var(&s.docs, "doc", "only this document (its id); repeatable")
	fs.Var(&s.tags, "tag", "only notes with this tag (front matter, #tag, SiYuan tag); repeat for any of several")
	fs.Var(&s.notTags, "not-tag", "leave out notes with this tag; repeatable")
	fs.StringVar(&s.since, "since", "", "only notes from this time on: 7d, 2w, 3m, 1y, 24h back from now, a date (2024-03-01, 01.03.2024), a month (2024-03), a year, or a period (\"last week\", \"в прошлом месяце\")")
	fs.StringVar(&s.until, "until", "", "only notes up to this time, the day or period itself included (the same forms as --since)")
	fs.BoolVar(&s.recent, "recent", false, "prefer newer notes (recency fused into the ranking)")
}

// scope is the scope the flags give (nil: none), with dates read as of
// now in its location.
func (s *scopeFlags) scope(now time.Time) (*schemas.Scope, error) {
	sc, err := client.ScopeValues{In: s.in, NotIn: s.notIn, Paths: s.paths, NotPaths: s.notPaths, Docs: s.docs,
		Tags: s.tags, NotTags: s.notTags, Since: s.since, Until: s.until, Recent: s.recent}.Scope(now)
	if err != nil {
		return nil, fmt.Errorf("the scope flags (--since, --until, --in, --tag...): %w", err)
	}
	return sc, nil
}

// isZero says whether no scope flag was given.
func (s *scopeFlags) isZero() bool {
	return len(s.in)+len(s.notIn)+len(s.paths)+len(s.notPaths)+len(s.docs)+len(s.tags)+len(s.notTags) == 0 &&
		s.since == "" && s.until == "" && !s.recent
}

// scopeQuery gives q the flags' scope and its question's operators
// (client.ScopeQuery) and prints the notes; they are returned for --json.
// needWords refuses a question of a scope alone (ask: there is nothing to
// answer; search lists the scope's notes).
func (s *scopeFlags) scopeQuery(cmd string, q *schemas.QuerySubmitted, needWords bool) ([]string, error) {
	now := time.Now()
	given, err := s.scope(now)
	if err != nil {
		return nil, &usageError{cmd: cmd, msg: err.Error()}
	}
	q.Options.Scope = given
	notes, err := client.ScopeQuery(q, now)
	if err != nil {
		return nil, &usageError{cmd: cmd, msg: err.Error()}
	}
	if needWords && strings.TrimSpace(q.Question) == "" {
		return nil, &usageError{cmd: cmd, msg: fmt.Sprintf("give a question besides the scope (%s): exocortex %s \"what did I decide?\" tag:work; "+
			"'exocortex search' lists a scope's notes", client.Describe(q.Options.Scope), cmd)}
	}
	for _, n := range notes {
		printNote(n)
	}
	return notes, nil
}
