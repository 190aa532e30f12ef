package store

import (
	"context"
	"fmt"
	"testing"
)

// benchScopeStore is an index of chunks rows written directly: docs
// documents of chunks/docs chunks each, in 10 notebooks, a document in
// every 2nd, 20th and 1000th tagged p50, p5 and p01 (50%, 5%, 0.1%).
func benchScopeStore(b *testing.B, chunks, docs int) *Store {
	s := openTest(b)
	_, err := s.w.Exec(`
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
INSERT INTO documents (doc_id, source, path, notebook, doc_time)
	SELECT 'd' || i, 'markdown', '/r' || (i % 10) || '/f' || i || '.md', '/r' || (i % 10), 1700000000000000000 + i * 1000000000 FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
INSERT INTO doc_tags (tag, doc_id)
	SELECT 'p50', 'd' || i FROM n WHERE i % 2 = 0 UNION ALL
	SELECT 'p5', 'd' || i FROM n WHERE i % 20 = 0 UNION ALL
	SELECT 'p01', 'd' || i FROM n WHERE i % 1000 = 0;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?2)
INSERT INTO chunks (chunk_id, doc_id, hash, lang)
	SELECT 'd' || (i % ?1) || ':' || printf('%016x', i), 'd' || (i % ?1), 'h', CASE WHEN i % 3 = 0 THEN 'ru' ELSE 'en' END FROM n;`,
		docs, chunks)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkAllowedChunks(b *testing.B) {
	const chunks, docs = 100_000, 10_000
	s := benchScopeStore(b, chunks, docs)
	ctx := context.Background()
	for _, tag := range []string{"p50", "p5", "p01"} {
		f := DocFilter{Tags: []string{tag}}
		set, err := s.AllowedChunks(ctx, f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tag=%s/chunks=%d", tag, set.Len()), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.AllowedChunks(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("catalog-rebuild", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.loadCatalog(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	set, _ := s.AllowedChunks(ctx, DocFilter{Tags: []string{"p5"}})
	b.Run("HasRow", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for id := int64(1); id <= chunks; id++ {
				if set.HasRow(id) {
					n++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/test")
	})
	b.Run("HasChunk", func(b *testing.B) {
		b.ReportAllocs()
		ids := make([]string, chunks)
		for i := range ids {
			ids[i] = fmt.Sprintf("d%d:%016x", i%docs, i)
		}
		n := 0
		for b.Loop() {
			for _, id := range ids {
				if set.HasChunk(id, "ru") {
					n++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/test")
	})
}
