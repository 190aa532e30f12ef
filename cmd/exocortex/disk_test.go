package main_test

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/models/modeltest"
)

// startUpLogged runs exocortex up on data with more arguments and waits until it
// serves (its nats.url is written). It is killed when the test ends.
func startUpLogged(t *testing.T, data string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	up := exec.Command(binary, append([]string{"up", "--data", data, "--listen", "127.0.0.1:-1", "--log-level", "warn"}, args...)...)
	up.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=")
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
	up, stderr := startUpLogged(t, data, "--nats", url, "--no-models", "--http", "off", "--stop-timeout", "3s")
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

// writeCorpus writes n generated notes, English and Russian, a few
// kilobytes each, with headings, lists and links between them.
func writeCorpus(t *testing.T, dir string, n int) {
	t.Helper()
	en := []string{"gardens", "rivers", "engines", "libraries", "orbits", "harbours", "glaciers", "markets"}
	ru := []string{"сады", "реки", "двигатели", "библиотеки", "орбиты", "гавани", "ледники", "рынки"}
	for i := 0; i < n; i++ {
		var b strings.Builder
		topic, lang := en[i%len(en)], "en"
		if i%3 == 2 {
			topic, lang = ru[i%len(ru)], "ru"
		}
		fmt.Fprintf(&b, "---\ntitle: Note %d about %s\ntags: [drill, %s]\n---\n# Note %d: %s\n\n", i, topic, lang, i, topic)
		for s := 0; s < 4; s++ {
			fmt.Fprintf(&b, "## Part %d\n\n", s)
			for p := 0; p < 3; p++ {
				if lang == "ru" {
					fmt.Fprintf(&b, "Заметка %d, часть %d, абзац %d: %s описаны подробно, с примерами и числами %d и %d. ", i, s, p, topic, i*7+s, p*13+i)
					b.WriteString("Этот текст нужен, чтобы заметка была достаточно длинной для нескольких фрагментов.\n\n")
				} else {
					fmt.Fprintf(&b, "Note %d, part %d, paragraph %d describes %s in detail, with examples and the numbers %d and %d. ", i, s, p, topic, i*7+s, p*13+i)
					b.WriteString("This text is here so that the note is long enough to make several chunks of its own.\n\n")
				}
			}
			fmt.Fprintf(&b, "- see [[Note %d about %s]]\n- item %d\n\n", (i+1)%n, en[(i+1)%len(en)], s)
		}
		write(t, filepath.Join(dir, fmt.Sprintf("folder-%d", i%10), fmt.Sprintf("note-%03d.md", i)), b.String())
	}
}

// TestDrillAFullDiskMidIngestEndsWithTheIndexOfACleanRun is the full-disk
// drill: up runs on a small tmpfs, an ingest of a few hundred notes is
// under way when a ballast file fills the disk, and the ballast is then
// removed. With no manual step, the ingest completes and the index is the
// one a clean run builds: the same documents, chunks and hashes, the same
// counts of full-text, vector, block and edge rows, and nothing
// dead-lettered.
func TestDrillAFullDiskMidIngestEndsWithTheIndexOfACleanRun(t *testing.T) {
	disk := bustest.Tmpfs(t, 64)
	// The embedding model (tiny, generated) makes the drill cover the embed
	// stage, the embedding cache and the vector index's op log as well.
	modelsDir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true})
	corpus, clean := t.TempDir(), t.TempDir()
	writeCorpus(t, corpus, 300)
	cleanStart := time.Now()
	mustExo(t, "ingest", corpus, "--data", clean, "--models", modelsDir, "--quiet")
	cleanTook := time.Since(cleanStart)
	want := readIndex(t, clean)
	if want.Counts["documents"] != 300 || want.Counts["chunks"] < 300 || want.Counts["chunk_vectors"] != want.Counts["chunks"] {
		t.Fatalf("the clean run indexed %v", want.Counts)
	}

	data := filepath.Join(disk, "data")
	up, upErr := startUpLogged(t, data, "--http", "off", "--models", modelsDir)
	ingest := exec.Command(binary, "ingest", corpus, "--data", data)
	ingest.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_MODELS=")
	ingestOut, ingestErr := &lockedBuffer{}, &lockedBuffer{}
	ingest.Stdout, ingest.Stderr = ingestOut, ingestErr
	if err := ingest.Start(); err != nil {
		t.Fatal(err)
	}
	ingestDone := make(chan error, 1)
	go func() { ingestDone <- ingest.Wait() }()
	t.Cleanup(func() {
		if ingest.ProcessState == nil {
			_ = ingest.Process.Kill()
			<-ingestDone
		}
	})

	// Mid-ingest: some documents indexed, most not.
	deadline := time.Now().Add(2 * time.Minute)
	for countDocs(data) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the ingest did not get going:\n%s\n%s", ingestErr.String(), upErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ballast := filepath.Join(disk, "ballast")
	filled := bustest.FillDisk(t, ballast)
	atFull := countDocs(data)
	deadline = time.Now().Add(time.Minute)
	for !strings.Contains(upErr.String(), "disk full: the NATS store at") {
		if time.Now().After(deadline) {
			t.Fatalf("up did not report the full disk (ballast of %d bytes):\n%s", filled, upErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// While full: status says so, and the ingest waits, naming the disk.
	time.Sleep(2 * time.Second)
	if out, errOut, err := exo(t, "status", "--data", data); err != nil || !strings.Contains(out, "disk: full: the NATS store at "+filepath.Join(data, "nats")) {
		t.Errorf("status while the disk is full: %v\n%s%s", err, out, errOut)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	atFree := countDocs(data)
	var ierr error
	var firstProgress, allIndexed time.Duration
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	timeout := time.After(5 * time.Minute)
wait:
	for {
		select {
		case ierr = <-ingestDone:
			break wait
		case <-poll.C:
			n := countDocs(data)
			if firstProgress == 0 && n > atFree {
				firstProgress = time.Since(freed)
			}
			if allIndexed == 0 && n == want.Counts["documents"] {
				allIndexed = time.Since(freed)
			}
		case <-timeout:
			t.Fatalf("the ingest did not finish after space returned:\n%s\nup:\n%s", ingestErr.String(), upErr.String())
		}
	}
	resumed := time.Since(freed)
	if ierr != nil {
		t.Fatalf("ingest: %v\n%s%s\nup:\n%s", ierr, ingestOut.String(), ingestErr.String(), upErr.String())
	}
	if !strings.Contains(ingestErr.String(), "out of disk space") {
		t.Errorf("the ingest's progress does not say it waited for disk space:\n%s", ingestErr.String())
	}
	t.Logf("disk filled with %d documents indexed (ballast %d bytes), %d when freed; after space was freed: first new document indexed in %s, all %d in %s, ingest done in %s (a clean ingest of all, starting its own system: %s)",
		atFull, filled, atFree, firstProgress.Round(time.Millisecond), want.Counts["documents"], allIndexed.Round(time.Millisecond),
		resumed.Round(time.Millisecond), cleanTook.Round(time.Millisecond))

	if diffs := sameIndex(want, readIndex(t, data)); len(diffs) > 0 {
		t.Errorf("after the drill the index differs from a clean run's:\n%s\ningest:\n%s", strings.Join(diffs, "\n"), ingestOut.String())
	}
	if out := mustExo(t, "dlq", "list", "--data", data); !strings.Contains(out, "no dead letters") {
		t.Errorf("dead letters after the drill:\n%s", out)
	}
	if out, errOut, err := exo(t, "check", "--data", data); err != nil || !strings.Contains(out, "no differences") {
		t.Errorf("check after the drill: exit %d\n%s%s", exitCode(err), out, errOut)
	}
	if out := mustExo(t, "ingest", corpus, "--data", data, "--json"); !strings.Contains(out, `"sent": 0`) {
		t.Errorf("a second ingest after the drill sends documents again (a source hash saved for a document not handed on?):\n%s", out)
	}

	start := time.Now()
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := up.Wait(); err != nil {
		t.Errorf("up after the drill: %v\n%s", err, upErr.String())
	}
	t.Logf("up stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// countDocs counts the indexed documents of a data directory (0 while it
// cannot be read).
func countDocs(dataDir string) int {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "exocortex.db")+"?mode=ro")
	if err != nil {
		return 0
	}
	defer db.Close()
	var n int
	if db.QueryRow("SELECT count(*) FROM documents").Scan(&n) != nil {
		return 0
	}
	return n
}

// TestIngestOnAFullDiskWaitsAndNamesTheDisk: an ingest that meets a full
// disk says so and waits; interrupted, its error names the store's disk,
// not a deadline.
func TestIngestOnAFullDiskWaitsAndNamesTheDisk(t *testing.T) {
	disk := bustest.Tmpfs(t, 32)
	vault := t.TempDir()
	writeCorpus(t, vault, 5)
	data := filepath.Join(disk, "data")
	up, upErr := startUpLogged(t, data, "--http", "off", "--no-models", "--stop-timeout", "5s")
	ballast := filepath.Join(disk, "ballast")
	bustest.FillDisk(t, ballast)
	t.Cleanup(func() { _ = os.Remove(ballast) })

	ingest := exec.Command(binary, "ingest", vault, "--data", data)
	ingest.Env = append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=")
	stderr := &lockedBuffer{}
	ingest.Stderr = stderr
	if err := ingest.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ingest.Wait() }()
	t.Cleanup(func() {
		if ingest.ProcessState == nil {
			_ = ingest.Process.Kill()
			<-done
		}
	})
	store := filepath.Join(data, "nats")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "ingest: waiting: full: the NATS store at "+store+" is out of disk space") {
		if time.Now().After(deadline) {
			t.Fatalf("ingest on a full disk does not say it waits for space:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := ingest.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("ingest still waiting 30s after Ctrl-C:\n%s", stderr.String())
	}
	msg := stderr.String()
	if code := exitCode(err); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	last := lastLine(msg)
	if !strings.Contains(last, "the NATS store at "+store+" is out of disk space") || strings.Contains(last, "deadline exceeded") {
		t.Errorf("the interrupted ingest's error does not name the disk:\n%s", msg)
	}
	t.Logf("interrupted: %s", last)

	// And up, on the disk still full, stops within its --stop-timeout.
	start := time.Now()
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	upDone := make(chan error, 1)
	go func() { upDone <- up.Wait() }()
	select {
	case err := <-upDone:
		t.Logf("up on a full disk stopped %s after SIGTERM (exit status %d): %s", time.Since(start).Round(time.Millisecond), exitCode(err), lastLine(upErr.String()))
	case <-time.After(8 * time.Second):
		t.Fatalf("up on a full disk still running 8s after SIGTERM (--stop-timeout 5s):\n%s", upErr.String())
	}
}
