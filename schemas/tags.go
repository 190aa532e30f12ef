package schemas

import (
	"slices"
	"strings"
)

// NormalizeTag is a tag as the index keeps and a scope names it: trimmed,
// without leading '#' (and a SiYuan tag's closing '#'), lower-case, nested
// parts ("a/b") kept with empty parts dropped. "" when nothing is left.
func NormalizeTag(t string) string {
	t = strings.TrimSpace(t)
	t = strings.TrimLeft(t, "#")
	t = strings.TrimRight(t, "#")
	t = strings.ToLower(strings.TrimSpace(t))
	if !strings.Contains(t, "/") {
		return t
	}
	parts := strings.Split(t, "/")
	parts = slices.DeleteFunc(parts, func(p string) bool { return strings.TrimSpace(p) == "" })
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return strings.Join(parts, "/")
}

// NormalizeTags normalises tags (NormalizeTag), drops empty ones and
// returns them sorted, each once; nil when none is left.
func NormalizeTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if n := NormalizeTag(t); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
