package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/exocortex/exocortex/schemas"
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
			fullCatalog(b, s)
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

// fullCatalog reads s's whole catalog, as a full rebuild does.
func fullCatalog(tb testing.TB, s *Store) *catalog {
	ctx := context.Background()
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRow(`SELECT n FROM scope_seq`).Scan(&seq); err != nil {
		tb.Fatal(err)
	}
	c, err := readCatalog(ctx, tx, seq, "")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkScopeAfterWrite times a scoped AllowedChunks right after a
// one-document write (the write itself untimed): the catalog rebuilt in
// full (full, as before migration 10) or following the write (incremental).
// Run with -count to interleave the two.
func BenchmarkScopeAfterWrite(b *testing.B) {
	for _, size := range []struct{ chunks, docs int }{{100_000, 100_000}, {100_000, 10_000}} {
		s := benchScopeStore(b, size.chunks, size.docs)
		ctx := context.Background()
		var chunkIDs []string
		rows, err := s.r.Query(`SELECT chunk_id FROM chunks WHERE doc_id = 'd7' ORDER BY id`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			chunkIDs = append(chunkIDs, id)
		}
		rows.Close()
		version := int64(0)
		write := func() {
			version++
			d := &schemas.DocStructure{DocID: "d7", Source: schemas.SourceMarkdown, Path: "/r7/f7.md", Notebook: "/r7",
				Version: version, ChunkIDs: chunkIDs, Hash: fmt.Sprint(version)}
			if version%2 == 1 {
				d.Tags = []string{"p5"}
			}
			if _, err := s.ApplyStructure(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
		f := DocFilter{Tags: []string{"p5"}}
		for _, mode := range []string{"full", "incremental"} {
			b.Run(fmt.Sprintf("docs=%d/chunks=%d/%s", size.docs, size.chunks, mode), func(b *testing.B) {
				s.scope.fullOnly = mode == "full"
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					write()
					b.StartTimer()
					set, err := s.AllowedChunks(ctx, f)
					if err != nil {
						b.Fatal(err)
					}
					if set.HasDoc("d7") != (version%2 == 1) {
						b.Fatalf("after write %d the scope %s d7", version, map[bool]string{true: "has", false: "lacks"}[set.HasDoc("d7")])
					}
				}
			})
		}
		s.Close()
	}
}
