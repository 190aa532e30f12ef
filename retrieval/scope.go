package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// A query's scope (QueryOptions.Scope) is applied while each retriever
// searches, never to its results: a narrow scope still gets K results when
// K of its chunks match. The retriever resolves the scope once per query,
// to the store's chunk set (ScopeIndex.AllowedChunks, cached by the store
// per scope until the index changes), and hands it to every search the
// query makes through a scoped copy of its Index and vector store (see
// withScope): the lexical search of the question and of its translations
// (store.SearchOptions.Chunks: the memory engine's allow-filter, FTS5's
// ranked rows read until K are in the set), each vector search of the
// widening ladder (vectors.Filter.IDs: one IDSet per chunk set, kept with
// it, so the embedded store resolves it once), Qdrant (vectors.Filter.Meta:
// payload conditions, ScopeMeta) and the graph expansion (neighbours
// outside the scope are skipped unless Scope.ExpandOutside).

// ReasonScopeEmpty: the scope holds no note, so nothing was searched.
const ReasonScopeEmpty = "scope_empty"

// ReasonNoRecency: the query prefers recent notes but the index knows no
// note times (a retrieve worker without the SQLite file).
const ReasonNoRecency = "recency_unavailable"

// ScopeIndex is an Index that resolves scopes to chunks and dates
// documents (*store.Store).
type ScopeIndex interface {
	AllowedChunks(ctx context.Context, f store.DocFilter) (*store.ChunkSet, error)
	DocTimes(ctx context.Context, docIDs []string) (map[string]time.Time, error)
}

// QueryScope is the scope a query is searched within: Options.Scope with
// the older Options.Lang as one more included language. Nil when the
// query names no scope, or only Options.Lang (which the engines then
// apply as before: that language and chunks of none).
func QueryScope(o schemas.QueryOptions) *schemas.Scope {
	if o.Scope.IsZero() {
		return nil
	}
	s := *o.Scope
	if o.Lang != "" && !slices.Contains(s.Include.Langs, o.Lang) {
		s.Include.Langs = append(slices.Clip(s.Include.Langs), o.Lang)
	}
	return &s
}

// DocFilter translates a scope into the store's terms. Until stays
// exclusive: a bare date as until is the end of that day (Scope.Range).
func DocFilter(s *schemas.Scope) (store.DocFilter, error) {
	if s == nil {
		return store.DocFilter{}, nil
	}
	since, until, err := s.Range()
	if err != nil {
		return store.DocFilter{}, fmt.Errorf("scope: %w", err)
	}
	in, ex := s.Include, s.Exclude
	f := store.DocFilter{Notebooks: in.Notebooks, NotNotebooks: ex.Notebooks, PathPrefixes: in.Paths,
		NotPathPrefixes: ex.Paths, DocIDs: in.Docs, NotDocIDs: ex.Docs, Tags: in.Tags, NotTags: ex.Tags,
		Langs: in.Langs, Since: since, Until: until}
	// An excluded language is the included rest.
	if len(ex.Langs) > 0 {
		base := in.Langs
		if base == nil {
			base = []string{lang.LangRussian, lang.LangEnglish, ""}
		}
		f.Langs = nil
		for _, l := range base {
			if !slices.Contains(ex.Langs, l) {
				f.Langs = append(f.Langs, l)
			}
		}
		if f.Langs == nil {
			f.Langs = []string{"-"} // no chunk has it: nothing
		}
	}
	return f, nil
}

