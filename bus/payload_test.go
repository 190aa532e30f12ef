package bus_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// chunkSpec is a stage reading document changes from the ingest stream.
var chunkSpec = bus.StageSpec{Name: "chunk", Stream: stage.StreamIngest, Filters: []string{schemas.SubjectDocChanged}}

// smallBus runs a real embedded server whose max payload is 64 KiB, so that
// a few hundred kilobytes exceed it.
func smallBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.Open(context.Background(), bus.Options{
		Server: bus.ServerOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", MaxPayload: 64 << 10},
		Log:    zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := bus.EnsureTopology(context.Background(), b.JS, bus.Topology{Streams: stage.Streams(), Stages: []bus.StageSpec{chunkSpec}, Buckets: stage.Buckets()}); err != nil {
		t.Fatal(err)
	}
	return b
}

func bigDoc(n int) *schemas.DocChanged {
	d := &schemas.DocChanged{DocID: "big", Source: schemas.SourceMarkdown, Path: "/big.md", Hash: fmt.Sprintf("h%d", n), Version: 1}
	for i := 0; i < n; i++ {
		d.Blocks = append(d.Blocks, schemas.Block{ID: fmt.Sprintf("big#%d", i), Type: schemas.BlockParagraph,
			Text: fmt.Sprintf("paragraph %d %s", i, strings.Repeat("lorem ipsum ", 20))})
	}
	return d
}

func TestLargeMessagesTravelThroughTheObjectStore(t *testing.T) {
	ctx := context.Background()
	b := smallBus(t)
	doc := bigDoc(2000) // about 600 KB of JSON, ten times the max payload

	if _, err := b.Publish(ctx, doc, "trace-big"); err != nil {
		t.Fatalf("publishing a document over the max payload: %v", err)
	}
	var got atomic.Pointer[schemas.DocChanged]
	spec := chunkSpec
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		d, err := bus.Decode[*schemas.DocChanged](m)
		if err != nil {
			return nil, err
		}
		got.Store(d)
		return nil, nil
	}))
	waitFor(t, "the big document", func() bool { return got.Load() != nil })
	if d := got.Load(); len(d.Blocks) != 2000 || d.Blocks[1999].Text != doc.Blocks[1999].Text || d.TraceID != "trace-big" {
		t.Fatalf("handler got %d blocks, trace %q", len(d.Blocks), d.TraceID)
	}
	obs, err := b.JS.ObjectStore(ctx, bus.BucketPayloads)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the body to be deleted after the ack", func() bool {
		infos, err := obs.List(ctx)
		return err == jetstream.ErrNoObjectsFound || err == nil && len(infos) == 0
	})

	t.Run("a small message stays inline", func(t *testing.T) {
		before, _ := obs.List(ctx)
		if _, err := b.Publish(ctx, bigDoc(3), "trace-small"); err != nil {
			t.Fatal(err)
		}
		after, _ := obs.List(ctx)
		if len(after) != len(before) {
			t.Errorf("a small message put an object: %d -> %d", len(before), len(after))
		}
	})
}

func TestLargeKVValuesRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := smallBus(t)
	kv, err := b.KV(ctx, stage.BucketChunks)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("manifest "), 50000) // 450 KB
	if err := kv.Put(ctx, "chunks.big", big); err != nil {
		t.Fatalf("put a value over the max payload: %v", err)
	}
	got, err := kv.Get(ctx, "chunks.big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	if err := kv.Put(ctx, "chunks.small", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, _ := kv.Get(ctx, "chunks.small"); string(got) != "x" {
		t.Errorf("small value = %q", got)
	}
	if err := kv.Delete(ctx, "chunks.big"); err != nil {
		t.Fatal(err)
	}
	if got, err := kv.Get(ctx, "chunks.big"); got != nil || err != nil {
		t.Errorf("after delete: %d bytes, %v", len(got), err)
	}
	obs, err := b.JS.ObjectStore(ctx, bus.BucketValues)
	if err != nil {
		t.Fatal(err)
	}
	if infos, _ := obs.List(ctx); len(infos) != 0 {
		t.Errorf("%d objects left after deleting the key", len(infos))
	}
}

