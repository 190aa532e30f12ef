package scalebench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/exocortex/exocortex/internal/synth"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
)

// measureQdrantScoped adds a scoped vector row per scope on the fake
// Qdrant (vectors/qdrantfake, in process, over gRPC): the first n chunks'
// points carry the payload the index stage writes (retrieval.SetMeta from
// the store's documents), and each search filters by the scope's payload
// conditions (retrieval.ScopeMeta of the query's scope), as a scoped query
// on Qdrant does. The fake searches exactly, so the recall checks that the
// payload and its conditions keep the scope the store resolves; its
// latency is the fake's, not Qdrant's.
func measureQdrantScoped(b *testing.B, env *Env, vg *Vectors, scopes []*resolvedScope, qs [][]float32, n int) []Row {
	ctx := context.Background()
	fake, err := qdrantfake.Start()
	if err != nil {
		b.Fatalf("fake qdrant: %v", err)
	}
	defer fake.Close()
	qd, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: Dim, Qdrant: vectors.QdrantConfig{Addr: fake.Addr()}})
	if err != nil {
		b.Fatalf("fake qdrant: %v", err)
	}
	defer qd.Close()
	t0 := time.Now()
	for lo := 0; lo < n; lo += buildBatch {
		var pts []vectors.Point
		for i := lo; i < min(lo+buildBatch, n); i++ {
			ch := env.Corpus.Chunk(i)
			pts = append(pts, vectors.Point{ID: ch.ID, DocID: ch.DocID, Lang: ch.Lang, Vector: vg.Vector(i, nil)})
		}
		if err := retrieval.SetMeta(ctx, env.Store, pts); err != nil {
			b.Fatalf("fake qdrant: payload: %v", err)
		}
		if err := qd.Upsert(ctx, pts); err != nil {
			b.Fatalf("fake qdrant: upsert: %v", err)
		}
	}
	b.Logf("fake qdrant: %d points with payload loaded in %s", n, time.Since(t0).Round(time.Millisecond))
	var out []Row
	for _, s := range scopes {
		out = append(out, qdrantScopedRow(b, qd, vg, s, qs, n))
	}
	return out
}

// qdrantScopedRow measures one scope on the fake: k=10 within the scope's
// payload conditions, recall against the exact top-10 over the scope's
// points among the first n.
func qdrantScopedRow(b *testing.B, qd vectors.Store, vg *Vectors, s *resolvedScope, qs [][]float32, n int) Row {
	ctx := context.Background()
	var opts vectors.SearchOptions
	opts.K = 10
	if s.Want != nil {
		meta, err := retrieval.ScopeMeta(&s.Query)
		if err != nil || meta == nil {
			b.Fatalf("fake qdrant %s: the scope gives no payload conditions (%v)", s.Name, err)
		}
		opts.Filter.Meta = meta
	}
	var list []string // the scope's chunks among the first n
	for _, id := range s.list {
		if ChunkIndex(id) < n {
			list = append(list, id)
		}
	}
	exact := synth.ExactTopK(len(list), Dim, func(j int, dst []float32) { vg.Vector(ChunkIndex(list[j]), dst) }, qs, 10)
	var lat []float64
	var found, want int
	for j, q := range qs {
		t := time.Now()
		res, err := qd.Search(ctx, q, opts)
		if err != nil {
			b.Fatalf("fake qdrant %s: %v", s.Name, err)
		}
		lat = append(lat, since(t))
		ids := make([]string, len(res))
		for i, r := range res {
			ids[i] = r.ID
		}
		var truth []string
		for _, nb := range exact[j] {
			truth = append(truth, list[nb.ID])
		}
		f, m := overlap(ids, truth)
		found, want = found+f, want+m
	}
	row := Row{Measure: "scoped vector", Engine: "qdrant-fake, " + s.Name, Queries: len(qs),
		Note: fmt.Sprintf("vectors.Qdrant on the in-process fake (exact search: its latency is the fake's, not Qdrant's) with Filter.Meta = retrieval.ScopeMeta of the query's scope over payloads from retrieval.SetMeta; a subset: the first %d chunks (%d of them in the scope), set by EXOCORTEX_SCALE_QDRANT_POINTS; recall against the exact top-10 over the scope's points in the subset", n, len(list))}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(want, 1))
	b.Logf("fake qdrant %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f over %d points in scope", s.Name, row.P50MS, row.P95MS, row.Recall, len(list))
	return row
}
