package schemas

import "strings"

// PathForms are what a path scope ("path:projects/atlas") matches, as
// whole folder names: lower-cased, without leading or trailing slashes,
// itself and the note of that name ("projects/atlas", "projects/atlas.md",
// "projects/atlas.markdown"). A note's path is in the scope when it equals
// a form or lies below one ("projects/atlas/budget.md"); a partial folder
// name never matches ("proj" is not "projects"). The store and the vector
// stores' payload filters both follow it. Nil for an empty path.
func PathForms(path string) []string {
	p := strings.Trim(strings.ToLower(strings.TrimSpace(path)), "/")
	if p == "" {
		return nil
	}
	return []string{p, p + ".md", p + ".markdown"}
}

// UnderPath tells whether a note's path (lower-cased, "/"-separated; a
// leading slash is ignored) is one of forms (PathForms) or below one.
func UnderPath(notePath string, forms []string) bool {
	notePath = strings.TrimPrefix(notePath, "/")
	for _, f := range forms {
		if notePath == f || (len(notePath) > len(f) && notePath[len(f)] == '/' && strings.HasPrefix(notePath, f)) {
			return true
		}
	}
	return false
}
