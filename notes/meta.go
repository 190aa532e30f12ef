package notes

import (
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/schemas"
)

// Front matter properties that date a note: when it was last changed, when
// it was written, and "date" (either) between them.
var (
	updatedKeys = []string{"updated", "modified", "lastmod", "last_modified", "date"}
	createdKeys = []string{"created", "date"}
)

// timeLayouts are the forms a front matter date is read in (YAML gives
// dates as their text).
var timeLayouts = []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05",
	"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02", "2006/01/02", "02.01.2006", "20060102150405"}

// minNoteTime: an earlier date is a typo or a counter, not a note's time.
var minNoteTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseNoteTime reads a note's date as front matter or SiYuan write it
// (RFC 3339, "2006-01-02", "02.01.2006", SiYuan's 20060102150405, ...).
// A date without a zone is UTC.
func ParseNoteTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil && t.After(minNoteTime) {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// metaTime is the first of keys that meta dates.
func metaTime(meta map[string]string, keys []string) time.Time {
	for _, k := range keys {
		if t, ok := ParseNoteTime(meta[k]); ok {
			return t
		}
	}
	return time.Time{}
}

// markdownMeta sets a Markdown note's tags (front matter and #tags in its
// text), its own time (front matter, else mtime) and its notebook's name
// (the root folder's base name).
func markdownMeta(doc *schemas.DocChanged, meta map[string]string, mtime time.Time) {
	tags := TextTags(doc.Blocks)
	for _, key := range []string{"tags", "tag"} {
		tags = append(tags, strings.Split(meta[key], ",")...)
	}
	doc.Tags = schemas.NormalizeTags(tags)
	doc.Updated = metaTime(meta, updatedKeys)
	doc.Created = metaTime(meta, createdKeys)
	if doc.Updated.IsZero() {
		doc.Updated = mtime.UTC()
	}
	if doc.Notebook != "" {
		doc.NotebookName = filepath.Base(doc.Notebook)
	}
}

// TextTags finds the #tags in blocks' text: '#' at the start of a word,
// then letters, digits, '_', '-' or '/' (nested tags), at least one of them
// not a digit ("#42" is an issue number). Code, math and HTML blocks,
// `inline code`, URL fragments (the '#' inside a word) and headings' own
// markers are not tags. SiYuan's "#tag#" form gives "tag". Tags are as
// written; NormalizeTags tidies them.
func TextTags(blocks []schemas.Block) []string {
	var tags []string
	for _, b := range blocks {
		switch b.Type {
		case schemas.BlockCode, schemas.BlockMath, schemas.BlockHTML:
			continue
		}
		tags = appendTextTags(tags, b.Text)
	}
	return tags
}

// appendTextTags appends the #tags of one text (see TextTags).
func appendTextTags(tags []string, text string) []string {
	inCode := false
	prev := ' '
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '`':
			inCode = !inCode
		case r == '#' && !inCode && tagBoundary(prev):
			if n := tagLen(text[i+1:]); n > 0 {
				tags = append(tags, text[i+1:i+1+n])
				i += 1 + n
				prev = 'x'
				continue
			}
		}
		prev = r
		i += size
	}
	return tags
}

// tagBoundary: a '#' after r starts a tag (start of text, a space or
// opening punctuation; not inside a word or a URL).
func tagBoundary(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("([{\"'«,;", r)
}

// tagLen is the length in bytes of the tag at the start of s, 0 when s
// does not start one.
func tagLen(s string) int {
	n := 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' && r != '/' {
			break
		}
		n += size
	}
	s = strings.TrimRight(s[:n], "/-")
	if !strings.ContainsFunc(s, unicode.IsLetter) {
		return 0
	}
	return len(s)
}
