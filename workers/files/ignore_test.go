package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

func TestSyncLeavesOutIgnoredNotesAndDeletesOnesIgnoredSince(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Crows.md", "Crows use tools.")
	write("private/diary.md", "Secret diary.")
	write("Crows.md~", "A backup.")
	kv := bus.NewMemKV()
	var sent []string
	publish := func(_ context.Context, ev *schemas.DocChanged) error {
		if ev.Deleted {
			sent = append(sent, "-"+filepath.Base(ev.Path))
		} else {
			sent = append(sent, "+"+filepath.Base(ev.Path))
		}
		return nil
	}
	if _, _, err := Sync(context.Background(), []string{root}, kv, publish, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 {
		t.Fatalf("first sync sent %v, want Crows.md and diary.md", sent)
	}
	sent = nil
	write(".gitignore", "private/\n")
	if _, _, err := Sync(context.Background(), []string{root}, kv, publish, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0] != "-diary.md" {
		t.Errorf("after private/ was gitignored: sent %v, want the diary deleted", sent)
	}
}
