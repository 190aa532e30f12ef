package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// token is a model's output for one word: offsets are byte offsets into
// the word's normalized string.
type token struct {
	id         int
	value      string
	start, end int
}

// model turns a pre-tokenized word into tokens.
type model interface {
	tokenize(word string, out []token, sc *scratch) []token
	// vocab returns the model's pieces by id ("" for a gap).
	vocab() []string
	tokenID(piece string) (int, bool)
	kind() string
}

// scratch is memory a model reuses from one word to the next within one
// call of Encode.
type scratch struct {
	best []bestNode
}

// unkPenalty is what an unknown character costs below the lowest score.
const unkPenalty = 10.0

// unigram is the Unigram language model of SentencePiece: the best
// segmentation is the one whose pieces' log-probabilities add up highest
// (Viterbi over every piece that starts at every character). Characters no
// piece covers are unknown; runs of them become one unknown token, or their
// UTF-8 bytes as <0xXX> pieces with byte_fallback.
type unigram struct {
	pieces       []string
	scores       []float64
	ids          map[string]int
	unkID        int // -1: none; unknown characters are then dropped
	byteFallback bool
	byteIDs      [256]int
	minScore     float64
	trie         pieceTrie
}

type scoredPiece struct {
	piece string
	score float64
}

func newUnigram(vocab []scoredPiece, unkID int, byteFallback bool) (*unigram, error) {
	if len(vocab) == 0 {
		return nil, fmt.Errorf("empty vocab")
	}
	if unkID >= len(vocab) {
		return nil, fmt.Errorf("unk_id %d is outside the vocab of %d pieces", unkID, len(vocab))
	}
	u := &unigram{
		pieces:       make([]string, len(vocab)),
		scores:       make([]float64, len(vocab)),
		ids:          make(map[string]int, len(vocab)),
		unkID:        unkID,
		byteFallback: byteFallback,
		minScore:     math.Inf(1),
	}
	for i, p := range vocab {
		u.pieces[i] = p.piece
		u.scores[i] = p.score
		u.ids[p.piece] = i
		u.minScore = min(u.minScore, p.score)
	}
	for b := range 256 {
		u.byteIDs[b] = -1
		if id, ok := u.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			u.byteIDs[b] = id
		}
	}
	u.trie = buildTrie(u.pieces)
	return u, nil
}

func (u *unigram) kind() string    { return "unigram" }
func (u *unigram) vocab() []string { return u.pieces }

func (u *unigram) tokenID(piece string) (int, bool) {
	id, ok := u.ids[piece]
	return id, ok
}

// bestNode is the best path that ends at a byte position: its score, where
// its last piece starts (-1: not reached yet) and that piece's id (-1: an
// unknown character with no unk_id).
type bestNode struct {
	score float64
	start int32
	id    int32
}

func (u *unigram) tokenize(s string, out []token, sc *scratch) []token {
	n := len(s)
	if n == 0 {
		return out
	}
	if cap(sc.best) < n+1 {
		sc.best = make([]bestNode, n+1, max(n+1, 64))
	}
	best := sc.best[:n+1]
	for i := range best {
		best[i] = bestNode{start: -1}
	}
	unkScore := u.minScore - unkPenalty
	t := &u.trie
	for i := 0; i < n; {
		_, mblen := utf8.DecodeRuneInString(s[i:])
		base := best[i].score
		single := false
		// Every piece that starts at i, shortest first.
		node := t.root[s[i]]
		for depth := 1; node >= 0; depth++ {
			if id := t.value[node]; id >= 0 {
				cand := u.scores[id] + base
				b := &best[i+depth]
				if b.start < 0 || cand > b.score {
					*b = bestNode{cand, int32(i), id}
				}
				if depth == mblen {
					single = true
				}
			}
			if i+depth >= n {
				break
			}
			node = t.child(node, s[i+depth])
		}
		if !single {
			cand := unkScore + base
			b := &best[i+mblen]
			if b.start < 0 || cand > b.score {
				*b = bestNode{cand, int32(i), int32(u.unkID)}
			}
		}
		i += mblen
	}

	first := len(out)
	unkEnd := -1 // end of the run of unknown pieces being fused, going backwards
	for end := n; end > 0; {
		b := best[end]
		start := int(b.start)
		if b.id < 0 || int(b.id) == u.unkID {
			if unkEnd < 0 {
				unkEnd = end
			}
		} else {
			if unkEnd >= 0 {
				out = u.unknown(s, end, unkEnd, out)
				unkEnd = -1
			}
			out = append(out, token{id: int(b.id), value: u.pieces[b.id], start: start, end: end})
		}
		end = start
	}
	if unkEnd >= 0 {
		out = u.unknown(s, 0, unkEnd, out)
	}
	slices.Reverse(out[first:])
	return out
}

