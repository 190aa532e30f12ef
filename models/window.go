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
	// The query word (index into keys) each token belongs to, or -1.
	match := make([]int, total)
	ws := words(passage)
	wi, lastWord := 0, -1
	for i, off := range offsets {
		match[i] = -1
		for wi < len(ws) && ws[wi].end <= off[0] {
			wi++
		}
		// One occurrence of a word is one match, not one per token piece.
		if wi < len(ws) && ws[wi].start < off[1] && off[0] < ws[wi].end && wi != lastWord {
			lastWord = wi
			if k, ok := keys[ws[wi].key]; ok {
				match[i] = k
			}
		}
	}
	// A word that is everywhere in the passage ("the", "что") tells little
	// about where to look: each query word weighs 1/(its occurrences).
	occ := make([]int, len(keys))
	for _, k := range match {
		if k >= 0 {
			occ[k]++
		}
	}
	weight := make([]float64, len(keys))
	for k, n := range occ {
		if n > 0 {
			weight[k] = 1 / float64(n)
		}
	}
	count := make([]int, len(keys))
	score, hits := 0.0, 0
	add := func(i, d int) {
		k := match[i]
		if k < 0 {
			return
		}
		if count[k] == 0 && d > 0 {
			score += weight[k]
		}
		count[k] += d
		if count[k] == 0 && d < 0 {
			score -= weight[k]
		}
		hits += d
	}
	for i := 0; i < n; i++ {
		add(i, 1)
	}
	const eps = 1e-9
	best, bestScore, bestHits := 0, score, hits
	for s := 1; s+n <= total; s++ {
		add(s-1, -1)
		add(s+n-1, 1)
		if score > bestScore+eps || score > bestScore-eps && hits > bestHits {
			best, bestScore, bestHits = s, score, hits
		}
	}
	if bestScore < eps {
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
