package tokenizer

// Encoding is the model input for one text or pair of texts.
type Encoding struct {
	IDs           []int64 // token ids, special tokens included
	TypeIDs       []int64 // token_type_ids: 0 for the first text, 1 for the second where the template says so
	AttentionMask []int64 // 1 for real tokens, 0 for padding
	Tokens        []string
	// Offsets are byte offsets into the original string of the text the
	// token came from; [0,0] for special tokens and padding. Tokens that
	// share a character share its offsets (e.g. "▁" and "你好" both point
	// at "你好" when the normalizer drops nothing in between).
	Offsets     [][2]int
	SequenceIDs []int // 0 or 1 for tokens of the first/second text, -1 for special tokens and padding
}

// Len is the number of tokens, padding included.
func (e Encoding) Len() int { return len(e.IDs) }

func (e *Encoding) pad(n int, p padding) {
	k := n - len(e.IDs)
	if k <= 0 {
		return
	}
	ids := make([]int64, k)
	types := make([]int64, k)
	mask := make([]int64, k)
	toks := make([]string, k)
	offs := make([][2]int, k)
	seq := make([]int, k)
	for i := range k {
		ids[i], types[i], toks[i], seq[i] = p.id, p.typeID, p.token, -1
	}
	if p.left {
		e.IDs = append(ids, e.IDs...)
		e.TypeIDs = append(types, e.TypeIDs...)
		e.AttentionMask = append(mask, e.AttentionMask...)
		e.Tokens = append(toks, e.Tokens...)
		e.Offsets = append(offs, e.Offsets...)
		e.SequenceIDs = append(seq, e.SequenceIDs...)
		return
	}
	e.IDs = append(e.IDs, ids...)
	e.TypeIDs = append(e.TypeIDs, types...)
	e.AttentionMask = append(e.AttentionMask, mask...)
	e.Tokens = append(e.Tokens, toks...)
	e.Offsets = append(e.Offsets, offs...)
	e.SequenceIDs = append(e.SequenceIDs, seq...)
}

// Truncation limits the length of an encoding.
//
// Stride (the overlap of overflowing windows) is accepted but ignored:
// tokens past MaxLength are dropped, not returned as overflow.
type Truncation struct {
	MaxLength int    // 0: no truncation; special tokens count
	Strategy  string // "longest_first" (default), "only_first", "only_second"
	Stride    int    // ignored
}

// Truncation strategies.
const (
	LongestFirst = "longest_first"
	OnlyFirst    = "only_first"
	OnlySecond   = "only_second"
)

// truncate cuts a (and b, for a pair) so that they fit in tr.MaxLength with
// the special tokens the post-processor adds, as the HF library does:
// longest_first cuts the longer sequence down to the shorter one, then
// shares what is left evenly (the odd token to the longer one); only_first
// and only_second cut one sequence.
//
// Where the library fails (only_first or only_second cannot make it fit,
// only_second without a second sequence) this falls back to longest_first.
func (t *Tokenizer) truncate(a, b *seqEncoding, tr Truncation) {
	if tr.MaxLength <= 0 {
		return
	}
	pair := b != nil
	maxLen := tr.MaxLength
	if t.processor != nil {
		maxLen = max(0, maxLen-t.processor.added(pair))
	}
	total := a.len()
	if pair {
		total += b.len()
	}
	if total <= maxLen {
		return
	}
	excess := total - maxLen
	switch tr.Strategy {
	case OnlyFirst:
		if a.len() > excess {
			a.truncate(a.len() - excess)
			return
		}
	case OnlySecond:
		if pair && b.len() > excess {
			b.truncate(b.len() - excess)
			return
		}
	}
	if !pair {
		a.truncate(maxLen)
		return
	}
	// n1 is the shorter sequence's share, n2 the longer one's.
	n1, n2 := a.len(), b.len()
	swap := n1 > n2
	if swap {
		n1, n2 = n2, n1
	}
	if n1 > maxLen {
		n2 = n1
	} else {
		n2 = max(n1, maxLen-n1)
	}
	if n1+n2 > maxLen {
		n1 = maxLen / 2
		n2 = n1 + maxLen%2
	}
	if swap {
		n1, n2 = n2, n1
	}
	a.truncate(n1)
	b.truncate(n2)
}
