package schemas

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/exocortex/exocortex/lang"
)

// Scope narrows a query to part of the notes: what to include, what to
// exclude, a range on the note's own time, and a preference for newer notes.
// The zero Scope (and a nil *Scope) means every note, which is what a query
// from a client that predates scopes asks for.
//
// It travels in QueryOptions.Scope ("options.scope" on the wire), an
// additive field of kb.query.submitted.v1 (and of the retrieved and reranked
// events, which carry the same Query). A worker that predates it rejects a
// scoped query as malformed (strict decoding: unknown field "scope"), so a
// scope is never silently ignored.
type Scope struct {
	// Include keeps a note only when it matches every non-empty list of it
	// (within one list, any value matches): tags [a b] means tagged a or b.
	Include ScopeSet `json:"include,omitzero"`
	// Exclude drops a note that matches any value of any of its lists.
	Exclude ScopeSet `json:"exclude,omitzero"`
	// Since and Until bound the note's own time (SiYuan updated/created,
	// front-matter date/updated, else the file's modification time): Since
	// <= time < Until. Each is an RFC 3339 time ("2024-03-01T00:00:00+03:00")
	// or date ("2024-03-01"); a bare date is a whole day in UTC, so "until":
	// "2024-03-31" keeps March 31. The doors send full times in the user's
	// zone (scope.Parse, scope.ParseSince, scope.ParseUntil make them).
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Recent prefers newer notes: recency is fused into the ranking as one
	// more signal (its half-life comes from the configuration).
	Recent bool `json:"recent,omitempty"`
	// ExpandOutside lets the graph expansion add neighbours from outside
	// the scope (a linked note in another notebook); by default the
	// contexts stay inside it.
	ExpandOutside bool `json:"expand_outside,omitempty"`
}

// ScopeSet is one side of a Scope. Values are matched as given, except that
// tags compare without a leading '#' and without case, and paths are
// prefixes of the note's path inside its notebook ("projects/atlas" holds
// "projects/atlas/budget.md").
type ScopeSet struct {
	// Notebooks are SiYuan notebook ids or names, or ingested folder roots.
	Notebooks []string `json:"notebooks,omitempty"`
	// Paths are path prefixes, with '/' between folders.
	Paths []string `json:"paths,omitempty"`
	// Docs are document ids.
	Docs []string `json:"docs,omitempty"`
	// Tags are front-matter tags, #tags in the text and SiYuan tags.
	Tags []string `json:"tags,omitempty"`
	// Langs are chunk languages ("ru", "en").
	Langs []string `json:"langs,omitempty"`
}

// MaxScopeValues bounds the values of one list of a ScopeSet.
const MaxScopeValues = 100

// IsZero reports whether the set names nothing.
func (s ScopeSet) IsZero() bool {
	return len(s.Notebooks)+len(s.Paths)+len(s.Docs)+len(s.Tags)+len(s.Langs) == 0
}

// IsZero reports whether the scope narrows nothing and prefers nothing.
func (s *Scope) IsZero() bool {
	return s == nil || (s.Include.IsZero() && s.Exclude.IsZero() &&
		s.Since == "" && s.Until == "" && !s.Recent)
}

// Range returns the time range of the scope as instants: since is zero when
// there is no lower bound, until is zero when there is no upper bound.
func (s *Scope) Range() (since, until time.Time, err error) {
	if s == nil {
		return time.Time{}, time.Time{}, nil
	}
	var errs []error
	if s.Since != "" {
		since, err = parseScopeTime(s.Since, false)
		errs = append(errs, wrapField("since", err))
	}
	if s.Until != "" {
		until, err = parseScopeTime(s.Until, true)
		errs = append(errs, wrapField("until", err))
	}
	return since, until, errors.Join(errs...)
}

// Validate joins every problem of the scope: bad or reversed dates, an
// unknown language, empty or overlong values, a value both included and
// excluded.
func (s *Scope) Validate() error {
	if s == nil {
		return nil
	}
	var errs []error
	since, until, err := s.Range()
	errs = append(errs, err)
	if err == nil && !since.IsZero() && !until.IsZero() && !since.Before(until) {
		errs = append(errs, fmt.Errorf("since %s is not before until %s: swap them, or widen the range", s.Since, s.Until))
	}
	errs = append(errs, s.Include.validate("include"), s.Exclude.validate("exclude"))
	errs = append(errs, s.contradictions()...)
	return errors.Join(errs...)
}

func (s ScopeSet) lists() []struct {
	name   string
	values []string
} {
	return []struct {
		name   string
		values []string
	}{{"notebooks", s.Notebooks}, {"paths", s.Paths}, {"docs", s.Docs}, {"tags", s.Tags}, {"langs", s.Langs}}
}

func (s ScopeSet) validate(side string) error {
	var errs []error
	for _, l := range s.lists() {
		if len(l.values) > MaxScopeValues {
			errs = append(errs, fmt.Errorf("%s.%s has %d values: at most %d", side, l.name, len(l.values), MaxScopeValues))
		}
		for i, v := range l.values {
			if strings.TrimSpace(v) == "" {
				errs = append(errs, fmt.Errorf("%s.%s[%d] is empty", side, l.name, i))
			} else if len([]rune(v)) > MaxTitleRunes {
				errs = append(errs, fmt.Errorf("%s.%s[%d] is longer than %d characters", side, l.name, i, MaxTitleRunes))
			}
		}
	}
	for _, l := range s.Langs {
		if l != "" && l != lang.LangRussian && l != lang.LangEnglish {
			errs = append(errs, fmt.Errorf("%s.langs: unknown language %q: want %q or %q", side, l, lang.LangRussian, lang.LangEnglish))
		}
	}
	return errors.Join(errs...)
}

// contradictions names values that are both included and excluded: the
// scope would keep nothing of them, which is never what a person meant.
func (s *Scope) contradictions() []error {
	var errs []error
	in, ex := s.Include.lists(), s.Exclude.lists()
	for i := range in {
		for _, v := range in[i].values {
			for _, w := range ex[i].values {
				if sameValue(in[i].name, v, w) {
					errs = append(errs, fmt.Errorf("%s %q is both included and excluded: keep one", in[i].name, v))
				}
			}
		}
	}
	return errs
}

// sameValue compares two values of one list: tags without '#' and case,
// languages without case, the rest exactly.
func sameValue(list, a, b string) bool {
	switch list {
	case "tags":
		return strings.EqualFold(strings.TrimPrefix(a, "#"), strings.TrimPrefix(b, "#"))
	case "langs":
		return strings.EqualFold(a, b)
	}
	return a == b
}

// parseScopeTime reads an RFC 3339 time or a date; a date as an upper
// bound ends with its day (the next midnight, UTC).
func parseScopeTime(v string, upper bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2024-03-01T00:00:00+03:00) nor a date (2024-03-01)", v)
	}
	if upper {
		d = d.AddDate(0, 0, 1)
	}
	return d, nil
}

func wrapField(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}
