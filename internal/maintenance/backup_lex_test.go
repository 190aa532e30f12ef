package maintenance

import "testing"

func TestBackupLeavesTheLexicalSnapshotOut(t *testing.T) {
	for name, skip := range map[string]bool{
		"exocortex.db.lex": true, "exocortex.db.lex.tmp123": true, "exocortex.db": true,
		"settings.json": false, "nats.nk": false,
	} {
		if got := skipDataFile(name); got != skip {
			t.Errorf("skipDataFile(%q) = %v, want %v", name, got, skip)
		}
	}
}
