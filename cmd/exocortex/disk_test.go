package main_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startUpLogged runs exocortex up on data with more arguments and waits until it
// serves (its nats.url is written). It is killed when the test ends.
func startUpLogged(t *testing.T, data string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	up := exec.Command(binary, append([]string{"up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "warn", "--no-models"}, args...)...)
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=")
	stderr := &lockedBuffer{}
	up.Stderr = stderr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if up.ProcessState == nil {
			_ = up.Process.Kill()
			_ = up.Wait()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "exocortex is up") {
		if time.Now().After(deadline) || up.ProcessState != nil {
			t.Fatalf("up did not start: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return up, stderr
}

// natsServer builds the nats-server of the module the project uses and
// runs it with JetStream on a free port; it is stopped when the test ends.
func natsServer(t *testing.T) (url string, proc *os.Process) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Skipf("cannot build nats-server: %v %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nats-server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url, cmd.Process
}

// TestUpStopsWithinItsStopTimeoutEvenWhenJetStreamIsStuck runs up against a
// NATS server that then stops answering (SIGSTOP: connections stay open,
// drains and publishes wait for ever) and sends up SIGTERM: up exits within
// --stop-timeout, non-zero, naming what it was waiting for.
func TestUpStopsWithinItsStopTimeoutEvenWhenJetStreamIsStuck(t *testing.T) {
	url, server := natsServer(t)
	data := t.TempDir()
	up, stderr := startUpLogged(t, data, "--nats", url, "--http", "off", "--stop-timeout", "3s")
	if err := server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("up still running 20s after SIGTERM with a stuck JetStream (--stop-timeout 3s):\n%s", stderr.String())
	}
	took := time.Since(start)
	if took > 6*time.Second {
		t.Errorf("up took %s to exit after SIGTERM, want about its 3s --stop-timeout", took.Round(time.Millisecond))
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("exit status %d, want 1 for a stop that timed out", code)
	}
	if msg := stderr.String(); !strings.Contains(msg, "did not stop within 3s") || !strings.Contains(msg, "still waiting for") {
		t.Errorf("up's last words do not say what was stuck:\n%s", msg)
	}
	t.Logf("up exited %s after SIGTERM: %s", took.Round(time.Millisecond), lastLine(stderr.String()))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
