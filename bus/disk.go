package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// A full disk, as the embedded server meets it (nats-server 2.15, one
// node): a write that fails with ENOSPC leaves its stream with a sticky write
// error; the server answers no more publishes to it (clients time out), logs
// "JetStream failed to store a msg ... no space left on device", and stays
// so after space returns. Only restarting JetStream clears it. The disk guard
// below watches for that (the server's log, the free space of the store's
// volume, the out-of-space errors of handlers: SQLite's SQLITE_FULL, the
// vector index's op log), pauses intake while the disk is full, and once
// space is back restarts JetStream in-process on the same store, so work
// resumes by itself. A store that reaches JetStream's own limit (--max-store)
// answers "insufficient resources" instead: nothing is stuck there, and a
// message that fails for it is held and retried as for a full disk.

// ErrDiskFull is the bus's out-of-space error: the embedded JetStream store's
// volume (or the volume of whatever failed) has no room left.
var ErrDiskFull = errors.New("out of disk space")

// SubjectDiskState is the core NATS subject on which a process that runs the
// embedded server answers with its DiskState (JSON), so other processes (the
// CLI, workers) can say why the bus does not answer.
const SubjectDiskState = "exo.bus.disk"

// DiskState is what the disk guard knows of the embedded JetStream store's
// volume.
type DiskState struct {
	// Path is the JetStream store directory.
	Path string `json:"path"`
	// FreeBytes is the free space of its volume at the last poll.
	FreeBytes uint64 `json:"free_bytes"`
	// Full says that the volume is out of space (or a stage failed for want
	// of it): intake is paused until space returns.
	Full bool `json:"full"`
	// Since is when the volume was last found full.
	Since time.Time `json:"since,omitzero"`
	// Reason is the error that showed it.
	Reason string `json:"reason,omitempty"`
	// Episodes counts the times the volume was found full since start.
	Episodes int `json:"episodes"`
	// Restarts counts JetStream restarts after space returned.
	Restarts int `json:"restarts"`
	// MaxStore is the store's size limit in bytes (up --max-store, or the
	// server's own share of the volume); 0 when unknown.
	MaxStore int64 `json:"max_store,omitempty"`
}

// Message is the state in words, naming the store and its free space.
func (d DiskState) Message() string {
	if !d.Full {
		return fmt.Sprintf("ok, %s free at %s", humanize.IBytes(d.FreeBytes), d.Path)
	}
	return fmt.Sprintf("full: the NATS store at %s is out of disk space (%s free), intake paused since %s until space is freed",
		d.Path, humanize.IBytes(d.FreeBytes), d.Since.UTC().Format(time.RFC3339))
}

// IsOutOfSpace reports whether err says a disk (or JetStream's store limit)
// has no room left: ENOSPC, ErrDiskFull, SQLite's SQLITE_FULL, JetStream's
// "insufficient resources".
func IsOutOfSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrCodeInsufficientResources || apiErr.ErrorCode == jsErrCodeStorageResourcesExceeded) {
		return true
	}
	s := strings.ToLower(err.Error())
	for _, sign := range []string{"no space left on device", "database or disk is full", "sqlite_full", "insufficient resources", "insufficient storage resources", "disk quota exceeded"} {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}

// jsErrCodeInsufficientResources is JetStream's error code for a store
// (or memory) limit reached.
const jsErrCodeInsufficientResources = 10023

// jsErrCodeStorageResourcesExceeded is JetStream's error code for a stream
// or bucket whose reservation does not fit in the store.
const jsErrCodeStorageResourcesExceeded = 10047

// DiskGuardOptions tune the guard of the embedded server's store.
type DiskGuardOptions struct {
	// Every is how often free space is polled (default 1s).
	Every time.Duration
	// Reserve is the free space below which intake pauses (default 1% of
	// the volume, between 1 MiB and 64 MiB); intake resumes at twice it.
	Reserve uint64
}

