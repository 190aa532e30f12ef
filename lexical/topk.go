package lexical

import "slices"

// better orders hits: higher score first, then lower id.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// topK keeps the k best hits offered: a binary heap with the worst of them
// at 0, so a hit no better than that one is turned away with one compare.
type topK struct {
	k int
	h []Hit
}

func (t *topK) offer(x Hit) {
	h := t.h
	if len(h) < t.k {
		// Sift up.
		h = append(h, x)
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !better(h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		t.h = h
		return
	}
	if !better(x, h[0]) {
		return
	}
	// Replace the worst and sift down.
	h[0] = x
	i := 0
	for {
		w := i
		if l := 2*i + 1; l < len(h) && better(h[w], h[l]) {
			w = l
		}
		if r := 2*i + 2; r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			break
		}
		h[w], h[i] = h[i], h[w]
		i = w
	}
}

func (t *topK) sorted() []Hit {
	out := t.h
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return out
}