// ScopeMeta translates a scope into payload conditions for a vector store
// that keeps point metadata (Qdrant; see the index stage's PointMeta):
// notebooks (ids and names, lower-cased), path prefixes as folders (dirs,
// lower-cased, a path within the notebook), documents, tags (a tag holds
// its nested tags: the index writes their parents too), languages and the
// time range (unix seconds, until exclusive). Nil for a scope that narrows
// nothing.
func ScopeMeta(s *schemas.Scope) (*vectors.MetaFilter, error) {
	if s == nil {
		return nil, nil
	}
	since, until, err := s.Range()
	if err != nil {
		return nil, fmt.Errorf("scope: %w", err)
	}
	f := &vectors.MetaFilter{}
	add := func(list *[]vectors.MetaCond, field string, vals []string, norm func(string) string) {
		var any []string
		for _, v := range vals {
			if v = norm(v); v != "" || field == vectors.MetaLang {
				any = append(any, v)
			}
		}
		if len(any) > 0 {
			*list = append(*list, vectors.MetaCond{Field: field, Any: any})
		}
	}
	for _, side := range []struct {
		set  schemas.ScopeSet
		list *[]vectors.MetaCond
	}{{s.Include, &f.Must}, {s.Exclude, &f.MustNot}} {
		add(side.list, vectors.MetaNotebook, side.set.Notebooks, lowerTrim)
		add(side.list, vectors.MetaDirs, pathForms(side.set.Paths), strings.TrimSpace)
		add(side.list, vectors.MetaDoc, side.set.Docs, strings.TrimSpace)
		add(side.list, vectors.MetaTags, side.set.Tags, schemas.NormalizeTag)
		add(side.list, vectors.MetaLang, side.set.Langs, lowerTrim)
	}
	if !since.IsZero() || !until.IsZero() {
		c := vectors.MetaCond{Field: vectors.MetaTime}
		if !since.IsZero() {
			v := since.Unix()
			c.Min = &v
		}
		if !until.IsZero() {
			v := until.Unix() - 1 // exclusive
			if until.Nanosecond() > 0 {
				v++
			}
			c.Max = &v
		}
		f.Must = append(f.Must, c)
	}
	if f.Empty() {
		return nil, nil
	}
	return f, nil
}

func lowerTrim(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// pathForms are the path scopes' forms (schemas.PathForms), as the dirs
// payload holds folders: every folder of a note's path within its notebook
// and of its whole path, and the paths themselves (PointMetaOf).
func pathForms(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, schemas.PathForms(p)...)
	}
	return out
}

// PointMetaOf is the metadata the index stage writes with a chunk's point
// (Qdrant payload) for ScopeMeta to filter on: the notebook id and name
// (lower-cased, both), the path within the notebook (lower-cased; dirs
// holds its folders and itself), the tags with their parents ("work/atlas"
// also "work"), and the note's time in unix seconds.
func PointMetaOf(d store.DocScope) vectors.PointMeta {
	m := vectors.PointMeta{Path: strings.Trim(strings.ToLower(d.RelPath), "/"), WholePath: strings.Trim(strings.ToLower(d.Path), "/"),
		Notebook: lowerTrim(d.Notebook), NotebookName: lowerTrim(d.NotebookName)}
	for _, t := range d.Tags {
		for i := 0; i <= len(t); i++ {
			if (i == len(t) || t[i] == '/') && i > 0 && !slices.Contains(m.Tags, t[:i]) {
				m.Tags = append(m.Tags, t[:i])
			}
		}
	}
	if !d.Time.IsZero() {
		m.Time = d.Time.Unix()
	}
	return m
}

// queryScope is one query's scope resolved: set is nil where the index
// cannot resolve scopes (VectorIndex) or the scope narrows nothing.
type queryScope struct {
	scope *schemas.Scope
	set   *store.ChunkSet
	meta  *vectors.MetaFilter
	raw   Index // the index before any wrapper (DocTimes)
}

// withScope is the retriever a scoped query runs on: r itself without a
// scope, else a copy whose Index and Vectors search within it. empty
// reports a scope that holds no chunk (nothing to search).
func (r *Retriever) withScope(ctx context.Context, o schemas.QueryOptions) (*Retriever, *queryScope, error) {
	s := QueryScope(o)
	if s == nil || r.Index == nil {
		return r, nil, nil
	}
	qs := &queryScope{scope: s, raw: r.Index}
	f, err := DocFilter(s)
	if err != nil {
		return nil, nil, err
	}
	if si, ok := r.Index.(ScopeIndex); ok && !f.IsZero() {
		if qs.set, err = si.AllowedChunks(ctx, f); err != nil {
			return nil, nil, err
		}
	}
	if qs.meta, err = ScopeMeta(s); err != nil {
		return nil, nil, err
	}
	if f.IsZero() {
		return r, qs, nil // Recent only: nothing to filter
	}
	out := *r
	out.Index = &scopedIndex{Index: r.Index, qs: qs}
	if r.Vectors != nil {
		out.Vectors = &scopedVectors{Store: r.Vectors, qs: qs}
	}
	return &out, qs, nil
}

