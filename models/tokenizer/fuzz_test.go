package tokenizer

import (
	"testing"
)

// FuzzEncode checks that any input, valid UTF-8 or not, encodes without
// panicking into an encoding whose parts agree and whose offsets lie inside
// the input.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"Hello world", "Привет, мир!", "\ufeffBOM", "a\r\nb", "<mask>x", "e\u0301\u0323", "ẛ̣", "\xff\xfe",
		"你好 😀 [MASK]", "  ", "ｶﾞ", "İ", "\u0085",
	} {
		f.Add(s, "second")
	}
	toks := []*Tokenizer{load(f, "xlmr-mini.json.gz"), load(f, "bert-base-uncased.json.gz"), load(f, "bert-mini-cased.json.gz")}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, tok := range toks {
			for _, e := range []Encoding{
				tok.Encode(a, Truncation{}),
				tok.EncodePair(a, b, Truncation{MaxLength: 12}),
			} {
				n := len(e.IDs)
				if len(e.TypeIDs) != n || len(e.AttentionMask) != n || len(e.Tokens) != n || len(e.Offsets) != n || len(e.SequenceIDs) != n {
					t.Fatalf("parts of different lengths for %q", a)
				}
				for i, off := range e.Offsets {
					text := a
					if e.SequenceIDs[i] == 1 {
						text = b
					}
					if off[0] < 0 || off[0] > off[1] || off[1] > len(text) {
						t.Fatalf("offsets %v of token %d %q outside %q", off, i, e.Tokens[i], text)
					}
				}
			}
		}
	})
}
