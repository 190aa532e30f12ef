//go:build linux

package vectors

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAFullDiskLeavesTheStoreUsable fills the disk under an embedded store
// (a small tmpfs) and gives it back a page at a time while points are
// upserted: every failed upsert says ENOSPC and can be tried again (the
// store never turns unusable), and a reopened store has every point.
func ballastSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestAFullDiskLeavesTheStoreUsable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })
	ctx := context.Background()
	dir := filepath.Join(disk, "vectors")
	e := openT(t, dir, EmbeddedConfig{})
	pts := testPoints(1, "p", 400)
	if err := e.Upsert(ctx, pts[:100]); err != nil {
		t.Fatal(err)
	}
	ballast, err := os.Create(filepath.Join(disk, "ballast"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := ballast.Write(buf); err != nil {
			break
		}
	}
	ballast.Close()
	// Give the space back a page at a time, upserting one point after
	// another until each page is used up: the op log and the raw file then
	// run out of room in every order.
	next := 100
	for round := 0; round < 60 && next < 400; round++ {
		if err := os.Truncate(ballast.Name(), ballastSize(t, ballast.Name())-4096); err != nil {
			t.Fatal(err)
		}
		for ; next < 400; next++ {
			err := e.Upsert(ctx, pts[next:next+1])
			if err == nil {
				continue
			}
			if strings.Contains(err.Error(), "unusable") {
				t.Fatalf("after a failed write on a full disk the store is unusable: %v", err)
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("upsert on a full disk: %v, want an error that wraps ENOSPC", err)
			}
			break
		}
	}
	if err := os.Remove(ballast.Name()); err != nil {
		t.Fatal(err)
	}
	if err := e.Upsert(ctx, pts[next:]); err != nil {
		t.Fatalf("upsert after space returned: %v", err)
	}
	if n, _ := e.Count(ctx); n != 400 {
		t.Errorf("%d points, want 400", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openT(t, dir, EmbeddedConfig{})
	defer e.Close()
	if n, _ := e.Count(ctx); n != 400 {
		t.Errorf("reopened: %d points, want 400", n)
	}
}
