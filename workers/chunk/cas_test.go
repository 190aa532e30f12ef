package chunk

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/chunking/chunkingtest"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

// interleaving is a KV that runs cut in just before the first write that
// passes through it: another worker's save landing between this worker's
// read of the manifest and its write.
type interleaving struct {
	bus.RevKV
	once sync.Once
	cut  func()
}

func (k *interleaving) before() { k.once.Do(k.cut) }

func (k *interleaving) Put(ctx context.Context, key string, value []byte) error {
	k.before()
	return k.RevKV.Put(ctx, key, value)
}

func (k *interleaving) PutIf(ctx context.Context, key string, value []byte, rev uint64) (bool, error) {
	k.before()
	return k.RevKV.PutIf(ctx, key, value, rev)
}

// TestTwoConcurrentResendsCannotSaveAStaleManifestOverANewerOne: a worker
// saving version 1 of a document's manifest is overtaken, between its read
// and its write, by one saving the next version; the newer manifest stays.
func TestTwoConcurrentResendsCannotSaveAStaleManifestOverANewerOne(t *testing.T) {
	b := stagetest.New(t)
	ctx := context.Background()
	kv, err := b.KV(ctx, stage.BucketChunks)
	if err != nil {
		t.Fatal(err)
	}
	rkv, ok := kv.(bus.RevKV)
	if !ok {
		t.Fatal("the JetStream KV does not offer revisions")
	}
	v1 := chunkingtest.LongDoc("race", 4).Doc
	v2 := cloneDoc(&v1)
	v2.Version, v2.Hash = v1.Version+1, "hash-v2"
	v2.Blocks = v2.Blocks[:len(v2.Blocks)/2]

	newer := NewHandler(chunking.DefaultConfig(), rkv)
	slow := &interleaving{RevKV: rkv, cut: func() { run(t, newer, v2, 1) }}
	stale := NewHandler(chunking.DefaultConfig(), slow)

	m := msgOf(t, &v1, 1)
	if _, err := stale.Handle(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := m.Published(ctx); err != nil {
		t.Fatalf("saving the overtaken manifest: %v", err)
	}
	raw, err := kv.Get(ctx, ManifestKey(v1.DocID))
	if err != nil {
		t.Fatal(err)
	}
	var mf manifest
	if err := json.Unmarshal(raw, &mf); err != nil {
		t.Fatal(err)
	}
	if mf.Version != v2.Version || mf.DocHash != "hash-v2" || len(mf.Chunks) != len(chunking.Split(v2, chunking.DefaultConfig())) {
		t.Errorf("manifest after both saves: version %d hash %q with %d chunks; want version %d's (%d chunks)",
			mf.Version, mf.DocHash, len(mf.Chunks), v2.Version, len(chunking.Split(v2, chunking.DefaultConfig())))
	}
}
