package notes

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

func parseNote(t *testing.T, text string) *schemas.DocChanged {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "notes", "note.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	doc, err := ParseMarkdown(p, []byte(text), root)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestMarkdownTags(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"front matter tags as a list", "---\ntags: [Work, \"#Atlas\"]\n---\nBody", []string{"atlas", "work"}},
		{"front matter tags as a YAML sequence", "---\ntags:\n  - рецепт\n  - Суп\n---\nBody", []string{"рецепт", "суп"}},
		{"front matter tags as a comma string", "---\ntags: work, home/garden\n---\nBody", []string{"home/garden", "work"}},
		{"front matter tag (singular)", "---\ntag: idea\n---\nBody", []string{"idea"}},
		{"#tags in English text", "Plan for #Work and #projects/atlas, see #budget.", []string{"budget", "projects/atlas", "work"}},
		{"#tags in Russian text", "Сварить борщ #рецепт (#Суп/красный) сегодня", []string{"рецепт", "суп/красный"}},
		{"tags in a heading's text but not its markers", "## Plans #work\n\nText", []string{"work"}},
		{"a heading alone is no tag", "# Title\n\n## Section", nil},
		{"nothing in a fenced code block", "```sh\n# comment #notatag\necho #x\n```\nText #real", []string{"real"}},
		{"nothing in inline code", "Run `grep #foo` then #bar", []string{"bar"}},
		{"a URL's fragment is no tag", "See https://example.com/page#section and a#b", nil},
		{"a number is no tag", "Issue #42 and #2024", nil},
		{"front matter and text together, each once", "---\ntags: work\n---\nMore #work and #Рецепт", []string{"work", "рецепт"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseNote(t, tt.text).Tags; !slices.Equal(got, tt.want) {
				t.Errorf("tags %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMarkdownTimesAndNotebook(t *testing.T) {
	mtime := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	tests := []struct {
		name, text       string
		updated, created time.Time
	}{
		{"no front matter: the file's time", "Text", mtime, time.Time{}},
		{"date is both times", "---\ndate: 2024-03-01\n---\nText", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"updated and created", "---\ncreated: 2023-01-02T10:00:00Z\nupdated: 2024-05-06 07:08\n---\nText",
			time.Date(2024, 5, 6, 7, 8, 0, 0, time.UTC), time.Date(2023, 1, 2, 10, 0, 0, 0, time.UTC)},
		{"a Russian-style date", "---\ndate: 01.03.2024\n---\nText", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"an unreadable date falls back to the file's time", "---\ndate: вчера\n---\nText", mtime, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := parseNote(t, tt.text)
			if !doc.Updated.Equal(tt.updated) || !doc.Created.Equal(tt.created) {
				t.Errorf("updated %v created %v, want %v and %v", doc.Updated, doc.Created, tt.updated, tt.created)
			}
			if doc.NotebookName != filepath.Base(doc.Notebook) || doc.NotebookName == "" {
				t.Errorf("notebook name %q of notebook %q, want its base name", doc.NotebookName, doc.Notebook)
			}
		})
	}
}

func TestSiYuanTagsAndTimes(t *testing.T) {
	sy := `{"ID":"20240301101500-abcdefg","Type":"NodeDocument","Properties":{"id":"20240301101500-abcdefg","title":"Суп","tags":"Рецепт,work/home","updated":"20240305120000"},
"Children":[
 {"ID":"20240301101501-aaaaaaa","Type":"NodeParagraph","Children":[{"Type":"NodeText","Data":"Варить "},{"Type":"NodeTextMark","TextMarkType":"tag","TextMarkTextContent":"Обед дома"}]},
 {"ID":"20240301101502-bbbbbbb","Type":"NodeCodeBlock","Children":[{"Type":"NodeTextMark","TextMarkType":"tag","TextMarkTextContent":"incode"}]}
]}`
	dir := filepath.Join(t.TempDir(), "20230101120000-box0001")
	if err := os.MkdirAll(filepath.Join(dir, ".siyuan"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".siyuan", "conf.json"), []byte(`{"name":"Дневник"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "20240301101500-abcdefg.sy")
	if err := os.WriteFile(p, []byte(sy), 0o644); err != nil {
		t.Fatal(err)
	}
	nb, err := LoadNotebook(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ParseSiYuan(p, []byte(sy), nb)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"work/home", "обед дома", "рецепт"}; !slices.Equal(doc.Tags, want) {
		t.Errorf("tags %q, want %q", doc.Tags, want)
	}
	if want := time.Date(2024, 3, 5, 12, 0, 0, 0, time.UTC); !doc.Updated.Equal(want) {
		t.Errorf("updated %v, want %v", doc.Updated, want)
	}
	if want := time.Date(2024, 3, 1, 10, 15, 0, 0, time.UTC); !doc.Created.Equal(want) {
		t.Errorf("created %v, want %v (from the id)", doc.Created, want)
	}
	if doc.NotebookName != "Дневник" {
		t.Errorf("notebook name %q, want Дневник", doc.NotebookName)
	}
}
