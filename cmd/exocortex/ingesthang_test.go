package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runIngest runs 'exocortex ingest' with a deadline: a hang fails the test
// instead of the suite.
func runIngest(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"ingest", "--log-level", "error"}, args...)...)
	cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=")
	o, e := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = o, e
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return o.String(), e.String(), exitCode(err), time.Since(start)
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("ingest %s still running after %s:\nstdout: %s\nstderr: %s", strings.Join(args, " "), limit, o.String(), e.String())
	}
	return
}

// TestIngestRefusesANoteLargerThanTheStoreUpFront: with --max-store 16M a
// 12 MB note (English and Russian) can never fit (its event and its chunks
// take twice that); ingest used to wait for room for ever while status said
// "disk: ok". It is refused at once, naming the limit, and the small note
// beside it is ingested.
func TestIngestRefusesANoteLargerThanTheStoreUpFront(t *testing.T) {
	data, notes := t.TempDir(), t.TempDir()
	startUpLogged(t, data, "--no-models", "--http", "off", "--max-store", "16M")
	para := "Кошки спят большую часть дня и охотятся в сумерках. Cats sleep most of the day and hunt at dusk.\n\n"
	write(t, filepath.Join(notes, "huge.md"), "# Огромная заметка\n\n"+strings.Repeat(para, 12<<20/len(para)))
	write(t, filepath.Join(notes, "small.md"), "# Small\n\nA small note about gardens.\n")
	out, errOut, code, took := runIngest(t, 60*time.Second, "--data", data, "--quiet", notes)
	if code != 3 {
		t.Errorf("exit status %d, want 3 (one file refused, the other ingested)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "huge.md") || !strings.Contains(errOut, "--max-store") || !strings.Contains(errOut, "16 MiB") {
		t.Errorf("the refusal does not name the note and the store's limit (16 MiB, --max-store):\n%s", errOut)
	}
	if !strings.Contains(out, "ingested 1 document") {
		t.Errorf("the small note was not ingested:\n%s", out)
	}
	if took > 30*time.Second {
		t.Errorf("ingest took %s to refuse the note", took.Round(time.Millisecond))
	}
	t.Logf("refused in %s: %s", took.Round(time.Millisecond), lastLine(errOut))
}

// TestIngestSaysWithinSecondsThatUpWentAway kills up (SIGKILL) while ingest
// feeds it: ingest used to be silent for a minute and then print "kv put
// doc...: context deadline exceeded". It says the system went away within
// 5 s and exits with status 4.
func TestIngestSaysWithinSecondsThatUpWentAway(t *testing.T) {
	data, notes := t.TempDir(), t.TempDir()
	up, _ := startUpLogged(t, data, "--no-models", "--http", "off")
	writeCorpus(t, notes, 3000)
	cmd := exec.Command(binary, "ingest", "--data", data, "--log-level", "error", notes)
	cmd.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=")
	o, e := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = o, e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait until ingest is sending, then kill up under it.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.String(), "sent") && !strings.Contains(e.String(), "scanned") {
		if time.Now().After(deadline) {
			t.Fatalf("ingest did not start sending: %s", e.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := up.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = up.Wait()
	killed := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("ingest still running 20 s after up was killed:\n%s", e.String())
	}
	took := time.Since(killed)
	if took > 5*time.Second {
		t.Errorf("ingest took %s to notice that up went away, want under 5 s", took.Round(time.Millisecond))
	}
	if code := exitCode(err); code != 4 {
		t.Errorf("exit status %d, want 4 (the running system went away)\n%s", code, e.String())
	}
	if !strings.Contains(e.String(), "went away") || !strings.Contains(e.String(), "exocortex up") {
		t.Errorf("ingest does not say that up went away and what to do:\n%s", e.String())
	}
	t.Logf("ingest exited %s after up was killed: %s", took.Round(time.Millisecond), lastLine(e.String()))
}
