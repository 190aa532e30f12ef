package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The reference file is written by testdata/gen/gen.mjs with the Rust
// tokenizers library (see testdata/README.md).

type refFile struct {
	Generator string       `json:"generator"`
	Variants  []refVariant `json:"variants"`
	Bulk      []refBulk    `json:"bulk"`
	BulkTexts []string     `json:"bulk_texts"`
}

// refBulk is every XQuAD question and context encoded by one of the base
// tokenizers: ids and flattened byte offsets.
type refBulk struct {
	File    string    `json:"file"`
	IDs     [][]int64 `json:"ids"`
	Offsets [][]int   `json:"offsets"`
}

type refVariant struct {
	Name      string                     `json:"name"`
	File      string                     `json:"file"`
	Overrides map[string]json.RawMessage `json:"overrides"`
	VocabSize int                        `json:"vocab_size"`
	Cases     []refCase                  `json:"cases"`
	Batches   []refBatch                 `json:"batches"`
}

type refEncoding struct {
	IDs           []int64  `json:"ids"`
	TypeIDs       []int64  `json:"type_ids"`
	Tokens        []string `json:"tokens"`
	Offsets       [][2]int `json:"offsets"`
	SequenceIDs   []int    `json:"sequence_ids"`
	AttentionMask []int64  `json:"attention_mask"`
}

type refCase struct {
	A         string  `json:"a"`
	B         *string `json:"b"`
	MaxLength int     `json:"max_length"`
	Strategy  string  `json:"strategy"`
	Error     string  `json:"error"`
	refEncoding
}

type refBatch struct {
	Texts     []string      `json:"texts"`
	A         string        `json:"a"`
	Bs        []string      `json:"bs"`
	MaxLength int           `json:"max_length"`
	Strategy  string        `json:"strategy"`
	PadID     int64         `json:"pad_id"`
	Encodings []refEncoding `json:"encodings"`
}

var loadReference = sync.OnceValues(func() (*refFile, error) {
	data, err := readGzip(filepath.Join("testdata", "reference.json.gz"))
	if err != nil {
		return nil, err
	}
	var ref refFile
	if err := json.Unmarshal(data, &ref); err != nil {
		return nil, fmt.Errorf("parse reference: %w", err)
	}
	return &ref, nil
})

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

func reference(tb testing.TB) *refFile {
	tb.Helper()
	ref, err := loadReference()
	if err != nil {
		tb.Fatalf("load reference: %v", err)
	}
	return ref
}

// variantTokenizer loads the variant's base file and applies its
// overrides the way gen.mjs does: a key is a dotted path into the JSON, its
// value replaces what is there or, as {"$append": [...]}, extends an array.
func variantTokenizer(tb testing.TB, v refVariant) *Tokenizer {
	tb.Helper()
	data, err := readGzip(filepath.Join("testdata", v.File))
	if err != nil {
		tb.Fatalf("read %s: %v", v.File, err)
	}
	if len(v.Overrides) > 0 {
		data, err = applyOverrides(data, v.Overrides)
		if err != nil {
			tb.Fatalf("%s: overrides: %v", v.Name, err)
		}
	}
	tok, err := FromJSON(data)
	if err != nil {
		tb.Fatalf("%s: FromJSON: %v", v.Name, err)
	}
	return tok
}

func applyOverrides(data []byte, overrides map[string]json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	// Shorter paths first, so that a deeper override lands in a replaced value.
	slices.SortFunc(keys, func(a, b string) int { return strings.Count(a, ".") - strings.Count(b, ".") })
	for _, path := range keys {
		dec := json.NewDecoder(bytes.NewReader(overrides[path]))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		parts := strings.Split(path, ".")
		parent := doc
		for _, p := range parts[:len(parts)-1] {
			switch c := parent.(type) {
			case map[string]any:
				parent = c[p]
			case []any:
				i, err := strconv.Atoi(p)
				if err != nil || i >= len(c) {
					return nil, fmt.Errorf("path %s: bad index %s", path, p)
				}
				parent = c[i]
			}
		}
		last := parts[len(parts)-1]
		set := func(old any) any {
			if m, ok := val.(map[string]any); ok {
				if add, ok := m["$append"].([]any); ok {
					return append(old.([]any), add...)
				}
			}
			return val
		}
		switch c := parent.(type) {
		case map[string]any:
			c[last] = set(c[last])
		case []any:
			i, err := strconv.Atoi(last)
			if err != nil || i >= len(c) {
				return nil, fmt.Errorf("path %s: bad index %s", path, last)
			}
			c[i] = set(c[i])
		default:
			return nil, fmt.Errorf("path %s: no object or array to set in", path)
		}
	}
	return json.Marshal(doc)
}

