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
