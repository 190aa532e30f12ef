package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/bus/bustest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

func TestIsOutOfSpaceKnowsEveryStoresWayOfSayingIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a write that failed with ENOSPC", fmt.Errorf("append op log: %w", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), true},
		{"SQLite's SQLITE_FULL", errors.New("index batch: database or disk is full (13)"), true},
		{"JetStream's store limit", errors.New("nats: API error: code=400 err_code=10023 description=insufficient resources"), true},
		{"the bus's own sentinel", fmt.Errorf("publish: %w", bus.ErrDiskFull), true},
		{"a timeout", context.DeadlineExceeded, false},
		{"a provider failure", errors.New("llm: 503 service unavailable"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bus.IsOutOfSpace(tc.err); got != tc.want {
				t.Errorf("IsOutOfSpace(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestAFullDiskPausesTheStagesAndWorkResumesWhenSpaceReturns fills the disk
// of the embedded server's store (a small tmpfs) while a stage relays
// documents into chunks, then frees it: every document comes through, none
// is dead-lettered, and JetStream was restarted by the bus, not by hand.
func TestAFullDiskPausesTheStagesAndWorkResumesWhenSpaceReturns(t *testing.T) {
	disk := bustest.Tmpfs(t, 16)
	var logs syncBuffer
	b, err := bus.Open(context.Background(), bus.Options{
		Server:    bus.ServerOptions{StoreDir: filepath.Join(disk, "nats"), Listen: "127.0.0.1:-1"},
		DiskGuard: bus.DiskGuardOptions{Every: 100 * time.Millisecond},
		Log:       zerolog.New(&logs).Level(zerolog.InfoLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	relay := bus.StageSpec{Name: "relay", Stream: stage.StreamIngest, Filters: []string{schemas.SubjectDocChanged}, AckWait: 2 * time.Second, MaxDeliver: 2}
	sink := bus.StageSpec{Name: "sink", Stream: stage.StreamIngest, Filters: []string{schemas.SubjectChunkCreated}, AckWait: 2 * time.Second, MaxDeliver: 2}
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Streams: stage.Streams(), Stages: []bus.StageSpec{relay, sink}}); err != nil {
		t.Fatal(err)
	}
	const docs = 300
	text := strings.Repeat("a line of a note that takes some room on disk. ", 40)
	var mu sync.Mutex
	handled, got := 0, map[string]bool{}
	run(t, b, relay, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		doc, err := bus.Decode[*schemas.DocChanged](m)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		handled++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return []schemas.Event{&schemas.ChunkCreated{ChunkID: doc.DocID + "-c", DocID: doc.DocID, Hash: doc.Hash, Text: text}}, nil
	}))
	run(t, b, sink, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		ch, err := bus.Decode[*schemas.ChunkCreated](m)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		got[ch.ChunkID] = true
		mu.Unlock()
		return nil, nil
	}))

	// The source: like ingest, it waits while the disk is full.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	published := make(chan error, 1)
	go func() {
		for i := 0; i < docs; i++ {
			ev := &schemas.DocChanged{DocID: fmt.Sprintf("doc-%03d", i), Hash: fmt.Sprintf("h%d", i), Version: 1, Title: "t",
				Blocks: []schemas.Block{{ID: fmt.Sprintf("b%d", i), Type: "p", Text: text}}}
			for {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := b.Publish(pctx, ev, "trace-disk")
				pcancel()
				if err == nil {
					break
				}
				if werr := b.WaitForSpace(ctx); werr != nil || ctx.Err() != nil {
					published <- fmt.Errorf("publish %s: %v (disk %+v)", ev.DocID, err, mustDisk(b))
					return
				}
			}
		}
		published <- nil
	}()

	waitFor(t, "a third of the documents handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled >= docs/3 })
	ballast := filepath.Join(disk, "ballast")
	bustest.FillDisk(t, ballast)
	waitFor(t, "the bus to find the disk full", func() bool { return mustDisk(b).Full })
	st := mustDisk(b)
	if !strings.Contains(st.Message(), "out of disk space") || !strings.Contains(st.Message(), filepath.Join(disk, "nats")) {
		t.Errorf("disk state says %q: want it to name the store and the lack of space", st.Message())
	}
	time.Sleep(time.Second) // stages meet the full disk
	mu.Lock()
	during := len(got)
	mu.Unlock()
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == docs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after space returned, %d of %d documents came through (%d before it was freed); disk %+v\nlog:\n%s", n, docs, during, mustDisk(b), logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all %d documents through %s after space was freed (%d before)", docs, time.Since(freed).Round(time.Millisecond), during)
	counts, err := b.DeadLetterCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for st, n := range counts {
		if n > 0 {
			t.Errorf("stage %s dead-lettered %d messages for a full disk", st, n)
		}
	}
	if st := mustDisk(b); st.Full || st.Episodes == 0 || st.Restarts == 0 {
		t.Errorf("disk state after freeing = %+v: want not full, one episode or more, JetStream restarted", st)
	}
	if !strings.Contains(logs.String(), "disk full: the NATS store at") || !strings.Contains(logs.String(), "intake resumed") {
		t.Errorf("the log does not tell of the full disk and the resume:\n%s", logs.String())
	}
}

func mustDisk(b *bus.Bus) bus.DiskState {
	st, _ := b.DiskState(context.Background())
	return st
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAStoreAtItsLimitHoldsMessagesInsteadOfDeadLetteringThem: where no
// disk can be filled, JetStream's own store limit (up --max-store) is: a
// stage whose output does not fit holds its messages and tries again as the
// next stage frees room, and nothing is dead-lettered.
func TestAStoreAtItsLimitHoldsMessagesInsteadOfDeadLetteringThem(t *testing.T) {
	b, err := bus.Open(context.Background(), bus.Options{
		Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", MaxStore: 1 << 20},
		Log:    zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	relay := bus.StageSpec{Name: "relay", Stream: stage.StreamIngest, Filters: []string{schemas.SubjectDocChanged}, AckWait: 2 * time.Second, MaxDeliver: 2}
	sink := bus.StageSpec{Name: "sink", Stream: stage.StreamIngest, Filters: []string{schemas.SubjectChunkCreated}, AckWait: 2 * time.Second, MaxDeliver: 2}
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Streams: stage.Streams(), Stages: []bus.StageSpec{relay, sink}}); err != nil {
		t.Fatal(err)
	}
	const docs = 60
	big := strings.Repeat("x", 40<<10) // 60 outputs of 40 KiB: over twice the store
	var mu sync.Mutex
	got := map[string]bool{}
	gate := make(chan struct{})
	run(t, b, relay, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		doc, err := bus.Decode[*schemas.DocChanged](m)
		if err != nil {
			return nil, err
		}
		return []schemas.Event{&schemas.ChunkCreated{ChunkID: doc.DocID + "-c", DocID: doc.DocID, Hash: doc.Hash, Text: big}}, nil
	}))
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	run(t, b, sink, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		<-gate // the sink is slow to start: the store fills up
		ch, err := bus.Decode[*schemas.ChunkCreated](m)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		got[ch.ChunkID] = true
		mu.Unlock()
		return nil, nil
	}))
	t.Cleanup(open) // before the stages stop
	// The sink starts after longer than MaxDeliver × AckWait would allow.
	go func() { time.Sleep(3 * time.Second); open() }()
	for i := 0; i < docs; i++ {
		ev := &schemas.DocChanged{DocID: fmt.Sprintf("doc-%03d", i), Hash: fmt.Sprintf("h%d", i), Version: 1, Title: "t",
			Blocks: []schemas.Block{{ID: fmt.Sprintf("b%d", i), Type: "p", Text: "short"}}}
		for try := 0; ; try++ {
			_, err := b.Publish(context.Background(), ev, "trace-limit")
			if err == nil {
				break
			}
			if !bus.IsOutOfSpace(err) || try == 600 {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the source, too, waits for room
		}
	}
	waitFor(t, "every output through the sink", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == docs })
	counts, err := b.DeadLetterCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for st, n := range counts {
		if n > 0 {
			t.Errorf("stage %s dead-lettered %d messages for a full store", st, n)
		}
	}
}
