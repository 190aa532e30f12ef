package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// seqEncoding is one sequence (or, after post-processing, the whole input)
// as tokens.
type seqEncoding struct {
	ids     []int64
	types   []int64
	tokens  []string
	offsets [][2]int
	seqIDs  []int
}

func (e *seqEncoding) len() int { return len(e.ids) }

func (e *seqEncoding) reserve(n int) {
	e.ids = make([]int64, 0, n)
	e.tokens = make([]string, 0, n)
	e.offsets = make([][2]int, 0, n)
}

func (e *seqEncoding) truncate(n int) {
	if n >= len(e.ids) {
		return
	}
	n = max(n, 0)
	e.ids, e.types, e.tokens, e.offsets, e.seqIDs = e.ids[:n], e.types[:n], e.tokens[:n], e.offsets[:n], e.seqIDs[:n]
}

func (e *seqEncoding) append(o *seqEncoding, typeID int64, overrideType bool) {
	e.ids = append(e.ids, o.ids...)
	e.tokens = append(e.tokens, o.tokens...)
	e.offsets = append(e.offsets, o.offsets...)
	e.seqIDs = append(e.seqIDs, o.seqIDs...)
	if overrideType {
		for range o.ids {
			e.types = append(e.types, typeID)
		}
	} else {
		e.types = append(e.types, o.types...)
	}
}

func (e *seqEncoding) appendSpecial(id int64, tok string, typeID int64) {
	e.ids = append(e.ids, id)
	e.tokens = append(e.tokens, tok)
	e.offsets = append(e.offsets, [2]int{0, 0})
	e.seqIDs = append(e.seqIDs, -1)
	e.types = append(e.types, typeID)
}

// postProcessor adds the special tokens around the sequences.
type postProcessor interface {
	// added is how many tokens it adds to one sequence or to a pair.
	added(pair bool) int
	// process turns one or two sequences into one or more encodings; the
	// last step of a chain leaves exactly one.
	process(encs []*seqEncoding) []*seqEncoding
}

// mergeAll concatenates encodings as they are (no post-processor).
func mergeAll(encs []*seqEncoding) *seqEncoding {
	if len(encs) == 1 {
		return encs[0]
	}
	out := &seqEncoding{}
	for _, e := range encs {
		out.append(e, 0, false)
	}
	return out
}

// templatePiece is one item of a template: a sequence ($A or $B) or a
// special token, with the type id its tokens get.
type templatePiece struct {
	seq     int    // 0 for $A, 1 for $B, -1 for a special token
	special string // the special token's key in specials
	typeID  int64
}

type specialTokens struct {
	ids    []int64
	tokens []string
}

// templateProcessing is TemplateProcessing: e.g. "[CLS] $A [SEP]" and
// "[CLS] $A [SEP] $B:1 [SEP]:1".
type templateProcessing struct {
	single, pair []templatePiece
	specials     map[string]specialTokens
}

func (t *templateProcessing) added(pair bool) int {
	tpl := t.single
	if pair {
		tpl = t.pair
	}
	n := 0
	for _, p := range tpl {
		if p.seq < 0 {
			n += len(t.specials[p.special].ids)
		}
	}
	return n
}

func (t *templateProcessing) process(encs []*seqEncoding) []*seqEncoding {
	tpl := t.single
	if len(encs) > 1 {
		tpl = t.pair
	}
	out := &seqEncoding{}
	for _, p := range tpl {
		if p.seq >= 0 {
			if p.seq < len(encs) {
				out.append(encs[p.seq], p.typeID, true)
			}
			continue
		}
		sp := t.specials[p.special]
		for i, id := range sp.ids {
			out.appendSpecial(id, sp.tokens[i], p.typeID)
		}
	}
	return []*seqEncoding{out}
}

// clsSep is RobertaProcessing ("<s> A </s></s> B </s>", all type ids 0,
// offsets optionally trimmed of whitespace) and BertProcessing ("[CLS] A
// [SEP] B [SEP]", B and its [SEP] with type id 1).
type clsSep struct {
	cls, sep       int64
	clsTok, sepTok string
	roberta        bool
	trimOffsets    bool
	addPrefixSpace bool
}

func (c *clsSep) added(pair bool) int {
	switch {
	case !pair:
		return 2
	case c.roberta:
		return 4
	default:
		return 3
	}
}

func (c *clsSep) process(encs []*seqEncoding) []*seqEncoding {
	if c.roberta {
		for _, e := range encs {
			if c.trimOffsets {
				trimOffsets(e, c.addPrefixSpace)
			}
			for i := range e.types {
				e.types[i] = 0
			}
		}
	}
	out := &seqEncoding{}
	out.appendSpecial(c.cls, c.clsTok, 0)
	out.append(encs[0], 0, false)
	out.appendSpecial(c.sep, c.sepTok, 0)
	if len(encs) > 1 {
		typeB := int64(1)
		if c.roberta {
			typeB = 0
			out.appendSpecial(c.sep, c.sepTok, 0)
		}
		out.append(encs[1], 0, false)
		out.appendSpecial(c.sep, c.sepTok, typeB)
	}
	return []*seqEncoding{out}
}

// byteLevelProcessing is the ByteLevel post-processor: it only trims
// whitespace off offsets.
type byteLevelProcessing struct{ trimOffsets, addPrefixSpace bool }

func (byteLevelProcessing) added(bool) int { return 0 }

func (b byteLevelProcessing) process(encs []*seqEncoding) []*seqEncoding {
	if b.trimOffsets {
		for _, e := range encs {
			trimOffsets(e, b.addPrefixSpace)
		}
	}
	return encs
}

type processorSeq []postProcessor

func (s processorSeq) added(pair bool) int {
	n := 0
	for _, p := range s {
		n += p.added(pair)
	}
	return n
}

func (s processorSeq) process(encs []*seqEncoding) []*seqEncoding {
	for _, p := range s {
		encs = p.process(encs)
	}
	return encs
}

// trimOffsets moves token offsets off leading and trailing whitespace
// ("Ġ" counts as a space), as the HF library's byte-level process_offsets
// does, counting the UTF-8 bytes of those characters; one leading byte of
// the first token stays when a prefix space was added.
func trimOffsets(e *seqEncoding, addPrefixSpace bool) {
	isTrimmed := func(r rune) bool { return r == 'Ġ' || unicode.IsSpace(r) }
	for i, tok := range e.tokens {
		lead, trail := 0, 0
		for _, r := range tok {
			if !isTrimmed(r) {
				break
			}
			lead += utf8.RuneLen(r)
		}
		for rest := tok; rest != ""; {
			r, sz := utf8.DecodeLastRuneInString(rest)
			if !isTrimmed(r) {
				break
			}
			trail += sz
			rest = rest[:len(rest)-sz]
		}
		if lead == 0 && trail == 0 {
			continue
		}
		off := &e.offsets[i]
		if lead > 0 {
			first := i == 0 || off[0] == 0
			if first && addPrefixSpace && lead == 1 {
				lead = 0
			}
			off[0] = min(off[0]+lead, off[1])
		}
		if trail > 0 && off[1] >= trail {
			off[1] = max(off[1]-trail, off[0])
		}
	}
}
