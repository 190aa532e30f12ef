package tokenizer

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// Tokenizer encodes text the way a Hugging Face tokenizer.json says:
// added tokens, normalizer, pre-tokenizer, model, post-processor. It is
// immutable after loading and safe for concurrent use.
type Tokenizer struct {
	normalizer normalizer   // nil: none
	preTok     preTokenizer // nil: none
	model      model
	processor  postProcessor // nil: sequences are concatenated as they are

	added   []*addedToken
	addedID map[string]int
	raw     *matcher // added tokens looked for in the raw text
	norm    *matcher // added tokens looked for in the normalized text

	pad       padding
	vocabSize int
}

// padding is how batches are padded.
type padding struct {
	id       int64
	typeID   int64
	token    string
	left     bool
	multiple int
}

// Load reads a tokenizer.json file, gzip-compressed or not.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return t, nil
}

// FromJSON parses the bytes of a tokenizer.json file (gzip-compressed bytes
// are accepted too).
func FromJSON(data []byte) (*Tokenizer, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: gunzip: %w", err)
		}
		data, err = io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: gunzip: %w", err)
		}
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

// Kind is the model's kind: "unigram" or "wordpiece".
func (t *Tokenizer) Kind() string { return t.model.kind() }

// VocabSize is the number of distinct tokens: the model's vocabulary and
// the added tokens that are not in it (HF get_vocab_size(true)).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token (an added token or a piece of the
// model's vocabulary, written as in the vocabulary, e.g. "▁мир" or "##ing").
func (t *Tokenizer) TokenID(tok string) (int64, bool) {
	if id, ok := t.addedID[tok]; ok {
		return int64(id), true
	}
	id, ok := t.model.tokenID(tok)
	return int64(id), ok
}

// PadID is the id batches are padded with.
func (t *Tokenizer) PadID() int64 { return t.pad.id }

// Count returns the number of tokens of text without special tokens and
// without truncation.
func (t *Tokenizer) Count(text string) int {
	return t.encodeSequence(text, 0, 0, 0).len()
}

// encodeSequence runs one text through added tokens, normalizer,
// pre-tokenizer and model. Offsets are byte offsets into text.
//
// With limit > 0 it stops after the first word that brings the count to
// limit or more. The HF library does the same when truncation is on (limit
// is then the maximum length, special tokens included), and that shapes
// how longest_first shares the room between two sequences, so it is
// reproduced; it also spares tokenizing the rest of a long passage.
func (t *Tokenizer) encodeSequence(text string, typeID int64, seqID int, limit int) *seqEncoding {
	e := &seqEncoding{}
	if limit > 0 {
		e.reserve(min(limit+16, len(text)/2+4))
	} else {
		e.reserve(len(text)/3 + 4)
	}
	var toks []token
	var sc scratch
	emit := func(id int, value string, sp span) {
		e.ids = append(e.ids, int64(id))
		e.tokens = append(e.tokens, value)
		e.offsets = append(e.offsets, [2]int{int(sp.start), int(sp.end)})
	}
	full := func() bool { return limit > 0 && len(e.ids) >= limit }
raw:
	for _, p := range t.raw.split(text) {
		if full() {
			break
		}
		if p.start == p.end {
			continue
		}
		if p.tok != nil {
			emit(p.tok.id, text[p.start:p.end], span{int32(p.start), int32(p.end)})
			continue
		}
		n := newNormalized(text[p.start:p.end], p.start)
		if t.normalizer != nil {
			t.normalizer.normalize(n)
		}
		for _, q := range t.norm.split(n.s) {
			if full() {
				break raw
			}
			if q.start == q.end {
				continue
			}
			if q.tok != nil {
				emit(q.tok.id, n.s[q.start:q.end], n.original(q.start, q.end))
				continue
			}
			words := []normalized{n.slice(q.start, q.end)}
			if t.preTok != nil {
				words = splitAll(t.preTok, words)
			}
			for wi := range words {
				if full() {
					break raw
				}
				w := &words[wi]
				toks = t.model.tokenize(w.s, toks[:0], &sc)
				for _, tk := range toks {
					emit(tk.id, tk.value, w.original(tk.start, tk.end))
				}
			}
		}
	}
	e.types = make([]int64, len(e.ids))
	e.seqIDs = make([]int, len(e.ids))
	for i := range e.ids {
		e.types[i] = typeID
		e.seqIDs[i] = seqID
	}
	return e
}

// Encode encodes one text with special tokens, truncated per tr.
func (t *Tokenizer) Encode(text string, tr Truncation) Encoding {
	a := t.encodeSequence(text, 0, 0, tr.MaxLength)
	t.truncate(a, nil, tr)
	return t.finish([]*seqEncoding{a})
}

// EncodePair encodes a pair of texts (e.g. a query and a passage) with
// special tokens, truncated per tr.
func (t *Tokenizer) EncodePair(a, b string, tr Truncation) Encoding {
	ea := t.encodeSequence(a, 0, 0, tr.MaxLength)
	eb := t.encodeSequence(b, 1, 1, tr.MaxLength)
	t.truncate(ea, eb, tr)
	return t.finish([]*seqEncoding{ea, eb})
}

// EncodeBatch encodes texts and pads them to the longest.
func (t *Tokenizer) EncodeBatch(texts []string, tr Truncation) []Encoding {
	out := make([]Encoding, len(texts))
	for i, s := range texts {
		out[i] = t.Encode(s, tr)
	}
	t.padBatch(out)
	return out
}

// EncodePairBatch encodes the pairs (a, bs[i]) and pads them to the longest.
func (t *Tokenizer) EncodePairBatch(a string, bs []string, tr Truncation) []Encoding {
	out := make([]Encoding, len(bs))
	ea := t.encodeSequence(a, 0, 0, tr.MaxLength)
	for i, b := range bs {
		eb := t.encodeSequence(b, 1, 1, tr.MaxLength)
		first := ea.clone()
		t.truncate(first, eb, tr)
		out[i] = t.finish([]*seqEncoding{first, eb})
	}
	t.padBatch(out)
	return out
}

func (e *seqEncoding) clone() *seqEncoding {
	return &seqEncoding{
		ids:     append([]int64(nil), e.ids...),
		types:   append([]int64(nil), e.types...),
		tokens:  append([]string(nil), e.tokens...),
		offsets: append([][2]int(nil), e.offsets...),
		seqIDs:  append([]int(nil), e.seqIDs...),
	}
}

// finish post-processes the sequences into an Encoding.
func (t *Tokenizer) finish(encs []*seqEncoding) Encoding {
	var e *seqEncoding
	if t.processor != nil {
		e = mergeAll(t.processor.process(encs))
	} else {
		e = mergeAll(encs)
	}
	mask := make([]int64, len(e.ids))
	for i := range mask {
		mask[i] = 1
	}
	return Encoding{
		IDs:           e.ids,
		TypeIDs:       e.types,
		AttentionMask: mask,
		Tokens:        e.tokens,
		Offsets:       e.offsets,
		SequenceIDs:   e.seqIDs,
	}
}

// padBatch pads every encoding to the longest (rounded up to the file's
// pad_to_multiple_of).
func (t *Tokenizer) padBatch(encs []Encoding) {
	longest := 0
	for _, e := range encs {
		longest = max(longest, len(e.IDs))
	}
	if m := t.pad.multiple; m > 0 && longest%m != 0 {
		longest += m - longest%m
	}
	for i := range encs {
		encs[i].pad(longest, t.pad)
	}
}
