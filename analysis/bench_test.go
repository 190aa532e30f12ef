package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// evalDir holds the XQuAD sets, relative to this package's folder.
var evalDir = filepath.Join("..", "..", "shared", "eval")

// paragraphs returns the contexts of one XQuAD set ("ru" or "en"), or skips
// the benchmark when the eval data is not there.
func paragraphs(b *testing.B, lang string) []string {
	b.Helper()
	path := filepath.Join(evalDir, "xquad."+lang+".json")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("eval data not found (want XQuAD at %s): %v", path, err)
	}
	var set struct {
		Data []struct {
			Paragraphs []struct {
				Context string `json:"context"`
			} `json:"paragraphs"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, a := range set.Data {
		for _, p := range a.Paragraphs {
			out = append(out, p.Context)
		}
	}
	if len(out) == 0 {
		b.Fatalf("%s has no paragraphs", path)
	}
	return out
}

// BenchmarkAnalyze analyses every XQuAD paragraph (ru and en) per iteration
// as the index does: Words for the body column and Lemmas for the lemma
// column (Plain mode has only the first). The mode benchmarks use one analyzer warmed up before timing,
// so they measure a long-running indexer whose word cache is full;
// Full/cold makes a fresh analyzer (empty cache) every iteration over the
// Russian paragraphs, so every distinct word goes through the dictionary.
// The dictionary itself is loaded once, before timing.
func BenchmarkAnalyze(b *testing.B) {
	ru, en := paragraphs(b, "ru"), paragraphs(b, "en")
	both := append(append([]string(nil), ru...), en...)
	if _, err := Russian(); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name  string
		mode  Mode
		texts []string
		cold  bool
	}{
		{"Plain", Plain, both, false},
		{"Stem", Stem, both, false},
		{"Full", Full, both, false},
		{"Full/cold", Full, ru, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var tokens, size int
			for _, p := range tc.texts {
				tokens += len(Tokenize(p))
				size += len(p)
			}
			a := newAnalyzer(b, tc.mode)
			if !tc.cold {
				for _, p := range tc.texts {
					a.Lemmas(p)
				}
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if tc.cold {
					a = newAnalyzer(b, tc.mode)
				}
				for _, p := range tc.texts {
					a.Words(p)
					a.Lemmas(p)
				}
				n++
			}
			b.ReportMetric(float64(n*tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkQuery analyses one typical question per language in Full mode,
// as search does for every request, with its words already in the cache.
func BenchmarkQuery(b *testing.B) {
	a := newAnalyzer(b, Full)
	for _, tc := range []struct{ name, question string }{
		{"ru", "Сколько очков набрала защита «Пантерс» в сезоне 2015 года и какое место она заняла в лиге?"},
		{"en", "How many points did the Panthers defense surrender in the 2015 season?"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a.Query(tc.question)
			b.ReportAllocs()
			for b.Loop() {
				a.Query(tc.question)
			}
		})
	}
}
