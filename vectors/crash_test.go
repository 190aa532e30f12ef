//go:build linux || darwin || freebsd

package vectors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestCrashRecovery runs a child process that writes and then kills itself
// with SIGKILL — no Close, no snapshot of its last writes — and checks the
// reopened store has every write the child saw acknowledged.
func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv("VECTORS_CRASH_CHILD"); dir != "" {
		crashChild(dir, os.Getenv("VECTORS_CRASH_MODE"))
		return
	}
	for _, mode := range []string{"sync", "nosync+flush", "snapshot+log"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$")
			cmd.Env = append(os.Environ(), "VECTORS_CRASH_CHILD="+dir, "VECTORS_CRASH_MODE="+mode)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
			}
			e := openT(t, dir, EmbeddedConfig{})
			defer e.Close()
			checkCrashState(t, e)
		})
	}
}

// crashN is the number of points the crash child writes.
var crashN = map[bool]int{false: 2000, true: 480}[raceEnabled]

func crashChild(dir, mode string) {
	ctx := context.Background()
	e, err := OpenEmbedded(ctx, dir, testDim, EmbeddedConfig{NoSync: mode == "nosync+flush"})
	if err != nil {
		panic(err)
	}
	pts := testPoints(1, "p", crashN)
	for lo := 0; lo < crashN; lo += crashN / 8 {
		if err := e.Upsert(ctx, pts[lo:lo+crashN/8]); err != nil {
			panic(err)
		}
		if lo == crashN/2 && mode == "snapshot+log" {
			if err := e.Snapshot(ctx); err != nil {
				panic(err)
			}
		}
	}
	if err := e.Delete(ctx, []string{"p:0", fmt.Sprintf("p:%d", crashN-1), "nope"}); err != nil {
		panic(err)
	}
	if err := e.Upsert(ctx, []Point{{ID: "p:5", DocID: "moved", Lang: "de", Vector: pts[6].Vector}}); err != nil {
		panic(err)
	}
	if err := e.Flush(ctx); err != nil {
		panic(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func checkCrashState(t *testing.T, e *Embedded) {
	t.Helper()
	ctx := context.Background()
	if n, _ := e.Count(ctx); n != crashN-2 {
		t.Fatalf("Count = %d, want %d", n, crashN-2)
	}
	pts := testPoints(1, "p", crashN)
	for _, i := range []int{1, crashN / 4, crashN/2 + 1, crashN - 2} {
		res, err := e.Search(ctx, pts[i].Vector, SearchOptions{K: 1})
		if err != nil || len(res) != 1 || res[0].ID != pts[i].ID {
			t.Fatalf("point %d: %v, %v", i, res, err)
		}
	}
	for _, i := range []int{0, crashN - 1} {
		res, _ := e.Search(ctx, pts[i].Vector, SearchOptions{K: 1})
		if len(res) > 0 && res[0].ID == pts[i].ID {
			t.Fatalf("deleted point %d came back", i)
		}
	}
	res, _ := e.Search(ctx, pts[6].Vector, SearchOptions{K: 2, Filter: Filter{Lang: "de"}})
	if len(res) != 1 || res[0].ID != "p:5" || res[0].DocID != "moved" {
		t.Fatalf("the last upsert is missing: %v", res)
	}
}
