package vectors_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/vectors"
)

// xquadParagraphs reads the paragraphs of an XQuAD file (SQuAD v1.1 JSON).
func xquadParagraphs(b *testing.B, path string) []string {
	b.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("XQuAD is not here (%v): it lives in shared/eval", err)
	}
	var f struct {
		Data []struct {
			Title      string
			Paragraphs []struct{ Context string }
		}
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, d := range f.Data {
		for _, p := range d.Paragraphs {
			out = append(out, p.Context)
		}
	}
	return out
}

// BenchmarkLexicalDoc measures what the index stage adds per chunk for
// Qdrant's lexical vectors, beside what it already pays for the SQLite
// full-text row (the same analysis, "fts-row"), on XQuAD ru and en
// paragraphs: go test ./vectors -run '^$' -bench LexicalDoc.
func BenchmarkLexicalDoc(b *testing.B) {
	a, err := analysis.New(analysis.Full)
	if err != nil {
		b.Fatal(err)
	}
	for _, lang := range []string{"ru", "en"} {
		paras := xquadParagraphs(b, "../../shared/eval/xquad."+lang+".json")
		b.Run(lang+"/fts-row", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				text := paras[i%len(paras)]
				body, lemmas := a.Index(text)
				_, _, _ = body, lemmas, a.Words("Notes")+a.Words("A / B")+a.Lemmas("Notes / A / B")
			}
		})
		b.Run(lang+"/lexical-doc", func(b *testing.B) {
			nnz := 0
			for i := 0; i < b.N; i++ {
				v := vectors.LexicalDoc(a, vectors.LexicalFields{Text: paras[i%len(paras)], Title: "Notes", Section: []string{"A", "B"}})
				nnz += len(v.Indices)
			}
			b.ReportMetric(float64(nnz)/float64(b.N), "terms/chunk")
		})
	}
}

// BenchmarkLexicalQuery measures a question's analysis into its sparse
// vector, on the retrieve side.
func BenchmarkLexicalQuery(b *testing.B) {
	a, err := analysis.New(analysis.Full)
	if err != nil {
		b.Fatal(err)
	}
	qs := []string{"Сколько очков уступила защита Пэнтерс?", "How many points did the Panthers defense surrender?",
		strings.Repeat("Where does SiYuan save file history and how often? ", 3)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = vectors.LexicalQuery(a.Query(qs[i%len(qs)]))
	}
}
