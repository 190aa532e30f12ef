package store

import (
	"strings"
	"testing"
)

func TestSectionAtFollowsTheHeadingsBeforeABlock(t *testing.T) {
	cases := []struct {
		name   string
		path   []string
		before string
		want   string
	}{
		{"no heading keeps the chunk's path", []string{"Birds"}, "Ravens use tools.\n\n", "Birds"},
		{"a subheading is added", []string{"Birds"}, "# Birds\n\nRavens.\n\n## Songbirds\n\n", "Birds > Songbirds"},
		{"a heading of the same level replaces", []string{"Birds", "Songbirds"}, "## Owls\n\n", "Birds > Owls"},
		{"a top heading starts over", []string{"Birds", "Songbirds"}, "# Cats\n\n", "Cats"},
		{"closing hashes are dropped", nil, "# Cats #\n", "Cats"},
		{"a hash inside a line is not a heading", []string{"A"}, "see #tag here\n", "A"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(sectionAt(c.path, c.before), " > "); got != c.want {
				t.Errorf("sectionAt(%q, %q) = %q, want %q", c.path, c.before, got, c.want)
			}
		})
	}
}
