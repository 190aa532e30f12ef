package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// load returns one of the tokenizers in testdata.
func load(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	tok, err := Load(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("Load(%s): %v", name, err)
	}
	return tok
}

// xlmrJSON returns the XLM-R test tokenizer's JSON with top-level keys
// replaced.
func xlmrJSON(tb testing.TB, overrides map[string]string) []byte {
	tb.Helper()
	data, err := readGzip(filepath.Join("testdata", "xlmr-mini.json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(overrides) == 0 {
		return data
	}
	raw := make(map[string]json.RawMessage, len(overrides))
	for k, v := range overrides {
		raw[k] = json.RawMessage(v)
	}
	out, err := applyOverrides(data, raw)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestLoadErrorsNameTheProblem(t *testing.T) {
	cases := []struct {
		name        string
		overrides   map[string]string
		data        string // used instead of the XLM-R file when set
		unsupported bool
		want        []string
	}{
		{
			name:        "an unsupported normalizer in a sequence is named with its path",
			overrides:   map[string]string{"normalizer": `{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Nmt"}]}`},
			unsupported: true,
			want:        []string{"normalizer.normalizers[1].type", `"Nmt"`},
		},
		{
			name:        "an unsupported pre-tokenizer is named",
			overrides:   map[string]string{"pre_tokenizer": `{"type":"ByteLevel","add_prefix_space":false}`},
			unsupported: true,
			want:        []string{"pre_tokenizer.type", `"ByteLevel"`},
		},
		{
			name:        "an unsupported model is named",
			overrides:   map[string]string{"model": `{"type":"BPE","vocab":{},"merges":[]}`},
			unsupported: true,
			want:        []string{"model.type", `"BPE"`},
		},
		{
			name:        "an unsupported post-processor is named",
			overrides:   map[string]string{"post_processor": `{"type":"Fancy"}`},
			unsupported: true,
			want:        []string{"post_processor.type", `"Fancy"`},
		},
		{
			name:        "a regex RE2 cannot compile is unsupported",
			overrides:   map[string]string{"normalizer": `{"type":"Replace","pattern":{"Regex":"a(?=b)"},"content":"x"}`},
			unsupported: true,
			want:        []string{"normalizer.pattern.Regex"},
		},
		{
			name:      "a charsmap that is not base64 fails",
			overrides: map[string]string{"normalizer": `{"type":"Precompiled","precompiled_charsmap":"%%%"}`},
			want:      []string{"normalizer.precompiled_charsmap"},
		},
		{
			name:      "a charsmap whose trie does not fit fails",
			overrides: map[string]string{"normalizer": `{"type":"Precompiled","precompiled_charsmap":"/////w=="}`},
			want:      []string{"normalizer.precompiled_charsmap", "does not fit"},
		},
		{
			name:      "a template naming an unknown special token fails",
			overrides: map[string]string{"post_processor": `{"type":"TemplateProcessing","single":"<x> $A","pair":"$A $B","special_tokens":{}}`},
			want:      []string{"post_processor.single", `"<x>"`},
		},
		{
			name: "a WordPiece unk token missing from the vocab fails",
			data: `{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"a":0}}}`,
			want: []string{"model", `"[UNK]"`},
		},
		{
			name: "malformed JSON fails",
			data: `{"model": {"type": "Unigram", "vocab": [["a", 0.0]`,
			want: []string{"parse tokenizer.json"},
		},
		{
			name: "a file without a model fails",
			data: `{"normalizer": null}`,
			want: []string{"model: missing"},
		},
		{
			name: "a bad Unigram vocab entry is shown",
			data: `{"model":{"type":"Unigram","unk_id":0,"vocab":[["a"]]}}`,
			want: []string{"vocab entry", "[piece, score]"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.data)
			if c.data == "" {
				data = xlmrJSON(t, c.overrides)
			}
			_, err := FromJSON(data)
			if err == nil {
				t.Fatal("FromJSON succeeded")
			}
			if got := errors.Is(err, ErrUnsupported); got != c.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v (%v)", got, c.unsupported, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadReadsPlainAndGzipFiles(t *testing.T) {
	gz := load(t, "xlmr-mini.json.gz")
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, xlmrJSON(t, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	plain, err := Load(path)
	if err != nil {
		t.Fatalf("Load(plain): %v", err)
	}
	text := "Привет, мир! Hello <mask>."
	if a, b := gz.Encode(text, Truncation{}), plain.Encode(text, Truncation{}); !slices.Equal(a.IDs, b.IDs) {
		t.Errorf("gzip %v != plain %v", a.IDs, b.IDs)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestAccessors(t *testing.T) {
	x := load(t, "xlmr-mini.json.gz")
	b := load(t, "bert-base-uncased.json.gz")
	if x.Kind() != "unigram" || b.Kind() != "wordpiece" {
		t.Errorf("Kind() = %q, %q", x.Kind(), b.Kind())
	}
	if x.VocabSize() != 8002 || b.VocabSize() != 30522 {
		t.Errorf("VocabSize() = %d, %d", x.VocabSize(), b.VocabSize())
	}
	ids := []struct {
		tok  *Tokenizer
		s    string
		want int64
		ok   bool
	}{
		{x, "<s>", 0, true}, {x, "<pad>", 1, true}, {x, "</s>", 2, true}, {x, "<unk>", 3, true},
		{x, "<mask>", 8001, true}, {x, "no such piece", 0, false},
		{b, "[CLS]", 101, true}, {b, "[MASK]", 103, true}, {b, "the", 1996, true}, {b, "##s", 2015, true},
	}
	for _, c := range ids {
		got, ok := c.tok.TokenID(c.s)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("TokenID(%q) = %d, %v; want %d, %v", c.s, got, ok, c.want, c.ok)
		}
	}
	if x.PadID() != 1 || b.PadID() != 0 {
		t.Errorf("PadID() = %d, %d", x.PadID(), b.PadID())
	}
	text := "Съешь же ещё этих мягких французских булок"
	if got, want := x.Count(text), len(x.Encode(text, Truncation{}).IDs)-2; got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	if got := x.Count(""); got != 0 {
		t.Errorf("Count(\"\") = %d", got)
	}
	if got := x.Encode("", Truncation{}).Tokens; !slices.Equal(got, []string{"<s>", "</s>"}) {
		t.Errorf("Encode(\"\") = %q", got)
	}
}

func TestBatchesArePaddedToTheLongest(t *testing.T) {
	x := load(t, "xlmr-mini.json.gz")
	texts := []string{"a", "", "Привет, мир! Как дела?", "Hello"}
	encs := x.EncodeBatch(texts, Truncation{})
	longest := 0
	for _, s := range texts {
		longest = max(longest, len(x.Encode(s, Truncation{}).IDs))
	}
	for i, e := range encs {
		single := x.Encode(texts[i], Truncation{})
		n := len(single.IDs)
		for _, l := range [][]int64{e.IDs, e.TypeIDs, e.AttentionMask} {
			if len(l) != longest {
				t.Fatalf("item %d: length %d, want %d", i, len(l), longest)
			}
		}
		if len(e.Tokens) != longest || len(e.Offsets) != longest || len(e.SequenceIDs) != longest {
			t.Fatalf("item %d: tokens/offsets/sequence ids not padded", i)
		}
		if !slices.Equal(e.IDs[:n], single.IDs) {
			t.Errorf("item %d: padded ids %v do not start with %v", i, e.IDs, single.IDs)
		}
		for k := n; k < longest; k++ {
			if e.IDs[k] != 1 || e.AttentionMask[k] != 0 || e.TypeIDs[k] != 0 || e.SequenceIDs[k] != -1 || e.Offsets[k] != [2]int{} || e.Tokens[k] != "<pad>" {
				t.Errorf("item %d position %d: not padding: id %d mask %d type %d seq %d", i, k, e.IDs[k], e.AttentionMask[k], e.TypeIDs[k], e.SequenceIDs[k])
			}
		}
		for k := 0; k < n; k++ {
			if e.AttentionMask[k] != 1 {
				t.Errorf("item %d position %d: mask 0 on a real token", i, k)
			}
		}
	}
	if got := x.EncodeBatch(nil, Truncation{}); len(got) != 0 {
		t.Errorf("EncodeBatch(nil) = %d encodings", len(got))
	}
}

func TestPaddingSectionOfTheFile(t *testing.T) {
	x, err := FromJSON(xlmrJSON(t, map[string]string{
		"padding": `{"strategy":"BatchLongest","direction":"Left","pad_to_multiple_of":8,"pad_id":7,"pad_type_id":3,"pad_token":"<p>"}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	encs := x.EncodePairBatch("вопрос", []string{"короткий", "ответ подлиннее, чем первый"}, Truncation{})
	for i, e := range encs {
		if len(e.IDs)%8 != 0 {
			t.Errorf("item %d: length %d is not a multiple of 8", i, len(e.IDs))
		}
		if e.IDs[0] != 7 || e.TypeIDs[0] != 3 || e.Tokens[0] != "<p>" || e.AttentionMask[0] != 0 {
			t.Errorf("item %d: no left padding: %v %v", i, e.IDs, e.Tokens)
		}
		if last := len(e.IDs) - 1; e.IDs[last] != 2 || e.AttentionMask[last] != 1 {
			t.Errorf("item %d: does not end with </s>: %v", i, e.Tokens)
		}
	}
}

func TestTruncation(t *testing.T) {
	x := load(t, "xlmr-mini.json.gz")
	q := "Сколько очков уступила защита?"
	p := "Защита уступила всего 308 очков, заняв шестое место в лиге, а также лидировала по перехватам."
	nq, np := x.Count(q), x.Count(p)
	cases := []struct {
		name     string
		tr       Truncation
		wantA    int
		wantB    int
		wantSize int
	}{
		{"no limit keeps everything", Truncation{}, nq, np, nq + np + 4},
		{"a roomy limit keeps everything", Truncation{MaxLength: 512}, nq, np, nq + np + 4},
		{"longest_first cuts only the passage when the question fits in half", Truncation{MaxLength: 4 + 2*nq + 1, Strategy: LongestFirst}, nq, nq + 1, 2*nq + 5},
		{"longest_first is the default", Truncation{MaxLength: 4 + 2*nq + 1}, nq, nq + 1, 2*nq + 5},
		{"longest_first cuts the question too when it is over half", Truncation{MaxLength: 4 + nq + 5}, (nq + 5) / 2, (nq+5)/2 + (nq+5)%2, nq + 9},
		{"longest_first shares the room when both are long", Truncation{MaxLength: 4 + 7}, 3, 4, 11},
		{"only_second cuts the passage", Truncation{MaxLength: nq + 4 + 2, Strategy: OnlySecond}, nq, 2, nq + 6},
		{"only_first cuts the question", Truncation{MaxLength: np + 4 + 2, Strategy: OnlyFirst}, 2, np, np + 6},
		{"only_first that cannot fit falls back to longest_first", Truncation{MaxLength: 4 + 6, Strategy: OnlyFirst}, 3, 3, 10},
		{"a limit below the special tokens leaves only them", Truncation{MaxLength: 3}, 0, 0, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := x.EncodePair(q, p, c.tr)
			a, b := 0, 0
			for _, s := range e.SequenceIDs {
				switch s {
				case 0:
					a++
				case 1:
					b++
				}
			}
			if a != c.wantA || b != c.wantB || len(e.IDs) != c.wantSize {
				t.Errorf("first %d, second %d, total %d; want %d, %d, %d", a, b, len(e.IDs), c.wantA, c.wantB, c.wantSize)
			}
		})
	}
	t.Run("a single text is cut to the limit", func(t *testing.T) {
		for _, max := range []int{2, 3, 10, 64} {
			e := x.Encode(p, Truncation{MaxLength: max, Strategy: OnlySecond})
			want := min(max, np+2)
			if len(e.IDs) != want || e.IDs[0] != 0 || e.IDs[len(e.IDs)-1] != 2 {
				t.Errorf("max %d: %d tokens %v", max, len(e.IDs), e.Tokens)
			}
		}
	})
}

func TestTemplateInStringForm(t *testing.T) {
	x, err := FromJSON(xlmrJSON(t, map[string]string{
		"post_processor": `{"type":"TemplateProcessing","single":"<s>:0 $A:0 </s>:0","pair":"<s> $A </s> $B:1 </s>:1",
			"special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[2],"tokens":["</s>"]}}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	e := x.EncodePair("a", "b", Truncation{})
	if !slices.Equal(e.TypeIDs, []int64{0, 0, 0, 0, 1, 1, 1}) && !slices.Equal(e.TypeIDs, []int64{0, 0, 0, 1, 1}) {
		t.Errorf("type ids %v for %q", e.TypeIDs, e.Tokens)
	}
	if e.Tokens[0] != "<s>" || e.Tokens[len(e.Tokens)-1] != "</s>" {
		t.Errorf("tokens %q", e.Tokens)
	}
}

func TestUnigramWithoutUnkDropsUnknownCharacters(t *testing.T) {
	tok, err := FromJSON([]byte(`{
		"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
		"model": {"type": "Unigram", "unk_id": null, "vocab": [["▁", -1], ["a", -2], ["b", -2], ["▁ab", -1.5]]}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	e := tok.Encode("ab zab", Truncation{})
	if want := []string{"▁ab", "▁", "a", "b"}; !slices.Equal(e.Tokens, want) {
		t.Errorf("tokens %q, want %q", e.Tokens, want)
	}
}

func TestConcurrentEncodeAgreesWithSequential(t *testing.T) {
	toks := []*Tokenizer{load(t, "xlmr-mini.json.gz"), load(t, "bert-base-uncased.json.gz")}
	texts := []string{
		"Hello world", "Привет, мир! Ёлка", "你好 😀 <mask> [MASK]", "", "  spaces  ",
		"Защита Пэнтерс уступила всего 308 очков, заняв шестое место в лиге.",
	}
	want := make([][]Encoding, len(toks))
	for i, tok := range toks {
		for _, s := range texts {
			want[i] = append(want[i], tok.EncodePair(s, "второй текст", Truncation{MaxLength: 16}))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				i := (g + round) % len(toks)
				for k, s := range texts {
					got := toks[i].EncodePair(s, "второй текст", Truncation{MaxLength: 16})
					if !slices.Equal(got.IDs, want[i][k].IDs) || !slices.Equal(got.Offsets, want[i][k].Offsets) {
						errs <- s
						return
					}
				}
				toks[i].EncodeBatch(texts, Truncation{})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent encoding of %q differs", s)
	}
}
