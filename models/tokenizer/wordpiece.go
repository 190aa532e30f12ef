package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// wordPiece is BERT's greedy longest-match-first subword model: a word is
// cut into the longest vocabulary piece from its start, then the longest
// continuation piece ("##" + rest) from there, and so on; a word that cannot
// be covered, or has more than maxChars characters, becomes one unknown
// token.
type wordPiece struct {
	pieces   []string
	ids      map[string]int // the vocabulary as it is
	initial  map[string]int // pieces that may start a word
	cont     map[string]int // continuation pieces, prefix cut off
	prefix   string
	unk      string
	unkID    int
	maxChars int
	maxLen   int // longest piece in bytes, prefix not counted
}

func newWordPiece(vocab map[string]int, unk, prefix string, maxChars int) (*wordPiece, error) {
	unkID, ok := vocab[unk]
	if !ok {
		return nil, fmt.Errorf("unk_token %q is not in the vocab", unk)
	}
	size := 0
	for _, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("negative id %d in the vocab", id)
		}
		size = max(size, id+1)
	}
	w := &wordPiece{
		pieces:   make([]string, size),
		ids:      vocab,
		initial:  make(map[string]int, len(vocab)),
		cont:     make(map[string]int, len(vocab)/4),
		prefix:   prefix,
		unk:      unk,
		unkID:    unkID,
		maxChars: maxChars,
	}
	for p, id := range vocab {
		w.pieces[id] = p
		w.initial[p] = id
		w.maxLen = max(w.maxLen, len(p))
		if prefix != "" && len(p) > len(prefix) && p[:len(prefix)] == prefix {
			w.cont[p[len(prefix):]] = id
		}
	}
	if prefix == "" {
		w.cont = w.initial
	}
	return w, nil
}

func (w *wordPiece) kind() string    { return "wordpiece" }
func (w *wordPiece) vocab() []string { return w.pieces }

func (w *wordPiece) tokenID(piece string) (int, bool) {
	id, ok := w.ids[piece]
	return id, ok
}

func (w *wordPiece) tokenize(s string, out []token, _ *scratch) []token {
	if utf8.RuneCountInString(s) > w.maxChars {
		return append(out, token{id: w.unkID, value: w.unk, start: 0, end: len(s)})
	}
	first := len(out)
	for start := 0; start < len(s); {
		vocab := w.initial
		if start > 0 {
			vocab = w.cont
		}
		// The longest candidate that can be a piece, cut back to a
		// character boundary.
		end := min(len(s), start+w.maxLen)
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end--
		}
		found := false
		for end > start {
			if id, ok := vocab[s[start:end]]; ok {
				out = append(out, token{id: id, value: w.pieces[id], start: start, end: end})
				found = true
				break
			}
			_, sz := utf8.DecodeLastRuneInString(s[start:end])
			end -= sz
		}
		if !found {
			out = out[:first]
			return append(out, token{id: w.unkID, value: w.unk, start: 0, end: len(s)})
		}
		start = end
	}
	return out
}
