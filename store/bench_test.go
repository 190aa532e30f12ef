package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// xquadParagraphs reads the paragraphs of XQuAD ru and en from ../shared/eval.
func xquadParagraphs(b *testing.B) []string {
	b.Helper()
	var out []string
	for _, lang := range []string{"ru", "en"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "shared", "eval", "xquad."+lang+".json"))
		if err != nil {
			b.Skipf("needs ../shared/eval/xquad.%s.json: %v", lang, err)
		}
		var sq struct {
			Data []struct {
				Paragraphs []struct{ Context string }
			}
		}
		if err := json.Unmarshal(raw, &sq); err != nil {
			b.Fatal(err)
		}
		for _, a := range sq.Data {
			for _, p := range a.Paragraphs {
				out = append(out, p.Context)
			}
		}
	}
	return out
}

// BenchmarkIndexAnalyzer writes the XQuAD ru and en paragraphs (480 chunks)
// through the store with each analyzer, in batches of 256 as the index stage
// does; compare full (and stem) against plain for the cost of the lemma
// columns. Each iteration rewrites every chunk with a new version.
func BenchmarkIndexAnalyzer(b *testing.B) {
	paras := xquadParagraphs(b)
	ctx := context.Background()
	for _, mode := range analysis.Modes {
		b.Run(string(mode), func(b *testing.B) {
			s := openTest(b)
			if err := s.UseAnalyzer(ctx, mode); err != nil {
				b.Fatal(err)
			}
			var bytes int64
			for _, p := range paras {
				bytes += int64(len(p))
			}
			b.SetBytes(bytes)
			// The documents are indexed first, so each chunk's full-text row
			// is written when the chunk arrives.
			err := s.Batch(ctx, func(ctx context.Context) error {
				for i := range paras {
					d := &schemas.DocStructure{DocID: fmt.Sprint("d", i), Hash: fmt.Sprint(i), Version: 1,
						ChunkIDs: []string{fmt.Sprint("c", i)}}
					if _, err := s.ApplyStructure(ctx, d); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			version := int64(0)
			for b.Loop() {
				version++
				for start := 0; start < len(paras); start += 256 {
					err := s.Batch(ctx, func(ctx context.Context) error {
						for i := start; i < min(start+256, len(paras)); i++ {
							c := &schemas.ChunkCreated{ChunkID: fmt.Sprint("c", i), DocID: fmt.Sprint("d", i),
								DocVersion: version, Hash: fmt.Sprint(version, "-", i), Text: paras[i],
								SectionPath: []string{"Section"}}
							if _, err := s.UpsertChunk(ctx, c); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(paras)*b.N)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}
