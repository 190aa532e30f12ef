package notes

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIgnoreLeavesOutWhatIsNotANote(t *testing.T) {
	root := t.TempDir()
	put := func(rel, text string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(".gitignore", "# drafts and builds\nprivate/\n*.draft.md\n/build\ndocs/**/gen.md\n!keep.draft.md\n")
	put("journal/.gitignore", "секрет.md\n")
	put("logseq/config.edn", "{}")
	tests := []struct {
		name string
		rel  string
		dir  bool
		skip bool
	}{
		{"a plain note is kept", "Crows.md", false, false},
		{"a Russian note in a folder is kept", "Заметки/Вороны.md", false, false},
		{"Obsidian's settings folder is left out", ".obsidian/workspace.md", false, true},
		{"the trash is left out", ".trash/old.md", false, true},
		{"git's folder is left out", ".git/HEAD", false, true},
		{"Logseq's own folder (backups) is left out", "logseq/bak/pages/Crows.md", false, true},
		{"Logseq's pages are kept", "pages/Crows.md", false, false},
		{"vim's swap file is left out", "notes/.Crows.md.swp", false, true},
		{"a backup ending in a tilde is left out", "Crows.md~", false, true},
		{"emacs' lock file is left out", ".#Crows.md", false, true},
		{"a .tmp file is left out", "Crows.md.tmp", false, true},
		{"vim's write test 4913 is left out", "notes/4913", false, true},
		{"LibreOffice's lock file is left out", ".~lock.Crows.md#", false, true},
		{"a gitignored folder's notes are left out", "private/diary.md", false, true},
		{"a gitignored folder itself is left out", "private", true, true},
		{"a gitignored pattern is left out at any depth", "a/b/plan.draft.md", false, true},
		{"a negated pattern brings a file back", "keep.draft.md", false, false},
		{"an anchored pattern matches at the root", "build/out.md", false, true},
		{"an anchored pattern does not match deeper", "src/build/out.md", false, false},
		{"** matches any depth", "docs/x/y/gen.md", false, true},
		{"a nested .gitignore applies below its folder", "journal/секрет.md", false, true},
		{"a nested .gitignore does not apply beside it", "секрет.md", false, false},
		{"a path outside the folder is left out", "../elsewhere.md", false, true},
	}
	ig := NewIgnore(root)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ig.Skip(filepath.Join(root, filepath.FromSlash(tc.rel)), tc.dir); got != tc.skip {
				t.Errorf("Skip(%s) = %v, want %v", tc.rel, got, tc.skip)
			}
		})
	}
}
