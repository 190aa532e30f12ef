package models

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/exocortex/exocortex/models/tokenizer"
)

// The passage window: when a (query, passage) pair is longer than the
// reranker's input, the part of the passage kept is the run of tokens that
// holds the most distinct query words, centred on where they occur, instead
// of the passage's head. Words are matched by their first keyLen letters,
// lower-cased (a crude stem that serves Russian endings and English plurals
// alike); words shorter than minWord letters are ignored (most are function
// words).
const (
	keyLen  = 5
	minWord = 3
)

// wordSpan is one word of a text: its byte range and its key.
type wordSpan struct {
	start, end int
	key        string
}

// words splits text into runs of letters and digits.
func words(text string) []wordSpan {
	var out []wordSpan
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := text[start:end]
		if utf8.RuneCountInString(w) >= minWord {
			out = append(out, wordSpan{start: start, end: end, key: wordKey(w)})
		}
		start = -1
	}
	for i, r := range text {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
	return out
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

func wordKey(w string) string {
	w = strings.ToLower(w)
	w = strings.ReplaceAll(w, "ё", "е")
	n := 0
	for i := range w {
		if n == keyLen {
			return w[:i]
		}
		n++
	}
	return w
}

// queryKeys are the distinct keys of the query's words.
func queryKeys(query string) map[string]int {
	keys := map[string]int{}
	for _, w := range words(query) {
		if _, ok := keys[w.key]; !ok {
			keys[w.key] = len(keys)
		}
	}
	return keys
}

// windowOf picks, among the passage's tokens (offsets into passage, special
// tokens excluded), the n consecutive ones that hold the most distinct query
// words (then the most occurrences, then the earliest), shifted so that the
// matched words sit in its middle. It returns the token range [lo, hi).
// With no query word in the passage it is the head, as plain truncation.
func windowOf(keys map[string]int, passage string, offsets [][2]int, n int) (lo, hi int) {
	total := len(offsets)
	if n >= total || n <= 0 {
		return 0, total
	}
	match := tokenMatches(keys, passage, offsets)
	weight := matchWeights(match, len(keys))
	best, ok := bestWindow(match, weight, n)
	if !ok {
		return 0, n
	}
	// Centre the window on the telling matches it holds (those of words
	// weighing at least half the most telling one's).
	top := 0.0
	for i := best; i < best+n; i++ {
		if match[i] >= 0 {
			top = max(top, weight[match[i]])
		}
	}
	first, last := -1, -1
	for i := best; i < best+n; i++ {
		if match[i] >= 0 && weight[match[i]] >= top/2 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	lo = first - (n-(last-first+1))/2
	lo = max(0, min(lo, total-n))
	return lo, lo + n
}

// tokenMatches returns the query word (index into keys) each token
// belongs to, or -1. One occurrence of a word is one match, on its first
// token piece.
func tokenMatches(keys map[string]int, passage string, offsets [][2]int) []int {
	match := make([]int, len(offsets))
	ws := words(passage)
	wi, lastWord := 0, -1
	for i, off := range offsets {
		match[i] = -1
		for wi < len(ws) && ws[wi].end <= off[0] {
			wi++
		}
		if wi < len(ws) && ws[wi].start < off[1] && off[0] < ws[wi].end && wi != lastWord {
			lastWord = wi
			if k, ok := keys[ws[wi].key]; ok {
				match[i] = k
			}
		}
	}
	return match
}

// matchWeights weighs each of the nKeys query words 1/(its occurrences in
// match): a word that is everywhere in the passage ("the", "что") tells
// little about where to look.
func matchWeights(match []int, nKeys int) []float64 {
	occ := make([]int, nKeys)
	for _, k := range match {
		if k >= 0 {
			occ[k]++
		}
	}
	weight := make([]float64, nKeys)
	for k, n := range occ {
		if n > 0 {
			weight[k] = 1 / float64(n)
		}
	}
	return weight
}

// windowScore is a sliding window's distinct query words, weighed, and
// its matches.
type windowScore struct {
	match  []int
	weight []float64
	count  []int // each query word's matches in the window
	score  float64
	hits   int
}

// add adds token i to the window (d 1) or takes it out (d -1).
func (w *windowScore) add(i, d int) {
	k := w.match[i]
	if k < 0 {
		return
	}
	if w.count[k] == 0 && d > 0 {
		w.score += w.weight[k]
	}
	w.count[k] += d
	if w.count[k] == 0 && d < 0 {
		w.score -= w.weight[k]
	}
	w.hits += d
}

// bestWindow returns the start of the n tokens with the highest score
// (then the most matches, then the earliest); ok is false when no window
// holds a query word.
func bestWindow(match []int, weight []float64, n int) (best int, ok bool) {
	w := windowScore{match: match, weight: weight, count: make([]int, len(weight))}
	for i := 0; i < n; i++ {
		w.add(i, 1)
	}
	const eps = 1e-9
	bestScore, bestHits := w.score, w.hits
	for s := 1; s+n <= len(match); s++ {
		w.add(s-1, -1)
		w.add(s+n-1, 1)
		if w.score > bestScore+eps || w.score > bestScore-eps && w.hits > bestHits {
			best, bestScore, bestHits = s, w.score, w.hits
		}
	}
	return best, bestScore >= eps
}

// windowPassage returns the part of passage that fits in room tokens
// around the query's words (the whole passage when it fits).
func windowPassage(tok *tokenizer.Tokenizer, keys map[string]int, passage string, room int) string {
	enc := tok.Encode(passage, tokenizer.Truncation{})
	offsets := make([][2]int, 0, len(enc.Offsets))
	for i, off := range enc.Offsets {
		if enc.SequenceIDs[i] == 0 {
			offsets = append(offsets, off)
		}
	}
	if room <= 0 || len(offsets) <= room {
		return passage
	}
	lo, hi := windowOf(keys, passage, offsets, room)
	start, end := offsets[lo][0], offsets[hi-1][1]
	// A window that starts inside a word starts after it instead: the
	// word's tail alone would read as another word, and tokenized on its
	// own it could take more tokens than the room.
	from := start
	if r, _ := utf8.DecodeLastRuneInString(passage[:start]); start > 0 && isWordRune(r) {
		for from < end {
			r, size := utf8.DecodeRuneInString(passage[from:])
			if !isWordRune(r) {
				break
			}
			from += size
		}
	}
	if w := strings.TrimSpace(passage[from:end]); w != "" {
		return w
	}
	return passage[start:end]
}
