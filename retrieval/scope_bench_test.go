package retrieval_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// cyclingQuery returns the next of its vectors at each call (a stand-in
// for the embedding model: the benchmark measures search, not embedding).
type cyclingQuery struct {
	vs [][]float32
	i  atomic.Int64
}

func (c *cyclingQuery) EmbedQuery(context.Context, string) ([]float32, error) {
	return c.vs[int(c.i.Add(1))%len(c.vs)], nil
}
func (*cyclingQuery) Name() string { return "cycling" }

// BenchmarkScopedRetrieve compares hybrid retrieval (memory BM25 top-200,
// embedded HNSW top-200, RRF to 80, passages read) unscoped and within
// tag scopes of 50%, 5% and 0.1% of a 20k-chunk corpus (1000 notes of 20
// chunks of XQuAD sentences, clustered 384-d vectors), reporting p50 and
// p95 per query. The scope's chunk set and id set are cached after the
// first query (as they are in a running system until the index changes).
func BenchmarkScopedRetrieve(b *testing.B) {
	const docs, perDoc, dim = 1000, 20, 384
	sents, questions := xquadSentences(b)
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "exocortex.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	vs, err := vectors.Open(ctx, vectors.Config{Dir: filepath.Join(dir, "vectors"), Dim: dim, Embedded: vectors.EmbeddedConfig{NoSync: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer vs.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	centres := make([][]float32, 200)
	for i := range centres {
		centres[i] = randUnit(rng, dim)
	}
	var pts []vectors.Point
	err = st.Batch(ctx, func(ctx context.Context) error {
		for d := range docs {
			doc := fmt.Sprintf("d%04d", d)
			var tags []string
			for _, tg := range []struct {
				name  string
				every int
			}{{"half", 2}, {"five", 20}, {"tenth", 1000}} {
				if d%tg.every == 0 {
					tags = append(tags, tg.name)
				}
			}
			var ids []string
			for i := range perDoc {
				var words []string
				for len(words) < 6 {
					words = append(words, sents[rng.IntN(len(sents))])
				}
				id := fmt.Sprintf("%s:%016x", doc, i)
				ids = append(ids, id)
				if _, err := st.UpsertChunk(ctx, &schemas.ChunkCreated{ChunkID: id, DocID: doc, DocVersion: 1, Ordinal: i, Hash: id,
					Text: strings.Join(words, " "), BlockIDs: []string{fmt.Sprintf("b%s-%d", doc, i)}, Lang: "en"}); err != nil {
					return err
				}
				v := centres[rng.IntN(len(centres))]
				noisy := make([]float32, dim)
				for j := range noisy {
					noisy[j] = v[j] + float32(rng.NormFloat64())*0.05
				}
				pts = append(pts, vectors.Point{ID: id, DocID: doc, Lang: "en", Vector: noisy})
			}
			if _, err := st.ApplyStructure(ctx, &schemas.DocStructure{DocID: doc, Source: schemas.SourceMarkdown, Title: doc,
				Path: "/v/" + doc + ".md", Notebook: "/v", Hash: doc, Version: 1, Tags: tags, ChunkIDs: ids}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := vs.Upsert(ctx, pts); err != nil {
		b.Fatal(err)
	}
	qv := &cyclingQuery{}
	for range 64 {
		qv.vs = append(qv.vs, randUnit(rng, dim))
	}
	r := &retrieval.Retriever{Index: st, Vectors: vs, Embedder: qv}
	for _, sc := range []struct {
		name string
		tag  string
	}{{"unscoped", ""}, {"scope50", "half"}, {"scope5", "five"}, {"scope0.1", "tenth"}} {
		b.Run(sc.name, func(b *testing.B) {
			var scope *schemas.Scope
			if sc.tag != "" {
				scope = &schemas.Scope{Include: schemas.ScopeSet{Tags: []string{sc.tag}}}
			}
			var total []float64
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprint(i), Question: questions[i%len(questions)],
					Options: schemas.QueryOptions{Mode: schemas.ModeHybrid, Scope: scope}}})
				if err != nil {
					b.Fatal(err)
				}
				total = append(total, float64(time.Since(t).Microseconds())/1000)
				if len(out.Candidates) == 0 {
					b.Fatalf("no candidates")
				}
			}
			p50, p95 := pct(total)
			b.ReportMetric(p50, "p50-ms")
			b.ReportMetric(p95, "p95-ms")
		})
	}
}