// empty reports whether the scope is known to hold no chunk.
func (qs *queryScope) empty() bool { return qs != nil && qs.set != nil && qs.set.Len() == 0 }

// emptyReason says that the scope matched nothing and, when it names a
// notebook or tag the index does not have, which ones it has: "in:home"
// over a folder ingested as the notebook "notes" tells the person what
// to write instead.
func emptyReason(ctx context.Context, qs *queryScope) string {
	out := fmt.Sprintf("%s: no note matches the scope %s; nothing was searched (widen or drop the scope)",
		ReasonScopeEmpty, describeScope(qs.scope))
	sl, ok := qs.raw.(ScopeLister)
	in := qs.scope.Include
	if !ok || len(in.Notebooks)+len(in.Tags) == 0 {
		return out
	}
	listing, err := sl.Scopes(ctx)
	if err != nil || listing == nil {
		return out
	}
	var known []string
	for _, n := range listing.Notebooks {
		known = append(known, n.ID, n.Name)
	}
	if missing := unknownValues(in.Notebooks, known); missing != "" {
		out += fmt.Sprintf("; the index has no notebook %s (its notebooks: %s)", missing, firstLabels(listing.Notebooks))
	}
	known = known[:0]
	for _, t := range listing.Tags {
		known = append(known, t.Tag)
	}
	if missing := unknownValues(in.Tags, known); missing != "" {
		var tags []string
		for _, t := range listing.Tags[:min(len(listing.Tags), 10)] {
			tags = append(tags, t.Tag)
		}
		out += fmt.Sprintf("; the index has no tag %s (its most used tags: %s)", missing, strings.Join(tags, ", "))
	}
	return out
}

// ScopeLister lists the index's notebooks and tags (*store.Store).
type ScopeLister interface {
	Scopes(ctx context.Context) (*schemas.ScopeListing, error)
}

// unknownValues are the values no known name matches (case aside; a tag
// matches its nested tags' parent), quoted and joined.
func unknownValues(values, known []string) string {
	var missing []string
	for _, v := range values {
		v = strings.Trim(strings.TrimSpace(v), "#")
		found := false
		for _, k := range known {
			if k != "" && (strings.EqualFold(k, v) || len(k) > len(v) && strings.EqualFold(k[:len(v)+1], v+"/")) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, fmt.Sprintf("%q", v))
		}
	}
	return strings.Join(missing, ", ")
}

// firstLabels names up to ten notebooks with their note counts.
func firstLabels(nbs []schemas.NotebookCount) string {
	var out []string
	for _, n := range nbs[:min(len(nbs), 10)] {
		out = append(out, fmt.Sprintf("%s (%d)", n.Label(), n.Count))
	}
	if len(out) == 0 {
		return "none yet"
	}
	return strings.Join(out, ", ")
}

