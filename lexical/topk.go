package lexical

import (
	"container/heap"
	"sort"
)

// better orders hits: higher score first, then lower id.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// topK keeps the k best hits offered, the worst on top of a heap.
type topK struct {
	k int
	h hitHeap
}

func (t *topK) offer(x Hit) {
	if len(t.h) < t.k {
		heap.Push(&t.h, x)
		return
	}
	if better(x, t.h[0]) {
		t.h[0] = x
		heap.Fix(&t.h, 0)
	}
}

func (t *topK) sorted() []Hit {
	out := []Hit(t.h)
	sort.Slice(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}

// hitHeap is a min-heap by better: the worst hit is at 0.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
