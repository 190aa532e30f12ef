package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

func TestNotesThatAreNotQuiteUTF8AreIndexedAndReported(t *testing.T) {
	dir := t.TempDir()
	// UTF-8 Russian with two stray bytes.
	writeFile(t, dir, "stray.md", "# Погода\n\nСегодня \xff\xfeясно и тепло.\n")
	// Russian saved by an old Windows editor.
	cp, err := charmap.Windows1251.NewEncoder().String("# Рецепт\n\nВарить клубничное варенье двадцать минут.\n")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "cp1251.md", cp)
	// Latin-1 accents among ASCII are not Cyrillic.
	writeFile(t, dir, "latin1.md", "Caf\xe9 au lait, na\xefve r\xe9sum\xe9.\n")

	var warnings []FileError
	docs := map[string]*schemas.DocChanged{}
	st, ferrs, err := Sync(context.Background(), []string{dir}, bus.NewMemKV(), func(_ context.Context, d *schemas.DocChanged) error {
		docs[filepath.Base(d.Path)] = d
		return nil
	}, SyncOptions{OnWarning: func(w FileError) { warnings = append(warnings, w) }})
	if err != nil || len(ferrs) != 0 {
		t.Fatalf("Sync: %v %+v", err, ferrs)
	}
	if st.Sent != 3 || st.Warned != 3 {
		t.Errorf("stats %+v, want 3 sent with 3 warnings", st)
	}
	text := func(name string) string {
		d := docs[name]
		if d == nil {
			t.Fatalf("%s was not indexed", name)
		}
		var parts []string
		for _, b := range d.Blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	warning := func(name string) string {
		for _, w := range warnings {
			if filepath.Base(w.Path) == name {
				return w.Err
			}
		}
		return ""
	}

	tests := []struct {
		name, file, text, warning string
	}{
		{"stray bytes in UTF-8 are replaced with U+FFFD and counted", "stray.md", "Сегодня \uFFFD\uFFFDясно и тепло.", "2 invalid UTF-8 bytes replaced with U+FFFD"},
		{"a Windows-1251 note is read as Windows-1251 and says so", "cp1251.md", "Варить клубничное варенье двадцать минут.", "probably Windows-1251 (CP1251)"},
		{"Latin-1 accents are replaced, not taken for Cyrillic", "latin1.md", "Caf\uFFFD au lait, na\uFFFDve r\uFFFDsum\uFFFD.", "4 invalid UTF-8 bytes replaced with U+FFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := text(tt.file); !strings.Contains(got, tt.text) {
				t.Errorf("text = %q, want it to contain %q", got, tt.text)
			}
			if got := warning(tt.file); !strings.Contains(got, tt.warning) {
				t.Errorf("warning = %q, want %q", got, tt.warning)
			}
		})
	}
	t.Run("the hash is still the file's own bytes", func(t *testing.T) {
		raw, _ := os.ReadFile(filepath.Join(dir, "cp1251.md"))
		if d := docs["cp1251.md"]; d.Hash != sha256hex(raw) {
			t.Errorf("hash %s is not of the file's bytes", d.Hash)
		}
	})
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestNotesWithBrokenFrontMatterAreIndexedWithTheirWordsAndReported(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "broken.md", "---\ntitle: [unclosed bracket\ntags: [garden\n---\n# Greenhouse\n\nThe glass panes need replacing before winter.\n")
	writeFile(t, dir, "list.md", "---\n- just\n- a list\n---\nBody of the list note.\n")
	writeFile(t, dir, "good.md", "---\ntitle: Fine\n---\nA fine note.\n")

	var warnings []FileError
	docs := map[string]*schemas.DocChanged{}
	st, ferrs, err := Sync(context.Background(), []string{dir}, bus.NewMemKV(), func(_ context.Context, d *schemas.DocChanged) error {
		docs[filepath.Base(d.Path)] = d
		return nil
	}, SyncOptions{OnWarning: func(w FileError) { warnings = append(warnings, w) }})
	if err != nil || len(ferrs) != 0 {
		t.Fatalf("Sync: %v, file errors %+v: a broken front matter must not fail the note", err, ferrs)
	}
	if st.Sent != 3 || st.Failed != 0 || st.Warned != 2 {
		t.Errorf("stats %+v, want 3 sent, 0 failed, 2 read with repairs", st)
	}
	warning := func(name string) string {
		for _, w := range warnings {
			if filepath.Base(w.Path) == name {
				return w.Err
			}
		}
		return ""
	}

	t.Run("the body and the front matter's text are indexed, the properties are not", func(t *testing.T) {
		d := docs["broken.md"]
		if d == nil {
			t.Fatal("broken.md was not indexed")
		}
		if len(d.Meta) != 0 {
			t.Errorf("Meta = %v, want none from a front matter that does not parse", d.Meta)
		}
		if d.Title != "Greenhouse" {
			t.Errorf("Title = %q, want the first H1", d.Title)
		}
		if len(d.Blocks) == 0 || d.Blocks[0].Type != schemas.BlockParagraph || d.Blocks[0].Text != "title: [unclosed bracket\ntags: [garden" {
			t.Errorf("first block = %+v, want the front matter kept as plain text", d.Blocks)
		}
		var all []string
		for _, b := range d.Blocks {
			all = append(all, b.Text)
		}
		if got := strings.Join(all, "\n"); !strings.Contains(got, "The glass panes need replacing before winter.") {
			t.Errorf("body lost: %q", got)
		}
	})
	t.Run("the warning says what was wrong, on which line of the file, and what was done", func(t *testing.T) {
		want := "front matter is not valid YAML (line 2: did not find expected ',' or ']'); indexed without its properties"
		if got := warning("broken.md"); got != want {
			t.Errorf("warning = %q, want %q", got, want)
		}
	})
	t.Run("front matter that is not a mapping is kept as text too", func(t *testing.T) {
		d := docs["list.md"]
		if d == nil || len(d.Blocks) < 2 || d.Blocks[0].Text != "- just\n- a list" || d.Blocks[1].Text != "Body of the list note." {
			t.Fatalf("list.md = %+v", d)
		}
		if got := warning("list.md"); !strings.Contains(got, "front matter is not a YAML mapping") || !strings.HasSuffix(got, "indexed without its properties") {
			t.Errorf("warning = %q", got)
		}
	})
	t.Run("a valid front matter is not reported", func(t *testing.T) {
		if got := warning("good.md"); got != "" || docs["good.md"].Title != "Fine" {
			t.Errorf("warning %q, title %q", got, docs["good.md"].Title)
		}
	})
}