func TestALargeMessageIsDeadLetteredAndReplayedWithItsBody(t *testing.T) {
	ctx := context.Background()
	b := smallBus(t)
	doc := bigDoc(1000)
	if _, err := b.Publish(ctx, doc, "trace-poison"); err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	fail.Store(true)
	var got atomic.Int64
	spec := chunkSpec
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		d, err := bus.Decode[*schemas.DocChanged](m)
		if err != nil {
			return nil, err
		}
		if fail.Load() {
			return nil, bus.Permanent(fmt.Errorf("refused"))
		}
		got.Store(int64(len(d.Blocks)))
		return nil, nil
	}))
	var letters []bus.DeadLetter
	waitFor(t, "the dead letter", func() bool {
		letters = deadLetters(t, b, chunkSpec.Name)
		return len(letters) == 1
	})
	if !strings.Contains(letters[0].Reason, "refused") {
		t.Errorf("dead letter reason %q, want the handler's (dead-lettered at once, not after max deliveries)", letters[0].Reason)
	}
	if len(letters[0].Data) > 4096 || !strings.Contains(string(letters[0].Data), "payload_object") {
		t.Errorf("the dead letter carries %d bytes, want the small stub naming the object", len(letters[0].Data))
	}
	fail.Store(false)
	if n, err := b.Replay(ctx, letters); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	waitFor(t, "the replayed document", func() bool { return got.Load() == 1000 })
}

// A dead letter is kept 90 days, a large message's body in KB_PAYLOADS 7: the
// dead letter keeps its own copy of the body, so a replay after the body
// expired (deleted here) still hands the stage the whole message, and the
// copy goes once the dead letter is replayed.
func TestALargeDeadLetterKeepsItsBodyAfterTheMessageBodyExpires(t *testing.T) {
	ctx := context.Background()
	b := smallBus(t)
	if _, err := b.Publish(ctx, bigDoc(1000), "trace-poison"); err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	fail.Store(true)
	var got atomic.Int64
	spec := chunkSpec
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		d, err := bus.Decode[*schemas.DocChanged](m)
		if err != nil {
			return nil, err
		}
		if fail.Load() {
			return nil, bus.Permanent(fmt.Errorf("refused"))
		}
		got.Store(int64(len(d.Blocks)))
		return nil, nil
	}))
	var letters []bus.DeadLetter
	waitFor(t, "the dead letter", func() bool {
		letters = deadLetters(t, b, chunkSpec.Name)
		return len(letters) == 1
	})
	payloads, err := b.JS.ObjectStore(ctx, bus.BucketPayloads)
	if err != nil {
		t.Fatal(err)
	}
	infos, _ := payloads.List(ctx)
	for _, info := range infos { // what its max age does after 7 days
		if err := payloads.Delete(ctx, info.Name); err != nil {
			t.Fatal(err)
		}
	}
	fail.Store(false)
	if n, err := b.Replay(ctx, letters); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	waitFor(t, "the replayed document", func() bool { return got.Load() == 1000 })
	if left := deadLetters(t, b, chunkSpec.Name); len(left) != 0 {
		t.Errorf("dead letters after the replay: %+v", left)
	}
	if kept, err := b.JS.ObjectStore(ctx, bus.BucketDLQBodies); err == nil {
		if infos, _ := kept.List(ctx); len(infos) != 0 {
			t.Errorf("%d dead-letter bodies left after the replay", len(infos))
		}
	}
}

// A large message dead-lettered by the only stage that reads its subject
// leaves no body behind in KB_PAYLOADS (the dead letter keeps its own copy),
// and once replayed and handled, neither copy is left.
func TestALargeDeadLetterLeavesNoMessageBodyBehind(t *testing.T) {
	ctx := context.Background()
	b := smallBus(t)
	if _, err := b.Publish(ctx, bigDoc(1000), "trace-poison"); err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	fail.Store(true)
	var got atomic.Int64
	spec := chunkSpec
	run(t, b, spec, bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		d, err := bus.Decode[*schemas.DocChanged](m)
		if err != nil {
			return nil, err
		}
		if fail.Load() {
			return nil, bus.Permanent(fmt.Errorf("refused"))
		}
		got.Store(int64(len(d.Blocks)))
		return nil, nil
	}))
	objects := func(bucket string) int {
		obs, err := b.JS.ObjectStore(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		infos, _ := obs.List(ctx)
		return len(infos)
	}
	var letters []bus.DeadLetter
	waitFor(t, "the dead letter", func() bool {
		letters = deadLetters(t, b, chunkSpec.Name)
		return len(letters) == 1
	})
	waitFor(t, "the message body to leave "+bus.BucketPayloads, func() bool { return objects(bus.BucketPayloads) == 0 })
	if n := objects(bus.BucketDLQBodies); n != 1 {
		t.Fatalf("%d bodies kept for the dead letter, want 1", n)
	}
	fail.Store(false)
	if n, err := b.Replay(ctx, letters); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	waitFor(t, "the replayed document", func() bool { return got.Load() == 1000 })
	waitFor(t, "no body left", func() bool { return objects(bus.BucketPayloads) == 0 && objects(bus.BucketDLQBodies) == 0 })
}
