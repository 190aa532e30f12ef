package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/modeltest"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/embed"
)

// counting wraps the real embedder and counts passages sent to the model.
type counting struct {
	*models.Embedder
	passages atomic.Int64
	fail     atomic.Bool
}

func (c *counting) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	if c.fail.Load() {
		return nil, errors.New("model crashed")
	}
	c.passages.Add(int64(len(texts)))
	return c.Embedder.EmbedPassages(ctx, texts)
}

func msg(t *testing.T, ev schemas.Event) *bus.Msg {
	t.Helper()
	subject := schemas.Stamp(ev, "trace")
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return &bus.Msg{Subject: subject, Data: data, Delivered: 1, TraceID: "trace"}
}

func TestTheEmbedStageBatchesCachesAndSkipsWhatItNeedNotEmbed(t *testing.T) {
	dir := modeltest.Dir(t, modeltest.Options{NoReranker: true, NoQA: true})
	m, _ := models.ManifestFor(dir)
	spec, _ := m.Spec(models.RoleEmbed)
	e, err := models.OpenEmbedder(dir, spec, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	emb := &counting{Embedder: e}
	h := embed.New(embed.DefaultConfig(), emb, bus.NewMemKV())
	ctx := context.Background()
	chunk := func(id, text string) *schemas.ChunkCreated {
		return &schemas.ChunkCreated{ChunkID: id, DocID: "d", Hash: "h-" + text, Text: text, SectionPath: []string{"Doc"}, Lang: "en"}
	}
	msgs := []*bus.Msg{
		msg(t, chunk("c1", "ravens")), msg(t, chunk("c2", "crows")),
		msg(t, &schemas.ChunkCreated{ChunkID: "c3", DocID: "d", Hash: "gone", Tombstone: true}),
		{Subject: schemas.SubjectChunkCreated, Data: []byte(`{"type":"kb.chunk.created.v1"`)},
		msg(t, &schemas.EmbedRequest{Model: e.Name(), Pass: "p", Chunk: *chunk("c4", "magpies")}),
	}
	outs := h.HandleBatch(ctx, msgs)
	if len(outs) != len(msgs) {
		t.Fatalf("%d outcomes for %d messages", len(outs), len(msgs))
	}
	if emb.passages.Load() != 3 {
		t.Errorf("model embedded %d passages, want 3 in one batch", emb.passages.Load())
	}
	for _, i := range []int{0, 1, 4} {
		if outs[i].Err != nil || len(outs[i].Out) != 1 {
			t.Fatalf("message %d: %+v", i, outs[i])
		}
		d := outs[i].Out[0].(*schemas.EmbedDone)
		if d.Model != e.Name() || d.Dim != modeltest.Dim || len(d.Items) != 1 || d.Items[0].Cached || len(d.Items[0].Vector) != modeltest.Dim {
			t.Errorf("message %d: %+v", i, d)
		}
	}
	if outs[2].Err != nil || len(outs[2].Out) != 0 {
		t.Errorf("a tombstone: %+v, want nothing", outs[2])
	}
	if !bus.IsPermanent(outs[3].Err) {
		t.Errorf("a malformed event: %v, want a permanent error", outs[3].Err)
	}

	// The same content under another chunk id comes from the cache.
	out := h.HandleBatch(ctx, []*bus.Msg{msg(t, chunk("c9", "crows"))})
	d := out[0].Out[0].(*schemas.EmbedDone)
	if emb.passages.Load() != 3 || !d.Items[0].Cached || d.Items[0].ChunkID != "c9" {
		t.Errorf("cached content was embedded again (%d passages): %+v", emb.passages.Load(), d.Items[0])
	}
	if embed.Passage(chunk("x", "body")) != "Doc\nbody" {
		t.Errorf("passage = %q", embed.Passage(chunk("x", "body")))
	}

	// A failing model fails only the messages it was to embed, for a retry.
	emb.fail.Store(true)
	out = h.HandleBatch(ctx, []*bus.Msg{msg(t, chunk("c5", "owls")), msg(t, chunk("c6", "ravens"))})
	if out[0].Err == nil || bus.IsPermanent(out[0].Err) || !strings.Contains(out[0].Err.Error(), "model crashed") {
		t.Errorf("model failure: %v, want a retryable error naming it", out[0].Err)
	}
	if out[1].Err != nil {
		t.Errorf("a cached chunk failed with the model: %v", out[1].Err)
	}
}
