package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

func TestAFolderOverTheInotifyLimitIsPolledAndSaysSo(t *testing.T) {
	vault := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.MkdirAll(filepath.Join(vault, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var sent []string
	publish := func(_ context.Context, ev *schemas.DocChanged) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, filepath.Base(ev.Path))
		return nil
	}
	var logs strings.Builder
	var logMu sync.Mutex
	log := zerolog.New(zerolog.SyncWriter(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	})))
	s, err := New(Config{Folders: []string{vault}, PollEvery: 200 * time.Millisecond}, bus.NewMemKV(), publish, log)
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	s.addWatch = func(w *fsnotify.Watcher, dir string) error {
		if added == 2 {
			return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: syscall.ENOSPC}
		}
		added++
		return w.Add(dir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(5 * time.Second)
	for s.Status().LastReconcile.IsZero() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	st := s.Status()
	if st.Folders[0].Mode != ModePolling || !strings.Contains(st.Folders[0].Why, "max_user_watches") {
		t.Fatalf("status: %+v, want polling because of the inotify limit", st.Folders)
	}
	logMu.Lock()
	said := strings.Contains(logs.String(), "watching folder by polling") && strings.Contains(logs.String(), "max_user_watches")
	logMu.Unlock()
	if !said {
		t.Errorf("the log does not say the folder is polled: %s", logs.String())
	}
	// Polled, it still follows the folder, in its deepest folders too.
	if err := os.WriteFile(filepath.Join(vault, "c", "Crows.md"), []byte("Crows use tools."), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("the new note was not sent: %v", sent)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
