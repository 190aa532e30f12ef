package store

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// one-document write (the write itself untimed), each iteration once with
// the catalog rebuilt in full (full-ms/query, as before migration 10) and
// once following the write (incremental-ms/query), interleaved.
func BenchmarkScopeAfterWrite(b *testing.B) {
	for _, size := range []struct{ chunks, docs int }{{100_000, 100_000}, {100_000, 10_000}} {
		s := benchScopeStore(b, size.chunks, size.docs)
		ctx := context.Background()
		write := oneDocWriter(b, s, "d7")
		f := DocFilter{Tags: []string{"p5"}}
		b.Run(fmt.Sprintf("docs=%d/chunks=%d", size.docs, size.chunks), func(b *testing.B) {
			var spent [2]time.Duration
			for b.Loop() {
				for mode := range spent {
					s.scope.fullOnly = mode == 0
					tagged := write()
					start := time.Now()
					set, err := s.AllowedChunks(ctx, f)
					spent[mode] += time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					if set.HasDoc("d7") != tagged {
						b.Fatalf("after the write the scope has d7 %v, want %v", set.HasDoc("d7"), tagged)
					}
				}
			}
			b.ReportMetric(float64(spent[0].Microseconds())/1e3/float64(b.N), "full-ms/query")
			b.ReportMetric(float64(spent[1].Microseconds())/1e3/float64(b.N), "incremental-ms/query")
		})
		s.Close()
	}
}

// oneDocWriter returns a function that writes document id again as a new
// version, tagged p5 every other time, and says whether it now is.
func oneDocWriter(b *testing.B, s *Store, id string) func() bool {
	var chunkIDs []string
	rows, err := s.r.Query(`SELECT chunk_id FROM chunks WHERE doc_id = ? ORDER BY id`, id)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			b.Fatal(err)
		}
		chunkIDs = append(chunkIDs, c)
	}
	version := int64(0)
	return func() bool {
		version++
		d := &schemas.DocStructure{DocID: id, Source: schemas.SourceMarkdown, Path: "/r7/f7.md", Notebook: "/r7",
			Version: version, ChunkIDs: chunkIDs, Hash: fmt.Sprint(version)}
		if version%2 == 1 {
			d.Tags = []string{"p5"}
		}
		if _, err := s.ApplyStructure(context.Background(), d); err != nil {
			b.Fatal(err)
		}
		return version%2 == 1
	}
}