// diskGuard watches the embedded server's store (see the comment at the top).
type diskGuard struct {
	b       *Bus
	dir     string // the store dir, as given to the server
	jsCfg   server.JetStreamConfig
	opts    DiskGuardOptions
	log     zerolog.Logger
	stop    chan struct{}
	stopped chan struct{}

	mu    sync.Mutex
	state DiskState
	// broken says JetStream met a write error: it is restarted when
	// space returns.
	broken bool
	// changed is closed (and replaced) at every change of Full.
	changed chan struct{}
}

func startDiskGuard(b *Bus, dir string, opts DiskGuardOptions) *diskGuard {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	g := &diskGuard{b: b, dir: dir, opts: opts, log: b.Log, stop: make(chan struct{}), stopped: make(chan struct{}), changed: make(chan struct{})}
	if c := b.Server.JetStreamConfig(); c != nil {
		g.jsCfg = *c
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	g.state.Path = abs
	g.state.MaxStore = max(g.jsCfg.MaxStore, 0)
	g.state.FreeBytes, _, _ = volumeSpace(dir)
	b.Server.SetLogger(serverLog{g: g}, false, false)
	_, _ = b.NC.Subscribe(SubjectDiskState, func(m *nats.Msg) {
		raw, _ := json.Marshal(g.get())
		_ = m.Respond(raw)
	})
	go g.run()
	return g
}

func (g *diskGuard) close() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
		<-g.stopped
	}
}

func (g *diskGuard) get() DiskState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

// reserve is the free space below which the volume counts as full.
func (g *diskGuard) reserve(total uint64) uint64 {
	if g.opts.Reserve > 0 {
		return g.opts.Reserve
	}
	r := total / 100
	return min(max(r, 1<<20), 64<<20)
}

// markFull records an out-of-space error; writeErr says JetStream itself
// failed a write (it is then restarted when space returns).
func (g *diskGuard) markFull(reason string, writeErr bool) {
	free, _, _ := volumeSpace(g.dir)
	g.mu.Lock()
	if writeErr {
		g.broken = true
	}
	g.state.FreeBytes = free
	if g.state.Full {
		g.mu.Unlock()
		return
	}
	g.state.Full, g.state.Since, g.state.Reason = true, time.Now(), reason
	g.state.Episodes++
	st := g.state
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
	g.log.Error().Str("path", st.Path).Uint64("free_bytes", st.FreeBytes).Str("reason", reason).
		Msgf("disk full: the NATS store at %s is out of disk space (%s free); intake paused until space is freed", st.Path, humanize.IBytes(st.FreeBytes))
}

func (g *diskGuard) run() {
	defer close(g.stopped)
	t := time.NewTicker(g.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		free, total, err := volumeSpace(g.dir)
		if err != nil {
			// Free space unknown (no statfs here): a pause found by an
			// error is lifted after a while, and the work tried again.
			if st := g.get(); st.Full && time.Since(st.Since) > blindRetry {
				g.resume(0)
			}
			continue
		}
		reserve := g.reserve(total)
		g.mu.Lock()
		g.state.FreeBytes = free
		full := g.state.Full
		g.mu.Unlock()
		switch {
		case !full && free < reserve:
			g.markFull(fmt.Sprintf("%s free, under the %s reserve", humanize.IBytes(free), humanize.IBytes(reserve)), false)
		case full && free >= 2*reserve:
			g.resume(free)
		}
	}
}

// resume restarts JetStream when it met a write error, then lifts the pause.
func (g *diskGuard) resume(free uint64) {
	g.mu.Lock()
	broken := g.broken
	g.mu.Unlock()
	if broken {
		if err := g.restartJetStream(); err != nil {
			g.log.Error().Err(err).Str("path", g.state.Path).Msg("space is back but JetStream did not restart; trying again")
			return
		}
	}
	g.mu.Lock()
	g.broken = false
	g.state.Full, g.state.Reason = false, ""
	if broken {
		g.state.Restarts++
	}
	took := time.Since(g.state.Since)
	path := g.state.Path
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
	g.log.Warn().Str("path", path).Uint64("free_bytes", free).Bool("jetstream_restarted", broken).Dur("paused", took).
		Msgf("disk space is back at %s (%s free); intake resumed", path, humanize.IBytes(free))
}

// blindRetry is how long a pause lasts where free space cannot be read.
const blindRetry = 10 * time.Second

