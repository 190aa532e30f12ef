package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/exocortex/exocortex/bus/bustest"
)

// exoIn runs the binary with extra environment variables and returns its
// combined output and exit code.
func exoIn(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "EXOCORTEX_DATA=", "EXOCORTEX_NATS=", "EXOCORTEX_NATS_USER=", "EXOCORTEX_NATS_PASSWORD=",
		"EXOCORTEX_NATS_NKEY=", "EXOCORTEX_NATS_CREDS=", "EXOCORTEX_NATS_TLS_CA="), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

func upURL(t *testing.T, data string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(data, "nats.url"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %04o, want %04o", path, got, want)
	}
}

func TestUpLocksNATSAndTheDataDirectory(t *testing.T) {
	t.Parallel()
	// A data directory that a looser umask made open to everyone, with an
	// index of an earlier version and a file that is not exocortex's.
	data, vault, other := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(data, "vectors", "old-model", "raw.bin"), "vectors of an earlier model")
	write(t, filepath.Join(data, "exocortex.db"), "")
	write(t, filepath.Join(data, "notes.txt"), "the user's own")
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(vault, "a.md"), "# Bees\n\nBees make honey from nectar.\n")
	_, upErr := startUp(t, data, nil, "--no-models", "--http", "off", "--log-level", "info")
	url := upURL(t, data)

	// Another process of this machine, without the credentials, is turned
	// away before it can publish to kb.> or read a bucket.
	if nc, err := nats.Connect(url); !errors.Is(err, nats.ErrAuthorization) {
		if err == nil {
			nc.Close()
		}
		t.Fatalf("a client without credentials: %v, want an authorization violation", err)
	}
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	stranger := filepath.Join(other, "stranger.nk")
	if err := os.WriteFile(stranger, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	sign, err := nats.NkeyOptionFromSeed(stranger)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(url, sign); !errors.Is(err, nats.ErrAuthorization) {
		if err == nil {
			nc.Close()
		}
		t.Fatalf("a client with another nkey: %v, want an authorization violation", err)
	}
	// With the data directory's seed, a client reads the buckets.
	nc := connectUp(t, data)
	if _, err := nc.Request("$JS.API.STREAM.INFO.KB_INGEST", nil, 5e9); err != nil {
		t.Errorf("a client with the data directory's nkey: %v", err)
	}

	// The CLI on the same data directory sends the credentials up wrote.
	if out, code := exoIn(t, nil, "ingest", vault, "--data", data); code != 0 || !strings.Contains(out, "feeding the running system") {
		t.Fatalf("ingest --data: exit %d\n%s", code, out)
	}
	if out, code := exoIn(t, nil, "search", "honey", "--data", data); code != 0 || !strings.Contains(out, "[honey]") {
		t.Errorf("search --data: exit %d\n%s", code, out)
	}
	// Elsewhere, without them, it is refused and told where they are.
	out, code := exoIn(t, nil, "status", "--nats", url, "--data", other)
	if code != 1 || !strings.Contains(out, "Authorization Violation") || !strings.Contains(out, "nats.nk") || !strings.Contains(out, "--nats-creds") {
		t.Errorf("status on another data directory without credentials: exit %d\n%s", code, out)
	}
	seedFile := filepath.Join(data, "nats.nk")
	for name, run := range map[string]func() (string, int){
		"--nats-creds": func() (string, int) {
			return exoIn(t, nil, "status", "--nats", url, "--data", other, "--nats-creds", seedFile)
		},
		"EXOCORTEX_NATS_NKEY": func() (string, int) {
			return exoIn(t, []string{"EXOCORTEX_NATS_NKEY=" + seedFile}, "status", "--nats", url, "--data", other)
		},
		"EXOCORTEX_NATS_CREDS": func() (string, int) {
			return exoIn(t, []string{"EXOCORTEX_NATS_CREDS=" + seedFile}, "status", "--nats", url, "--data", other)
		},
	} {
		if out, code := run(); code != 0 || !strings.Contains(out, "dead-lettered") {
			t.Errorf("status with %s: exit %d\n%s", name, code, out)
		}
	}
	if out, code := exoIn(t, nil, "status", "--nats", url, "--data", other, "--nats-creds", stranger); code != 1 || !strings.Contains(out, stranger) {
		t.Errorf("status with another nkey: exit %d\n%s", code, out)
	}

	// The data directory and what is in it are the owner's alone.
	wantMode(t, data, 0o700)
	wantMode(t, filepath.Join(data, "vectors"), 0o700)
	wantMode(t, filepath.Join(data, "vectors", "old-model"), 0o700)
	wantMode(t, filepath.Join(data, "vectors", "old-model", "raw.bin"), 0o600)
	wantMode(t, filepath.Join(data, "notes.txt"), 0o644)
	for _, f := range []string{"nats.nk", "nats.url", "exocortex.db", "exocortex.db-wal", "exocortex.db-shm", "answers.db"} {
		wantMode(t, filepath.Join(data, f), 0o600)
	}
	wantMode(t, filepath.Join(data, "nats"), 0o700)
	if log := upErr.String(); !strings.Contains(log, "tightened the data directory's permissions") ||
		!strings.Contains(log, "not exocortex's") || !strings.Contains(log, "notes.txt") {
		t.Errorf("up did not say that it tightened the permissions and left notes.txt alone:\n%s", log)
	}
}

