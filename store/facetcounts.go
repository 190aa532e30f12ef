package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/exocortex/exocortex/schemas"
)

// FacetsOfDocs counts the documents docIDs (a query's candidates' documents;
// duplicates count once, unknown ones not at all) by notebook (its id as
// written, with its name), tag and month of the document's own time, as
// the doors show them: the largest counts first, months newest first. It
// reads the in-memory scope catalog, no SQL beyond its freshness check.
func (s *Store) FacetsOfDocs(ctx context.Context, docIDs []string) (*schemas.Facets, error) {
	var t tally
	err := s.withCatalog(ctx, func(cat *catalog) {
		seen := make(map[uint32]bool, len(docIDs))
		for _, id := range docIDs {
			i, ok := cat.byID[id]
			if !ok || seen[i] || !cat.docs[i].indexed {
				continue
			}
			seen[i] = true
			t.add(&cat.docs[i])
		}
	})
	if err != nil {
		return nil, fmt.Errorf("facets: %w", err)
	}
	nbs, tags, months := t.lists()
	return &schemas.Facets{Of: schemas.FacetsOfCandidates, Docs: t.docs, Notebooks: nbs, Tags: tags, Months: months}, nil
}

// Scopes lists every notebook, tag and month of the index with its
// documents (a door's scope suggestions without a query), ordered as
// FacetsOfDocs orders them.
func (s *Store) Scopes(ctx context.Context) (*schemas.ScopeListing, error) {
	var t tally
	err := s.withCatalog(ctx, func(cat *catalog) {
		for i := range cat.docs {
			if cat.docs[i].indexed {
				t.add(&cat.docs[i])
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("scopes: %w", err)
	}
	nbs, tags, months := t.lists()
	return &schemas.ScopeListing{Docs: t.docs, Notebooks: nbs, Tags: tags, Months: months}, nil
}

// tally counts documents by notebook, tag and month.
type tally struct {
	docs      int
	notebooks map[string]*schemas.NotebookCount // by lower-cased id
	tags      map[string]int
	months    map[string]int
}

func (t *tally) add(d *catDoc) {
	if t.notebooks == nil {
		t.notebooks, t.tags, t.months = map[string]*schemas.NotebookCount{}, map[string]int{}, map[string]int{}
	}
	t.docs++
	if d.notebook != "" {
		nb := t.notebooks[d.notebook]
		if nb == nil {
			nb = &schemas.NotebookCount{ID: d.nbID, Name: d.nbName}
			t.notebooks[d.notebook] = nb
		}
		nb.Count++
	}
	for _, tag := range d.tags {
		t.tags[tag]++
	}
	if d.time != 0 {
		t.months[monthOf(d.time)]++
	}
}

// lists are the counts in the doors' order (never nil: JSON arrays).
func (t *tally) lists() ([]schemas.NotebookCount, []schemas.TagCount, []schemas.MonthCount) {
	nbs := make([]schemas.NotebookCount, 0, len(t.notebooks))
	for _, nb := range t.notebooks {
		nbs = append(nbs, *nb)
	}
	slices.SortFunc(nbs, func(a, b schemas.NotebookCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Label(), b.Label()), cmp.Compare(a.ID, b.ID))
	})
	tags := make([]schemas.TagCount, 0, len(t.tags))
	for tag, n := range t.tags {
		tags = append(tags, schemas.TagCount{Tag: tag, Count: n})
	}
	slices.SortFunc(tags, func(a, b schemas.TagCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Tag, b.Tag))
	})
	months := make([]schemas.MonthCount, 0, len(t.months))
	for m, n := range t.months {
		months = append(months, schemas.MonthCount{Month: m, Count: n})
	}
	slices.SortFunc(months, func(a, b schemas.MonthCount) int { return cmp.Compare(b.Month, a.Month) })
	return nbs, tags, months
}
