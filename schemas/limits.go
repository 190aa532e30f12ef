package schemas

import "unicode/utf8"

// MaxTitleRunes is the longest title, and title-path entry, an event
// carries: 1,000 characters. A longer one (a note whose first heading is a
// whole paragraph, or a 1 MB title) is cut there and ends with "…"; the
// document's blocks keep their full text, so nothing of the note is lost
// from the index, only from the title every chunk repeats.
const MaxTitleRunes = 1000

// BoundTitle cuts s to MaxTitleRunes characters (the last of them "…").
func BoundTitle(s string) string {
	if utf8.RuneCountInString(s) <= MaxTitleRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxTitleRunes-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// BoundTitles cuts the document's title and every entry of its title path
// to MaxTitleRunes characters, in place.
func (e *DocChanged) BoundTitles() {
	e.Title = BoundTitle(e.Title)
	for i, t := range e.TitlePath {
		e.TitlePath[i] = BoundTitle(t)
	}
}