// unknown appends the token(s) for the fused unknown run s[start:end]. They
// are appended in reverse order, like everything in tokenize's backtrack.
func (u *unigram) unknown(s string, start, end int, out []token) []token {
	text := s[start:end]
	if id, ok := u.ids[text]; ok {
		return append(out, token{id: id, value: text, start: start, end: end})
	}
	if u.byteFallback {
		all := true
		for i := 0; i < len(text); i++ {
			if u.byteIDs[text[i]] < 0 {
				all = false
				break
			}
		}
		if all {
			for i := len(text) - 1; i >= 0; i-- {
				id := u.byteIDs[text[i]]
				out = append(out, token{id: id, value: u.pieces[id], start: start, end: end})
			}
			return out
		}
	}
	if u.unkID < 0 {
		return out
	}
	return append(out, token{id: u.unkID, value: text, start: start, end: end})
}

// pieceTrie is a byte trie of the vocabulary: every node's children are
// sorted by label and stored together, the root's in a direct table.
type pieceTrie struct {
	root   [256]int32
	first  []int32 // first child of each node in labels/next
	count  []uint16
	labels []byte
	next   []int32
	value  []int32 // id of the piece that ends at the node, -1 if none
}

func (t *pieceTrie) child(node int32, b byte) int32 {
	lo, hi := int(t.first[node]), int(t.first[node])+int(t.count[node])
	labels := t.labels
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case labels[m] < b:
			lo = m + 1
		case labels[m] > b:
			hi = m
		default:
			return t.next[m]
		}
	}
	return -1
}

// buildTrie builds the trie breadth-first from the sorted pieces; a piece
// that occurs twice maps to its last id, like a map filled in order.
func buildTrie(pieces []string) pieceTrie {
	order := make([]int32, 0, len(pieces))
	total := 0
	for id, p := range pieces {
		if p != "" {
			order = append(order, int32(id))
			total += len(p)
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Keep the last of equal pieces.
	keys := make([]string, 0, len(order))
	ids := make([]int32, 0, len(order))
	for i, id := range order {
		if i+1 < len(order) && pieces[order[i+1]] == pieces[id] {
			continue
		}
		keys = append(keys, pieces[id])
		ids = append(ids, id)
	}

	var t pieceTrie
	// A node per byte at most; usually far fewer.
	guess := total/2 + 1024
	t.first = make([]int32, 0, guess)
	t.count = make([]uint16, 0, guess)
	t.value = make([]int32, 0, guess)
	t.labels = make([]byte, 0, guess)
	t.next = make([]int32, 0, guess)
	type item struct {
		node   int32
		lo, hi int
		depth  int
	}
	newNode := func() int32 {
		t.first = append(t.first, 0)
		t.count = append(t.count, 0)
		t.value = append(t.value, -1)
		return int32(len(t.value) - 1)
	}
	rootNode := newNode()
	queue := []item{{rootNode, 0, len(keys), 0}}
	for qi := 0; qi < len(queue); qi++ {
		it := queue[qi]
		lo := it.lo
		if lo < it.hi && len(keys[lo]) == it.depth {
			t.value[it.node] = ids[lo]
			lo++
		}
		t.first[it.node] = int32(len(t.labels))
		for lo < it.hi {
			b := keys[lo][it.depth]
			hi := lo + 1
			for hi < it.hi && keys[hi][it.depth] == b {
				hi++
			}
			c := newNode()
			t.labels = append(t.labels, b)
			t.next = append(t.next, c)
			queue = append(queue, item{c, lo, hi, it.depth + 1})
			lo = hi
		}
		t.count[it.node] = uint16(int(len(t.labels)) - int(t.first[it.node]))
		if qi > 4096 {
			// Drop the processed part of the queue now and then.
			queue = queue[qi+1:]
			qi = -1
		}
	}
	for b := range 256 {
		t.root[b] = t.child(rootNode, byte(b))
	}
	return t
}