func TestUpBeyondLoopbackNeedsTLSAndClientsThatTrustIt(t *testing.T) {
	t.Parallel()
	out, code := exoIn(t, nil, "up", "--data", t.TempDir(), "--listen", "0.0.0.0:-1", "--no-models", "--http", "off")
	if code != 1 || !strings.Contains(out, "without TLS") || !strings.Contains(out, "--tls-cert FILE and --tls-key FILE") {
		t.Fatalf("up --listen 0.0.0.0:-1 without TLS: exit %d\n%s", code, out)
	}
	files := bustest.TLS(t, "127.0.0.1")
	if out, code := exoIn(t, nil, "up", "--data", t.TempDir(), "--tls-cert", files.Cert, "--no-models", "--http", "off"); code != 2 || !strings.Contains(out, "--tls-key") {
		t.Errorf("up --tls-cert without --tls-key: exit %d\n%s", code, out)
	}

	data, other := t.TempDir(), t.TempDir()
	explicit := []string{"EXOCORTEX_NATS_USER=exo", "EXOCORTEX_NATS_PASSWORD=pa55"}
	startUp(t, data, explicit, "--no-models", "--http", "off", "--listen", "0.0.0.0:-1", "--tls-cert", files.Cert, "--tls-key", files.Key)
	url := upURL(t, data)
	if !strings.HasPrefix(url, "tls://0.0.0.0:") {
		t.Fatalf("up's NATS URL %s is not tls://0.0.0.0:PORT", url)
	}
	// The CLI on the data directory trusts the certificate up serves.
	if out, code := exoIn(t, nil, "status", "--data", data); code != 0 || !strings.Contains(out, "running, NATS tls://") {
		t.Errorf("status --data over TLS: exit %d\n%s", code, out)
	}
	// Another machine names the host the certificate is for and its CA.
	remote := strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
	creds := filepath.Join(data, "nats.nk")
	if out, code := exoIn(t, nil, "status", "--nats", remote, "--data", other, "--nats-creds", creds, "--tls-ca", files.CA); code != 0 || !strings.Contains(out, "dead-lettered") {
		t.Errorf("status --tls-ca: exit %d\n%s", code, out)
	}
	if out, code := exoIn(t, []string{"EXOCORTEX_NATS_TLS_CA=" + files.CA}, "status", "--nats", remote, "--data", other, "--nats-creds", creds); code != 0 {
		t.Errorf("status with EXOCORTEX_NATS_TLS_CA: exit %d\n%s", code, out)
	}
	// up admits the credentials it was given besides its own.
	if out, code := exoIn(t, append(explicit, "EXOCORTEX_NATS_TLS_CA="+files.CA), "status", "--nats", remote, "--data", other); code != 0 {
		t.Errorf("status with EXOCORTEX_NATS_USER and _PASSWORD: exit %d\n%s", code, out)
	}
	if out, code := exoIn(t, nil, "status", "--nats", remote, "--data", other, "--nats-creds", creds); code != 1 || !strings.Contains(out, "certificate") {
		t.Errorf("status without the CA: exit %d\n%s", code, out)
	}
	// A client without TLS is turned away.
	sign, err := nats.NkeyOptionFromSeed(creds)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(strings.Replace(remote, "tls://", "nats://", 1), sign); err == nil {
		nc.Close()
		t.Error("a client without TLS connected")
	}
	if nc, err := nats.Connect(remote, sign, nats.RootCAs(files.CA)); err != nil {
		t.Errorf("a nats.go client over TLS with the CA: %v", err)
	} else {
		nc.Close()
	}
}