func describeScope(s *schemas.Scope) string {
	var parts []string
	for _, side := range []struct {
		name string
		set  schemas.ScopeSet
	}{{"", s.Include}, {"not ", s.Exclude}} {
		for _, l := range []struct {
			name string
			v    []string
		}{{"in", side.set.Notebooks}, {"path", side.set.Paths}, {"doc", side.set.Docs}, {"tag", side.set.Tags}, {"lang", side.set.Langs}} {
			if len(l.v) > 0 {
				parts = append(parts, side.name+l.name+":"+strings.Join(l.v, ","))
			}
		}
	}
	if s.Since != "" {
		parts = append(parts, "since:"+s.Since)
	}
	if s.Until != "" {
		parts = append(parts, "until:"+s.Until)
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// scopedIndex searches within a query's scope.
type scopedIndex struct {
	Index
	qs *queryScope
}

// Search passes the chunk set to the store (a VectorIndex gets the payload
// filter); the set holds the languages, so Lang is left to it.
func (x *scopedIndex) Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error) {
	if vi, ok := x.Index.(*VectorIndex); ok && x.qs.set == nil {
		return vi.search(ctx, query, opts, x.qs.meta)
	}
	if x.qs.set != nil {
		opts.Chunks, opts.Lang = x.qs.set, ""
	}
	return x.Index.Search(ctx, query, opts)
}

// inScope reports whether a chunk (by id) may be shown: its document is in
// the scope's documents (its language is checked on its passage).
func (x *scopedIndex) inScope(chunkID string) bool {
	if x.qs.set == nil || x.qs.scope.ExpandOutside {
		return true
	}
	i := strings.LastIndexByte(chunkID, ':')
	return i > 0 && x.qs.set.HasDoc(chunkID[:i])
}

// ChunksOfBlocks leaves out the neighbours outside the scope.
func (x *scopedIndex) ChunksOfBlocks(ctx context.Context, blockIDs []string) (map[string]string, error) {
	m, err := x.Index.ChunksOfBlocks(ctx, blockIDs)
	return x.keepMap(m), err
}

// FirstChunksOfDocs leaves out the documents outside the scope.
func (x *scopedIndex) FirstChunksOfDocs(ctx context.Context, docIDs []string) (map[string]string, error) {
	m, err := x.Index.FirstChunksOfDocs(ctx, docIDs)
	return x.keepMap(m), err
}

func (x *scopedIndex) keepMap(m map[string]string) map[string]string {
	for k, id := range m {
		if !x.inScope(id) {
			delete(m, k)
		}
	}
	return m
}

// Passages leaves out chunks outside the scope (a neighbour of another
// language), unless the scope lets expansion out.
func (x *scopedIndex) Passages(ctx context.Context, ids []string) ([]store.Hit, error) {
	hits, err := x.Index.Passages(ctx, ids)
	if err != nil || x.qs.set == nil || x.qs.scope.ExpandOutside {
		return hits, err
	}
	out := hits[:0]
	for _, h := range hits {
		if x.qs.set.HasDocLang(h.DocID, h.Lang) {
			out = append(out, h)
		}
	}
	return out, nil
}

// ReportDocs and ChunkLangs pass the index's through.
func (x *scopedIndex) ReportDocs(ctx context.Context) (map[string]int, error) {
	if rl, ok := x.Index.(ReportLister); ok {
		return rl.ReportDocs(ctx)
	}
	return nil, nil
}

func (x *scopedIndex) ChunkLangs(ctx context.Context) (map[string]int, error) {
	if lc, ok := x.Index.(LangCounter); ok {
		return lc.ChunkLangs(ctx)
	}
	return nil, nil
}

// scopedVectors searches a vector store within a query's scope: the
// embedded store by the chunk set's documents (one IDSet per set), Qdrant
// by payload conditions.
type scopedVectors struct {
	vectors.Store
	qs *queryScope
}

func (v *scopedVectors) Search(ctx context.Context, q []float32, opts vectors.SearchOptions) ([]vectors.Result, error) {
	switch {
	case v.Store.Name() == vectors.KindQdrant && v.qs.meta != nil:
		opts.Filter.Meta = v.qs.meta
		if v.qs.set != nil {
			opts.Filter.Lang = "" // the scope's languages are in meta
		}
	case v.qs.set != nil:
		opts.Filter.IDs = ScopeIDSet(v.qs.set)
		opts.Filter.Lang = ""
	}
	return v.Store.Search(ctx, q, opts)
}

// ScopeIDSet is the embedded vector store's filter for a chunk set: the
// points of its documents in its languages, made once per set (Memo) so
// the store resolves it to nodes once per set and index version, and
// every later query of the same scope reuses it.
func ScopeIDSet(set *store.ChunkSet) *vectors.IDSet {
	return set.Memo("vectors.IDSet", func() any {
		return vectors.NewDocIDSet(set.DocIDs(), set.Langs())
	}).(*vectors.IDSet)
}