// restartJetStream shuts JetStream down and enables it again on the same
// store with the same limits: every stream is reloaded from its files,
// which clears the write error a full disk left.
func (g *diskGuard) restartJetStream() error {
	s := g.b.Server
	cfg := g.jsCfg
	// EnableJetStream appends "jetstream" to the store dir it is given.
	cfg.StoreDir = filepath.Dir(cfg.StoreDir)
	if s.JetStreamEnabled() {
		if err := s.ShutdownJetStream(); err != nil {
			return fmt.Errorf("restart jetstream: shut down: %w", err)
		}
	}
	if err := s.EnableJetStream(&cfg); err != nil {
		return fmt.Errorf("restart jetstream on %s: %w", cfg.StoreDir, err)
	}
	return nil
}

// serverLog is the embedded server's logger: its write errors tell the
// guard of a full disk; the rest goes to the debug log.
type serverLog struct{ g *diskGuard }

func (l serverLog) Noticef(format string, v ...any) {
	l.g.log.Debug().Str("component", "nats-server").Msgf(format, v...)
}
func (l serverLog) Warnf(format string, v ...any) { l.check("warn", format, v...) }
func (l serverLog) Errorf(format string, v ...any) {
	l.check("error", format, v...)
}
func (l serverLog) Fatalf(format string, v ...any) { l.check("fatal", format, v...) }
func (l serverLog) Debugf(string, ...any)          {}
func (l serverLog) Tracef(string, ...any)          {}

func (l serverLog) check(level, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.g.log.Debug().Str("component", "nats-server").Str("level", level).Msg(msg)
	low := strings.ToLower(msg)
	if strings.Contains(low, "no space left on device") || strings.Contains(low, "out of space") || strings.Contains(low, "out of storage") {
		l.g.markFull(msg, true)
	}
}

// noteOutOfSpace is told of a handler's or a publish's out-of-space error.
func (b *Bus) noteOutOfSpace(err error) {
	if b.guard != nil {
		b.guard.markFull(err.Error(), false)
	}
}

// DiskState is the embedded store's disk: this process's guard's when it
// runs the embedded server, else the answer of the process that does (ok
// false when none answers: an external server).
func (b *Bus) DiskState(ctx context.Context) (DiskState, bool) {
	if b.guard != nil {
		return b.guard.get(), true
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m, err := b.NC.RequestWithContext(ctx, SubjectDiskState, nil)
	if err != nil {
		return DiskState{}, false
	}
	var st DiskState
	if json.Unmarshal(m.Data, &st) != nil {
		return DiskState{}, false
	}
	return st, true
}

// diskView caches the disk state for the stage runners of a process that
// does not run the embedded server (one request every two seconds at most).
type diskView struct {
	mu   sync.Mutex
	at   time.Time
	st   DiskState
	seen bool
}

// diskNow is the disk state as stages see it, cheaply.
func (b *Bus) diskNow() DiskState {
	if b.guard != nil {
		return b.guard.get()
	}
	b.disk.mu.Lock()
	defer b.disk.mu.Unlock()
	if time.Since(b.disk.at) < 2*time.Second {
		return b.disk.st
	}
	b.disk.at = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if st, ok := b.DiskState(ctx); ok {
		b.disk.st, b.disk.seen = st, true
	}
	return b.disk.st
}

// WaitForSpace blocks while the embedded store's disk is full (polling the
// state about every second) and returns nil once it is not, or ctx's error.
func (b *Bus) WaitForSpace(ctx context.Context) error {
	for {
		if !b.diskNow().Full {
			return nil
		}
		var changed <-chan struct{}
		if b.guard != nil {
			b.guard.mu.Lock()
			changed = b.guard.changed
			b.guard.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

// untilFull is ctx with a timeout that also ends as soon as this process's
// guard finds the disk full: a publish to a stream stuck on a full disk is
// never answered, and waiting out the timeout would only delay the pause.
func (b *Bus) untilFull(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	if b.guard == nil {
		return ctx, cancel
	}
	go func() {
		for {
			b.guard.mu.Lock()
			full, changed := b.guard.state.Full, b.guard.changed
			b.guard.mu.Unlock()
			if full {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return ctx, cancel
}
