package scope

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// NoteListScope is the note of a question of scope operators alone.
const NoteListScope = "no words besides the scope: listing the scope's notes, best and newest first"

// Read reads the scope a person typed into text, as of now in now's
// location: inline operators and date phrases (Parse). Both what text says
// and given (a scope got apart from the text: CLI flags, a request's scope
// field, an event's options.scope; nil: none) apply: the result is their
// intersection (Intersect); given is not changed. Every door reads a
// question through it (client.ParseQuestion), and the retrieve stage reads
// a kb.query.submitted.v2 question no door read.
//
// question is the words left to search: "" when text is operators alone,
// which asks for the scope's notes; s is nil when nothing narrows; notes
// tell the person what was read and kept ("scope: tags recipe"). An error
// names what to fix (an unknown operator names the known ones).
func Read(text string, given *schemas.Scope, now time.Time) (question string, s *schemas.Scope, notes []string, err error) {
	clean, parsed, notes, err := Parse(text, now, now.Location())
	if err != nil {
		return "", nil, notes, err
	}
	s, err = Intersect(given, &parsed)
	if err != nil {
		return "", nil, notes, err
	}
	if s.IsZero() {
		return clean, nil, notes, nil
	}
	notes = append(notes, "scope: "+Describe(s))
	if clean == "" {
		notes = append(notes, NoteListScope)
	}
	return clean, s, notes, nil
}

// Describe says what a scope keeps, for notes: "notebooks Work; tags
// recipe; not tags old; since 2026-11-01T00:00:00+03:00; newer first".
func Describe(s *schemas.Scope) string {
	if s.IsZero() {
		return "every note"
	}
	var parts []string
	for _, side := range []struct {
		prefix string
		set    schemas.ScopeSet
	}{{"", s.Include}, {"not ", s.Exclude}} {
		for _, l := range []struct {
			name   string
			values []string
		}{{"notebooks", side.set.Notebooks}, {"paths", side.set.Paths}, {"docs", side.set.Docs}, {"tags", side.set.Tags}, {"langs", side.set.Langs}} {
			if len(l.values) > 0 {
				parts = append(parts, side.prefix+l.name+" "+strings.Join(l.values, ", "))
			}
		}
	}
	if s.Since != "" {
		parts = append(parts, "since "+s.Since)
	}
	if s.Until != "" {
		parts = append(parts, "until "+s.Until+" (exclusive)")
	}
	if s.Recent {
		parts = append(parts, "newer first")
	}
	return strings.Join(parts, "; ")
}

// Intersect is the scope that keeps what both a and b keep (either may be
// nil): a list of included notebooks, documents or languages keeps the
// values both name (a note has one of each); paths keep the longer of two
// prefixes that nest; tags keep the tags both name (a note tagged with one
// of a's and another of b's is not kept: a scope's tags are alternatives);
// exclusions add up; the range is the later since and the earlier until;
// recent holds when either asks for it. An intersection that keeps nothing
// is an error saying which values clash. The result is nil when nothing
// narrows.
func Intersect(a, b *schemas.Scope) (*schemas.Scope, error) {
	if a.IsZero() && b.IsZero() {
		return nil, nil
	}
	if a.IsZero() || b.IsZero() {
		src := a
		if a.IsZero() {
			src = b
		}
		out := cloneScope(src)
		return out, out.Validate()
	}
	out := &schemas.Scope{Recent: a.Recent || b.Recent}
	var errs []error
	inc := func(name string, x, y []string, keep func(x, y []string) []string) []string {
		switch {
		case len(x) == 0:
			return slices.Clone(y)
		case len(y) == 0:
			return slices.Clone(x)
		}
		k := keep(x, y)
		if len(k) == 0 {
			errs = append(errs, fmt.Errorf("%s: the scope given keeps %s and the question keeps %s: no note is in both (a scope's %s are alternatives: name them in one place)",
				name, strings.Join(x, ", "), strings.Join(y, ", "), name))
		}
		return k
	}
	ai, bi := a.Include, b.Include
	out.Include = schemas.ScopeSet{
		Notebooks: inc("notebooks", ai.Notebooks, bi.Notebooks, common(strings.EqualFold)),
		Paths:     inc("paths", ai.Paths, bi.Paths, nested),
		Docs:      inc("docs", ai.Docs, bi.Docs, common(func(x, y string) bool { return x == y })),
		Tags:      inc("tags", ai.Tags, bi.Tags, common(sameTag)),
		Langs:     inc("langs", ai.Langs, bi.Langs, common(strings.EqualFold)),
	}
	ae, be := a.Exclude, b.Exclude
	out.Exclude = schemas.ScopeSet{
		Notebooks: union(ae.Notebooks, be.Notebooks), Paths: union(ae.Paths, be.Paths), Docs: union(ae.Docs, be.Docs),
		Tags: union(ae.Tags, be.Tags), Langs: union(ae.Langs, be.Langs),
	}
	since, until, err := narrowRange(a, b)
	errs = append(errs, err)
	out.Since, out.Until = since, until
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, out.Validate()
}

// narrowRange is the later since and the earlier until of a and b, as
// they were written.
func narrowRange(a, b *schemas.Scope) (since, until string, err error) {
	as, au, err1 := a.Range()
	bs, bu, err2 := b.Range()
	if err := errors.Join(err1, err2); err != nil {
		return "", "", err
	}
	since, until = a.Since, a.Until
	if !bs.IsZero() && (as.IsZero() || bs.After(as)) {
		since = b.Since
	}
	if !bu.IsZero() && (au.IsZero() || bu.Before(au)) {
		until = b.Until
	}
	return since, until, nil
}

func sameTag(x, y string) bool {
	return strings.EqualFold(strings.TrimPrefix(x, "#"), strings.TrimPrefix(y, "#"))
}

// common keeps the values of x that y holds too (as eq compares them).
func common(eq func(x, y string) bool) func(x, y []string) []string {
	return func(x, y []string) []string {
		var out []string
		for _, v := range x {
			if slices.ContainsFunc(y, func(w string) bool { return eq(v, w) }) {
				out = append(out, v)
			}
		}
		return out
	}
}

// nested keeps, of two lists of path prefixes, each prefix that lies
// within one of the other list (compared without case, as the store
// matches them): [projects] and [projects/atlas] keep projects/atlas.
func nested(x, y []string) []string {
	within := func(p string, of []string) bool {
		return slices.ContainsFunc(of, func(q string) bool { return strings.HasPrefix(strings.ToLower(p), strings.ToLower(q)) })
	}
	var out []string
	for _, p := range x {
		if within(p, y) {
			out = append(out, p)
		}
	}
	for _, p := range y {
		if within(p, x) && !slices.ContainsFunc(out, func(q string) bool { return strings.EqualFold(p, q) }) {
			out = append(out, p)
		}
	}
	return out
}

func union(x, y []string) []string {
	out := slices.Clone(x)
	for _, v := range y {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func cloneScope(s *schemas.Scope) *schemas.Scope {
	c := *s
	for _, set := range []*schemas.ScopeSet{&c.Include, &c.Exclude} {
		set.Notebooks, set.Paths, set.Docs = slices.Clone(set.Notebooks), slices.Clone(set.Paths), slices.Clone(set.Docs)
		set.Tags, set.Langs = slices.Clone(set.Tags), slices.Clone(set.Langs)
	}
	return &c
}

// ScopeValues are a scope as a door takes it apart (CLI flags, MCP tool
