package bustest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Tmpfs mounts a tmpfs of sizeMiB under a temporary directory and returns
// it, unmounted when the test ends; a test that needs a disk it can really
// fill. It skips the test, saying why, where it cannot mount one (not root,
// or no mount permission, as in most containers).
func Tmpfs(t testing.TB, sizeMiB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full-disk test mounts a small tmpfs, which needs root")
	}
	dir, err := os.MkdirTemp("", "exocortex-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(sizeMiB)+"m", "tmpfs", dir).CombinedOutput()
	if err != nil {
		_ = os.Remove(dir)
		t.Skipf("cannot mount a tmpfs for a full-disk test: %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("unmount the tmpfs at %s: %v %s", dir, err, out)
		}
		_ = os.Remove(dir)
	})
	return dir
}

// FillDisk writes a ballast file at path until its volume is full (the
// write fails with ENOSPC) and returns how many bytes it wrote. Removing the
// file frees the space.
func FillDisk(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("ballast: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if err != nil {
			if !strings.Contains(err.Error(), "no space left") {
				t.Fatalf("ballast: %v", err)
			}
			// Fill the last blocks too.
			for _, size := range []int{4096, 512, 1} {
				for {
					k, err := f.Write(buf[:size])
					n += int64(k)
					if err != nil {
						break
					}
				}
			}
			return n
		}
	}
}
