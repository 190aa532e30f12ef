package system

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LockFile is the data directory's lock: the process whose embedded NATS
// server owns DATA/nats holds it (flock) for as long as the server runs, so
// that no second process (a status run while up starts, say) opens the
// same JetStream store at the same moment: two servers on one store race on
// its files ("rename .../o.dat.tmp: no such file or directory").
func LockFile(dataDir string) string { return filepath.Join(dataDir, "exocortex.lock") }

// ErrDataLocked is a data directory whose lock another process holds.
var ErrDataLocked = errors.New("the data directory is in use by another exocortex process")

// dirLock is a held data-directory lock.
type dirLock struct{ f *os.File }

func (l *dirLock) release() {
	if l != nil && l.f != nil {
		_ = l.f.Close() // closing the file drops the flock
		l.f = nil
	}
}

// tryLockDir takes the data directory's lock without waiting: nil, nil
// when another process holds it.
func tryLockDir(dataDir string) (*dirLock, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dataDir, err)
	}
	f, err := os.OpenFile(LockFile(dataDir), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockFile(dataDir), err)
	}
	busy, err := tryLockFile(f)
	if err != nil || busy {
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", LockFile(dataDir), err)
		}
		return nil, nil
	}
	return &dirLock{f: f}, nil
}

// lockDir takes the data directory's lock, waiting up to wait for a
// process that holds it (a command's short-lived embedded server) to let
// go; then it fails with ErrDataLocked, naming the system that runs there
// when one answers.
func lockDir(ctx context.Context, dataDir string, wait time.Duration) (*dirLock, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := tryLockDir(dataDir)
		if err != nil || l != nil {
			return l, err
		}
		if time.Now().After(deadline) {
			if url, ok := Running(dataDir); ok {
				return nil, fmt.Errorf("a system is already running on %s (NATS %s)", dataDir, url)
			}
			return nil, fmt.Errorf("%w: %s is held (waited %s); stop that process, or give --nats URL to join a running system", ErrDataLocked, LockFile(dataDir), wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runningStable is how long a system must answer on the data directory
// while its lock is held for AlreadyRunning to call it running: a
// command's own short-lived server (status with nothing running) is gone
// by then.
const runningStable = 3 * time.Second

// AlreadyRunning returns the NATS URL of a system that runs on dataDir and
// holds it, waiting out a command's short-lived server there; "" when the
// directory is free (or freed within dataLockWait).
func AlreadyRunning(ctx context.Context, dataDir string) (string, error) {
	var since time.Time
	var last string
	deadline := time.Now().Add(dataLockWait)
	for {
		l, err := tryLockDir(dataDir)
		if err != nil {
			return "", err
		}
		if l != nil {
			l.release()
			return "", nil
		}
		url, ok := Running(dataDir)
		switch {
		case !ok:
			since, last = time.Time{}, ""
		case url != last:
			since, last = time.Now(), url
		case time.Since(since) >= runningStable:
			return url, nil
		}
		if time.Now().After(deadline) {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
