package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestIntegrationRealTokenizers loads real tokenizer.json files (e.g. the
// ones `exocortex models fetch` downloads) named in
// EXOCORTEX_TOKENIZER_JSON, a list of paths separated like PATH, and checks
// them against ids known from the HF library.
func TestIntegrationRealTokenizers(t *testing.T) {
	list := os.Getenv("EXOCORTEX_TOKENIZER_JSON")
	if list == "" {
		t.Skip("set EXOCORTEX_TOKENIZER_JSON to real tokenizer.json files to run this test")
	}
	for _, path := range filepath.SplitList(list) {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			tok, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			e := tok.Encode("Hello world!", Truncation{})
			t.Logf("%s: %s, %d tokens in the vocabulary; %q -> %v %q", path, tok.Kind(), tok.VocabSize(), "Hello world!", e.IDs, e.Tokens)
			var want []int64
			switch {
			case tok.Kind() == "unigram" && tok.VocabSize() == 250002:
				// The XLM-RoBERTa vocabulary (multilingual-e5, mMiniLM, xlm-roberta-base).
				want = []int64{0, 35378, 8999, 38, 2}
			case tok.Kind() == "wordpiece" && tok.VocabSize() == 30522:
				// bert-base-uncased.
				want = []int64{101, 7592, 2088, 999, 102}
			default:
				t.Skip("no known ids for this vocabulary")
			}
			if !slices.Equal(e.IDs, want) {
				t.Errorf("ids %v, want %v", e.IDs, want)
			}
		})
	}
}
