package vectors

import "strings"

// PointMeta are a chunk's document fields that scopes filter on, kept as
// payload by a store that holds payloads (Qdrant: see the Meta* keys). The
// zero value is "unknown": nothing is written for it.
type PointMeta struct {
	Notebook string // SiYuan notebook or ingested folder root
	// NotebookName is the notebook's readable name, kept beside Notebook
	// (the payload's notebook is then a list of both).
	NotebookName string
	Path         string // the document's path within its notebook, "/"-separated, e.g. "projects/atlas/budget.md"
	// WholePath is the document's whole path (a Markdown file's absolute
	// path, SiYuan's "Notebook/Title"), without a leading slash: its
	// folders go into dirs too, so that a path scope means the same as in
	// the store (schemas.PathForms).
	WholePath string
	Tags      []string // front-matter, #tags and SiYuan tags
	Time      int64    // the note's own time, unix seconds; 0 = unknown
}

// Payload keys of the scope fields (Qdrant) and the fields a MetaCond
// names. MetaDirs holds every folder prefix of the path ("projects",
// "projects/atlas"), so a path-prefix scope is a keyword match on it.
const (
	MetaDoc      = payloadDocID
	MetaLang     = payloadLang
	MetaNotebook = "notebook"
	MetaDirs     = "dirs"
	MetaTags     = "tags"
	MetaTime     = "time"
)

// MetaFilter is a scope as conditions on points' metadata: every Must
// condition holds, no MustNot condition holds, and, when AnyOf is not
// empty, at least one of its filters holds (Qdrant's must, must_not and
// should, nested). The zero value matches every point. A store without
// payloads (embedded) refuses it with ErrInvalid: resolve the scope to
// chunk ids (Filter.IDs) there.
type MetaFilter struct {
	Must, MustNot []MetaCond
	AnyOf         []MetaFilter
}

// MetaCond is one condition on a field: a keyword field (or any element of
// a list field) equal to any of Any, or an integer field within
// [Min, Max] (nil: unbounded). Exactly one of Any and a range.
type MetaCond struct {
	Field    string
	Any      []string
	Min, Max *int64
}

// Empty reports whether f has no condition.
func (f *MetaFilter) Empty() bool {
	return f == nil || (len(f.Must) == 0 && len(f.MustNot) == 0 && len(f.AnyOf) == 0)
}

// dirsOf returns every folder prefix of a "/"-separated path and the
// path itself (a scope may name one note's path).
func dirsOf(path string) []string {
	var out []string
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && i > 0 {
			out = append(out, path[:i])
		}
	}
	if path = strings.TrimSuffix(path, "/"); path != "" {
		out = append(out, path)
	}
	return out
}
