package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/exocortex/exocortex/schemas"
)

func TestFacetsOfDocsCountCandidateDocumentsOnce(t *testing.T) {
	s := scopeFixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		docs []string
		want schemas.Facets
	}{
		{"English and Russian notes by notebook, tag and month, largest first",
			[]string{"work-atlas", "work-backup", "home-borsch", "20240101120000-abcdefg", "undated"},
			schemas.Facets{Of: schemas.FacetsOfCandidates, Docs: 5,
				Notebooks: []schemas.NotebookCount{{ID: "/home/me/home", Name: "home", Count: 2}, {ID: "/home/me/work", Name: "work", Count: 2},
					{ID: "20230101120000-box0001", Name: "Дневник", Count: 1}},
				Tags: []schemas.TagCount{{Tag: "backup", Count: 1}, {Tag: "budget", Count: 1}, {Tag: "ops", Count: 1},
					{Tag: "work/atlas", Count: 1}, {Tag: "рецепт", Count: 1}, {Tag: "рецепт/суп", Count: 1}},
				Months: []schemas.MonthCount{{Month: "2024-03", Count: 2}, {Month: "2024-01", Count: 1}, {Month: "2023-11", Count: 1}}}},
		{"a document named twice and an unknown one count once and not at all",
			[]string{"home-borsch", "home-borsch", "missing"},
			schemas.Facets{Of: schemas.FacetsOfCandidates, Docs: 1,
				Notebooks: []schemas.NotebookCount{{ID: "/home/me/home", Name: "home", Count: 1}},
				Tags:      []schemas.TagCount{{Tag: "рецепт", Count: 1}},
				Months:    []schemas.MonthCount{{Month: "2023-11", Count: 1}}}},
		{"no candidates give empty lists, not null",
			nil,
			schemas.Facets{Of: schemas.FacetsOfCandidates, Notebooks: []schemas.NotebookCount{}, Tags: []schemas.TagCount{},
				Months: []schemas.MonthCount{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.FacetsOfDocs(ctx, tt.docs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("facets\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestScopesListEveryNotebookTagAndMonth(t *testing.T) {
	s := scopeFixture(t)
	got, err := s.Scopes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := schemas.ScopeListing{Docs: 5,
		Notebooks: []schemas.NotebookCount{{ID: "/home/me/home", Name: "home", Count: 2}, {ID: "/home/me/work", Name: "work", Count: 2},
			{ID: "20230101120000-box0001", Name: "Дневник", Count: 1}},
		Tags: []schemas.TagCount{{Tag: "backup", Count: 1}, {Tag: "budget", Count: 1}, {Tag: "ops", Count: 1},
			{Tag: "work/atlas", Count: 1}, {Tag: "рецепт", Count: 1}, {Tag: "рецепт/суп", Count: 1}},
		Months: []schemas.MonthCount{{Month: "2024-03", Count: 2}, {Month: "2024-01", Count: 1}, {Month: "2023-11", Count: 1}}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("scopes\n got %+v\nwant %+v", *got, want)
	}
	// A new document shows at once: the catalog follows the index.
	scopeDoc(t, s, &schemas.DocStructure{DocID: "work-new", Source: schemas.SourceMarkdown, Path: "/home/me/work/new.md",
		Notebook: "/home/me/work", Title: "New", Tags: []string{"Budget"}, Updated: day("2026-11-02"), Version: 1}, "en")
	got, err = s.Scopes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Docs != 6 || got.Notebooks[0] != (schemas.NotebookCount{ID: "/home/me/work", Name: "work", Count: 3}) ||
		got.Tags[0] != (schemas.TagCount{Tag: "budget", Count: 2}) || got.Months[0] != (schemas.MonthCount{Month: "2026-11", Count: 1}) {
		t.Errorf("after a new document: %+v", got)
	}
}
