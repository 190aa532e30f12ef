package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestUpStartsUnderAPollingStatus starts up again and again on one data
// directory while 'exocortex status' polls it in a tight loop: a client
// attaching during up's start must never break it (it used to update the
// stage consumers at the same moment as up, and JetStream's rename of
// o.dat.tmp failed: "consumer rerank on KB_QUERY: ... no such file or
// directory"). 50 starts take about two minutes on two cores, so the suite
// runs 10; EXOCORTEX_UP_STARTS=50 runs the full drill.
func TestUpStartsUnderAPollingStatus(t *testing.T) {
	starts := 10
	if n, err := strconv.Atoi(os.Getenv("EXOCORTEX_UP_STARTS")); err == nil && n > 0 {
		starts = n
	}
	data := t.TempDir()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var polls atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				cmd := exec.Command(binary, "status", "--data", data, "--no-models", "--log-level", "error")
				cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=")
				_ = cmd.Run()
				polls.Add(1)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	begin := time.Now()
	for i := range starts {
		up := exec.Command(binary, "up", "--data", data, "--listen", "127.0.0.1:-1", "--no-models", "--http", "off", "--log-level", "warn")
		up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=")
		stderr := &lockedBuffer{}
		up.Stderr = stderr
		if err := up.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- up.Wait() }()
		deadline := time.After(30 * time.Second)
	wait:
		for !strings.Contains(stderr.String(), "exocortex is up") {
			select {
			case err := <-exited:
				t.Fatalf("start %d of %d: up exited (%v) while status polled it:\n%s", i+1, starts, err, stderr.String())
			case <-deadline:
				_ = up.Process.Kill()
				t.Fatalf("start %d of %d: up not up after 30s:\n%s", i+1, starts, stderr.String())
			case <-time.After(20 * time.Millisecond):
				continue wait
			}
		}
		_ = up.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("start %d of %d: up stopped with %v:\n%s", i+1, starts, err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = up.Process.Kill()
			t.Fatalf("start %d of %d: up did not stop", i+1, starts)
		}
		if _, err := os.Stat(filepath.Join(data, "nats.url")); err == nil {
			t.Fatalf("start %d: nats.url left behind after a clean stop", i+1)
		}
	}
	t.Logf("%d starts of up under %d status polls in %s", starts, polls.Load(), time.Since(begin).Round(time.Millisecond))
}
