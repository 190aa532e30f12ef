package schemas

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundTitle(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cut      bool
	}{
		{"a short English title is kept", "Garden notes", false},
		{"a short Russian title is kept", "Заметки о саде", false},
		{"a title of exactly the limit is kept", strings.Repeat("я", MaxTitleRunes), false},
		{"an English title one over the limit is cut", strings.Repeat("a", MaxTitleRunes+1), true},
		{"a Russian megabyte title is cut on a character boundary", strings.Repeat("Заголовок ", 100000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := BoundTitle(tc.in)
			if !utf8.ValidString(got) {
				t.Fatalf("cut inside a character")
			}
			if !tc.cut {
				if got != tc.in {
					t.Errorf("changed a title within the limit")
				}
				return
			}
			if n := utf8.RuneCountInString(got); n != MaxTitleRunes || !strings.HasSuffix(got, "…") ||
				!strings.HasPrefix(tc.in, strings.TrimSuffix(got, "…")) {
				t.Errorf("cut to %d characters (want %d ending in …, a prefix of the title)", n, MaxTitleRunes)
			}
		})
	}
}
