package bus_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/stage/stagetest"
)

func TestEachKVReadsEveryLiveKeyWithItsLatestValueLargeOnesToo(t *testing.T) {
	ctx := context.Background()
	b := stagetest.New(t)
	kv, err := b.KV(ctx, stage.BucketChunks)
	if err != nil {
		t.Fatal(err)
	}
	large := bytes.Repeat([]byte("manifest "), bus.InlineLimit(b.NC)/9+100) // over one message: kept in KB_VALUES
	want := map[string][]byte{"doc.a": []byte("v2"), "doc.big": large}
	for _, put := range []struct{ k, v string }{{"doc.a", "v1"}, {"doc.a", "v2"}, {"doc.gone", "x"}, {"doc.big", string(large)}} {
		if err := kv.Put(ctx, put.k, []byte(put.v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "doc.gone"); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	n, err := b.EachKV(ctx, stage.BucketChunks, func(k string, v []byte) error {
		got[k] = bytes.Clone(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) || len(got) != len(want) {
		t.Fatalf("EachKV read %d keys %v, want %d", n, keys(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Errorf("%s: got %d bytes, want %d", k, len(got[k]), len(v))
		}
	}
	// An empty bucket ends at once.
	if n, err := b.EachKV(ctx, stage.BucketEmbeds, func(string, []byte) error { return nil }); n != 0 || err != nil {
		t.Errorf("empty bucket: %d, %v", n, err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
