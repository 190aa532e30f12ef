package maintenance_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/maintenance"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/internal/system/systemtest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

func writeNotes(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		text := fmt.Sprintf("# Note %d\n\nBees of hive %d make honey from the nectar of flower %d.\n\n## More\n\nThe garden %d has a pond.\n", i, i, i, i)
		systemtest.WriteFile(t, filepath.Join(dir, fmt.Sprintf("n%03d.md", i)), text)
	}
}

// TestABackupTakenDuringIngestHoldsAMomentARestoreCanComplete backs up
// while an ingest is publishing: whatever moment the backup holds, its
// source hashes, chunk manifests and index agree, and a re-ingest of the
// same folder on the restored directory sends exactly the documents the
// backup lacks and ends with all of them indexed.
func TestABackupTakenDuringIngestHoldsAMomentARestoreCanComplete(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	data, vault, backup, restored := filepath.Join(root, "data"), filepath.Join(root, "vault"), filepath.Join(root, "backup"), filepath.Join(root, "restored")
	const notes = 80
	writeNotes(t, vault, notes)
	sys := systemtest.Start(t, data)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		systemtest.SyncPaths(t, sys.Bus, vault)
	}()
	var lines []string
	var mu sync.Mutex
	m, err := maintenance.Backup(ctx, sys.Bus, maintenance.BackupOptions{DataDir: data, Dir: backup, Wait: 2 * time.Minute, Log: systemtest.Log(t),
		Progress: func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backup after %d attempts: %d documents, buckets %v", m.Attempts, m.Documents, m.Buckets)
	if m.Documents != m.Buckets[stage.BucketSources] || m.Documents != m.Buckets[stage.BucketChunks] {
		t.Errorf("the backup holds %d documents in the index, %d source hashes and %d chunk manifests: they must agree",
			m.Documents, m.Buckets[stage.BucketSources], m.Buckets[stage.BucketChunks])
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}

	if _, err := maintenance.Restore(ctx, maintenance.RestoreOptions{Dir: backup, DataDir: restored, Log: systemtest.Log(t)}); err != nil {
		t.Fatal(err)
	}
	sys2 := systemtest.Start(t, restored)
	stats := systemtest.SyncPaths(t, sys2.Bus, vault)
	systemtest.WaitIdle(t, sys2.Bus)
	if stats.Sent != notes-m.Documents || stats.Unchanged != m.Documents {
		t.Errorf("re-ingest after restore sent %d and found %d unchanged; the backup held %d of %d documents",
			stats.Sent, stats.Unchanged, m.Documents, notes)
	}
	docs, _, err := sys2.Store.Counts(ctx)
	if err != nil || docs != notes {
		t.Errorf("after the re-ingest the index holds %d documents (%v), want %d", docs, err, notes)
	}
}

// TestABackupWhoseCopyMixesTwoMomentsIsTakenAgain publishes a second
// folder after the index was copied and before the KV buckets are: that copy
// would hold source hashes of documents its index lacks, and a restore of it
// would lose them for good (a re-ingest calls them unchanged). Backup must
// notice and take the copy again.
func TestABackupWhoseCopyMixesTwoMomentsIsTakenAgain(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	data, backup, restored := filepath.Join(root, "data"), filepath.Join(root, "backup"), filepath.Join(root, "restored")
	first, second := filepath.Join(root, "first"), filepath.Join(root, "second")
	writeNotes(t, first, 30)
	writeNotes(t, second, 30)
	sys := systemtest.Start(t, data)
	systemtest.SyncPaths(t, sys.Bus, first)
	systemtest.WaitIdle(t, sys.Bus)

	copiedIndex, fed := false, false
	m, err := maintenance.Backup(ctx, sys.Bus, maintenance.BackupOptions{DataDir: data, Dir: backup, Wait: 2 * time.Minute, Log: systemtest.Log(t),
		Progress: func(s string) {
			switch {
			case s == "copying exocortex.db":
				copiedIndex = true
			case copiedIndex && !fed && strings.HasPrefix(s, "copying"):
				fed = true // the index is copied, the buckets are not yet
				systemtest.SyncPaths(t, sys.Bus, second)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !fed {
		t.Fatal("the second folder was never fed during the backup")
	}
	t.Logf("backup after %d attempts: %d documents, buckets %v", m.Attempts, m.Documents, m.Buckets)
	if m.Documents != 60 || m.Buckets[stage.BucketSources] != 60 || m.Buckets[stage.BucketChunks] != 60 || m.Attempts < 2 {
		t.Errorf("backup holds %d documents, %d source hashes, %d chunk manifests after %d attempts; want 60 of each after a second attempt",
			m.Documents, m.Buckets[stage.BucketSources], m.Buckets[stage.BucketChunks], m.Attempts)
	}
	if err := sys.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := maintenance.Restore(ctx, maintenance.RestoreOptions{Dir: backup, DataDir: restored, Log: systemtest.Log(t)}); err != nil {
		t.Fatal(err)
	}
	sys2 := systemtest.Start(t, restored)
	stats := systemtest.SyncPaths(t, sys2.Bus, first, second)
	systemtest.WaitIdle(t, sys2.Bus)
	docs, _, err := sys2.Store.Counts(ctx)
	if err != nil || docs != 60 || stats.Sent != 0 {
		t.Errorf("after restore and re-ingest: %d documents (%v), %d sent; want 60 documents, nothing sent", docs, err, stats.Sent)
	}
}

// TestBackupWithNothingRunningRefusesPendingWork: messages waiting for a
// stage that does not run would never reach the index; the backup says so
// at once instead of copying source hashes the index does not match.
func TestBackupWithNothingRunningRefusesPendingWork(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	data := filepath.Join(root, "data")
	sys, err := system.Start(ctx, system.Config{DataDir: data, Listen: "127.0.0.1:-1", NoStages: true, Log: systemtest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Stop() })
	ev := &schemas.DocChanged{DocID: "notes/a.md", Source: "files", Hash: "h1", Title: "A"}
	if _, err := sys.Bus.Publish(ctx, ev, "test"); err != nil {
		t.Fatal(err)
	}
	_, err = maintenance.Backup(ctx, sys.Bus, maintenance.BackupOptions{DataDir: data, Dir: filepath.Join(root, "backup"), NothingRuns: true, Log: systemtest.Log(t)})
	if err == nil || !strings.Contains(err.Error(), "chunk 1") || !strings.Contains(err.Error(), "exocortex up") {
		t.Fatalf("backup with a message pending and nothing running: %v", err)
	}
}