// diffEncoding describes the first difference between got and want, or
// returns "".
func diffEncoding(got Encoding, want refEncoding) string {
	n := max(len(got.IDs), len(want.IDs))
	for i := 0; i < n; i++ {
		var what string
		switch {
		case i >= len(got.IDs) || i >= len(want.IDs):
			what = "length"
		case got.IDs[i] != want.IDs[i]:
			what = "id"
		case got.TypeIDs[i] != want.TypeIDs[i]:
			what = "type id"
		case got.Offsets[i] != want.Offsets[i]:
			what = "offsets"
		case want.AttentionMask[i] == 0 && got.SequenceIDs[i] != -1:
			// Padding is sequence -1 here; the library says 0 when the
			// encoding has no sequence ranges (no post-processor).
			what = "sequence id of padding"
		case want.AttentionMask[i] != 0 && got.SequenceIDs[i] != want.SequenceIDs[i]:
			what = "sequence id"
		case got.AttentionMask[i] != want.AttentionMask[i]:
			what = "attention mask"
		case got.Tokens[i] != want.Tokens[i]:
			what = "token"
		default:
			continue
		}
		return fmt.Sprintf("first difference at %d (%s; lengths got %d want %d)\n  got:  %s\n  want: %s",
			i, what, len(got.IDs), len(want.IDs),
			window(got.IDs, got.Tokens, got.Offsets, got.TypeIDs, i),
			window(want.IDs, want.Tokens, want.Offsets, want.TypeIDs, i))
	}
	return ""
}

// window prints the tokens around position i.
func window(ids []int64, toks []string, offs [][2]int, types []int64, i int) string {
	var b strings.Builder
	for j := max(0, i-3); j < min(len(ids), i+4); j++ {
		mark := ""
		if j == i {
			mark = ">"
		}
		fmt.Fprintf(&b, "%s%d:%q/%d%v/t%d ", mark, j, toks[j], ids[j], offs[j], types[j])
	}
	return b.String()
}

func shortText(s string) string {
	if r := []rune(s); len(r) > 60 {
		return strconv.Quote(string(r[:60])) + "..."
	}
	return strconv.Quote(s)
}

func (c refCase) String() string {
	s := "Encode(" + shortText(c.A)
	if c.B != nil {
		s = "EncodePair(" + shortText(c.A) + ", " + shortText(*c.B)
	}
	if c.MaxLength > 0 {
		s += fmt.Sprintf(", max %d %s", c.MaxLength, c.Strategy)
	}
	return s + ")"
}

func TestParityWithHFTokenizers(t *testing.T) {
	ref := reference(t)
	total, compared, batched := 0, 0, 0
	for _, v := range ref.Variants {
		t.Run(v.Name, func(t *testing.T) {
			tok := variantTokenizer(t, v)
			if got := tok.VocabSize(); got != v.VocabSize {
				t.Errorf("VocabSize() = %d, want %d", got, v.VocabSize)
			}
			failed := 0
			for _, c := range v.Cases {
				total++
				if c.Error != "" {
					continue // the library refused; see TestTruncationFallback
				}
				compared++
				tr := Truncation{MaxLength: c.MaxLength, Strategy: c.Strategy}
				var got Encoding
				if c.B == nil {
					got = tok.Encode(c.A, tr)
				} else {
					got = tok.EncodePair(c.A, *c.B, tr)
				}
				if d := diffEncoding(got, c.refEncoding); d != "" {
					failed++
					if failed <= 8 {
						t.Errorf("%s: %s", c, d)
					}
				}
			}
			for bi, b := range v.Batches {
				batched += len(b.Encodings)
				tr := Truncation{MaxLength: b.MaxLength, Strategy: b.Strategy}
				var got []Encoding
				if b.Texts != nil {
					got = tok.EncodeBatch(b.Texts, tr)
				} else {
					got = tok.EncodePairBatch(b.A, b.Bs, tr)
				}
				if len(got) != len(b.Encodings) {
					t.Fatalf("batch %d: %d encodings, want %d", bi, len(got), len(b.Encodings))
				}
				for i := range got {
					if d := diffEncoding(got[i], b.Encodings[i]); d != "" {
						failed++
						t.Errorf("batch %d item %d: %s", bi, i, d)
						break
					}
				}
			}
			if failed > 0 {
				t.Errorf("%s: %d of %d cases differ from the reference", v.Name, failed, len(v.Cases))
			}
		})
	}
	t.Logf("%s: %d variants, %d cases, %d compared (the rest are truncations the library refuses), %d padded batch encodings",
		ref.Generator, len(ref.Variants), total, compared, batched)
}

func TestParityOnXQuAD(t *testing.T) {
	ref := reference(t)
	for _, b := range ref.Bulk {
		t.Run(b.File, func(t *testing.T) {
			tok := variantTokenizer(t, refVariant{Name: b.File, File: b.File})
			failed := 0
			for i, text := range ref.BulkTexts {
				got := tok.Encode(text, Truncation{})
				want := refEncoding{
					IDs: b.IDs[i], TypeIDs: make([]int64, len(b.IDs[i])), Tokens: make([]string, len(b.IDs[i])),
					SequenceIDs: got.SequenceIDs, AttentionMask: got.AttentionMask,
				}
				for k := 0; k+1 < len(b.Offsets[i]); k += 2 {
					want.Offsets = append(want.Offsets, [2]int{b.Offsets[i][k], b.Offsets[i][k+1]})
				}
				got.Tokens = want.Tokens // not in the bulk reference
				if d := diffEncoding(got, want); d != "" {
					failed++
					if failed <= 5 {
						t.Errorf("text %d %s: %s", i, shortText(text), d)
					}
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d texts differ", failed, len(ref.BulkTexts))
			}
		})
	}
	t.Logf("%d XQuAD questions and contexts through %d tokenizers", len(ref.BulkTexts), len(ref.Bulk))
}
