// Package lexical is an in-memory inverted index over the analyzer's output
// that ranks rows with the same BM25 as the store's FTS5 table: the same five
// columns (body, lemmas, title, section, heads), the same column weights, the
// same query semantics (a query's words against body, title and section; its
// lemmas against lemmas and heads; any of them may match) and the same
// formula as FTS5's bm25() (k1 = 1.2, b = 0.75, per-phrase IDF
// log((N - n + 0.5) / (n + 0.5)) floored at 1e-6, the weighted term frequency
// of each phrase summed over its columns, the row's length in tokens over
// all columns against the average). So the ranking equals FTS5's, without
// FTS5's cost of reading every matching row's position lists from SQLite
// pages.
//
// The index holds no text: rows are space-separated terms, as the store's
// full-text columns hold them. SQLite stays the store of record; the store
// keeps an Index in step with its full-text table (see store.LexicalMemory).
//
// Deletes and replacements leave tombstones: the old posting stays in its
// list, marked dead through its row, and is skipped by searches; when dead
// rows pass a quarter of all rows the index compacts (rewrites its lists
// without them).
package lexical

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"
)

// Columns of a row, in the order of the store's FTS5 table.
const (
	Body = iota
	Lemmas
	Title
	Section
	Heads
	NumColumns
)

// wordCols and lemmaCols are the columns a query's words and lemmas match,
// in the order of a posting's term frequencies.
var (
	wordCols  = [3]int{Body, Title, Section}
	lemmaCols = [3]int{Lemmas, Heads, -1}
)

// BM25 parameters, those of FTS5's bm25().
const (
	K1 = 1.2
	B  = 0.75
)

// Row is one indexed row: the store's full-text row of a chunk.
type Row struct {
	// ID is the row's id (the chunk's rowid in the store).
	ID int64
	// Lang is the chunk's language ("" when undetermined); searches may
	// filter on it.
	Lang string
	// Cols are the columns' space-separated terms.
	Cols [NumColumns]string
}

// Weights are the columns' BM25 weights, in column order.
type Weights [NumColumns]float64

// Query is an analysed query: Words match body, title and section; Terms
// (lemmas) match lemmas and heads. Each is one phrase of FTS5's bm25(), so
// a string in both counts twice, once per column group.
type Query struct {
	Words, Terms []string
}

// Hit is one ranked row; Score is BM25, higher is better (FTS5's rank
// negated).
type Hit struct {
	ID    int64
	Score float64
}

// plist is one term's postings in one column group, compressed: per
// posting, the gap from the previous row number (the first from 0) shifted
// left by one as a uvarint, its low bit set when the term's counts in the
// group's three columns are not (1, 0, 0); those counts follow then as one
// tf code (see tfA). Row numbers increase along the list.
type plist struct {
	buf  []byte
	n    uint32 // postings
	last uint32 // the last posting's row number
}

// tf codes: counts (a, b, c) with a < tfA, b < tfB and c < tfB are the one
// byte a + tfA*(b + tfB*c); any others are tfEscape and three uvarints.
// Most postings are (1, 0, 0), which need no code at all.
const (
	tfA      = 15
	tfB      = 4
	tfCodes  = tfA * tfB * tfB // 240
	tfEscape = 0xFF
)

// appendPosting appends row n with counts f (n above the list's last row,
// or the list empty).
func (p *plist) appendPosting(n uint32, f [3]uint16) {
	gap := uint64(n-p.last) << 1
	switch {
	case f == tf100:
		p.buf = binary.AppendUvarint(p.buf, gap)
	case f[0] < tfA && f[1] < tfB && f[2] < tfB:
		p.buf = binary.AppendUvarint(p.buf, gap|1)
		p.buf = append(p.buf, byte(f[0])+tfA*(byte(f[1])+tfB*byte(f[2])))
	default:
		p.buf = binary.AppendUvarint(p.buf, gap|1)
		p.buf = append(p.buf, tfEscape)
		for _, v := range f {
			p.buf = binary.AppendUvarint(p.buf, uint64(v))
		}
	}
	p.n++
	p.last = n
}

// tf100 are the counts of most postings: once in the group's first column.
var tf100 = [3]uint16{1, 0, 0}

// batch is how many postings a search decodes before scoring them.
const batch = 128

// fwUnknown is a search's table of weighted frequencies by tf code before
// any is computed.
var fwUnknown = func() (t [tfCodes]float64) {
	for i := range t {
		t[i] = -1
	}
	return t
}()

// tfOf decodes a one-byte tf code.
func tfOf(c byte) [3]uint16 {
	return [3]uint16{uint16(c % tfA), uint16(c / tfA % tfB), uint16(c / (tfA * tfB))}
}

// cursor walks a plist's postings.
type cursor struct {
	b []byte
	d uint32    // the current posting's row number
	f [3]uint16 // and counts
}

// next moves to the next posting; false at the end. A list is trusted:
// it was written by appendPosting, or checked when a snapshot was read (or,
// format 03, when its term was first asked for).
func (c *cursor) next() bool {
	if len(c.b) == 0 {
		return false
	}
	v, n := binary.Uvarint(c.b)
	c.b = c.b[n:]
	c.d += uint32(v >> 1)
	if v&1 == 0 {
		c.f = tf100
		return true
	}
	code := c.b[0]
	c.b = c.b[1:]
	if code != tfEscape {
		c.f = tfOf(code)
		return true
	}
	for i := range c.f {
		v, n := binary.Uvarint(c.b)
		c.f[i] = uint16(v)
		c.b = c.b[n:]
	}
	return true
}

// Index is the inverted index. Its methods are safe for concurrent use;
// searches run in parallel, writes one at a time.
type Index struct {
	mu sync.RWMutex

	// Per internal row number (assigned in order of Put).
	ids   []int64
	lens  []uint32 // tokens over all columns
	langs []uint8  // into langNames
	alive []bool

	byID      map[int64]uint32
	langNames []string
	langCodes map[string]uint8

	// words and lemmas hold the postings by term, by value: a term costs
	// its map entry and its bytes.
	words, lemmas map[string]plist

	live     int
	totalLen int64
	dead     int

	// readVersion is the snapshot format the index was read from (0: built).
	readVersion int
	// lazy holds the lists of a snapshot read that nobody asked for yet
	// (see lazyLists); nil once every list is in words and lemmas.
	// lazyErr keeps its damage once it is gone.
	lazy    *lazyLists
	lazyErr error

	scratch sync.Pool
	// putWords and putLemmas are put's term counts, reused.
	putWords, putLemmas map[string][3]uint16
}

// New returns an empty index.
func New() *Index {
	x := &Index{}
	x.reset()
	return x
}

func (x *Index) reset() {
	x.ids, x.lens, x.langs, x.alive = nil, nil, nil, nil
	x.byID = map[int64]uint32{}
	x.langNames = []string{""}
	x.langCodes = map[string]uint8{"": 0}
	x.words, x.lemmas = map[string]plist{}, map[string]plist{}
	x.live, x.totalLen, x.dead = 0, 0, 0
	x.lazy, x.lazyErr = nil, nil
}

// Reset empties the index.
func (x *Index) Reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reset()
}

// Len is the number of rows.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// LangCounts counts the live rows of each language ("" for rows without
// one).
func (x *Index) LangCounts() map[string]int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var per [256]int
	for n, l := range x.langs {
		if x.alive[n] {
			per[l]++
		}
	}
	out := map[string]int{}
	for code, name := range x.langNames {
		if per[code] > 0 {
			out[name] = per[code]
		}
	}
	return out
}

// Stats describe the index.
type Stats struct {
	// Rows are live rows; Dead are tombstones not yet compacted away.
	Rows, Dead int
	// Terms counts the distinct terms of each column group; Postings all
	// postings, dead ones included.
	Terms, Postings int
}

// Stats returns the index's counts.
func (x *Index) Stats() Stats {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.materialize()
	s := Stats{Rows: x.live, Dead: x.dead, Terms: len(x.words) + len(x.lemmas)}
	for _, m := range []map[string]plist{x.words, x.lemmas} {
		for _, p := range m {
			s.Postings += int(p.n)
		}
	}
	return s
}

// Put adds a row, replacing the row with the same ID.
func (x *Index) Put(r Row) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.del(r.ID)
	x.put(r)
	x.maybeCompact()
}

// Delete removes the row with id; an unknown id is fine.
func (x *Index) Delete(id int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.del(id)
	x.maybeCompact()
}

func (x *Index) del(id int64) {
	n, ok := x.byID[id]
	if !ok {
		return
	}
	delete(x.byID, id)
	x.alive[n] = false
	x.live--
	x.dead++
	x.totalLen -= int64(x.lens[n])
}

func (x *Index) put(r Row) {
	n := uint32(len(x.ids))
	code, ok := x.langCodes[r.Lang]
	if !ok && len(x.langNames) < 256 {
		code = uint8(len(x.langNames))
		x.langNames = append(x.langNames, r.Lang)
		x.langCodes[r.Lang] = code
	}
	var length uint32
	if x.putWords == nil {
		x.putWords, x.putLemmas = map[string][3]uint16{}, map[string][3]uint16{}
	}
	words, lemmas := x.putWords, x.putLemmas
	clear(words)
	clear(lemmas)
	count := func(m map[string][3]uint16, col, slot int) {
		text := r.Cols[col]
		for len(text) > 0 {
			i := strings.IndexByte(text, ' ')
			t := text
			if i >= 0 {
				t, text = text[:i], text[i+1:]
			} else {
				text = ""
			}
			if t == "" {
				continue
			}
			length++
			f := m[t]
			if f[slot] < math.MaxUint16 {
				f[slot]++
			}
			m[t] = f
		}
	}
	for slot, col := range wordCols {
		count(words, col, slot)
	}
	for slot, col := range lemmaCols[:2] {
		count(lemmas, col, slot)
	}
	x.ids = append(x.ids, r.ID)
	x.lens = append(x.lens, length)
	x.langs = append(x.langs, code)
	x.alive = append(x.alive, true)
	x.byID[r.ID] = n
	x.live++
	x.totalLen += int64(length)
	add := func(g int, m map[string][3]uint16) {
		lists := x.groupLists(g)
		for t, f := range m {
			p, ok := lists[t]
			if !ok && x.lazy != nil {
				p = x.lazy.get(g, t)
			}
			p.appendPosting(n, f)
			if !ok {
				// The key must not keep the row's whole column alive.
				t = strings.Clone(t)
			}
			lists[t] = p
		}
	}
	add(0, words)
	add(1, lemmas)
}

// CompactFraction and CompactMin: the index compacts when its dead rows
// pass this fraction of all rows and CompactMin rows.
var (
	CompactFraction = 0.25
	CompactMin      = 1000
)

func (x *Index) maybeCompact() {
	if x.dead > CompactMin && float64(x.dead) > CompactFraction*float64(x.live+x.dead) {
		x.compact()
	}
}

// Compact rewrites the index without its tombstones.
func (x *Index) Compact() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.compact()
}

func (x *Index) compact() {
	if x.dead == 0 {
		return
	}
	x.materialize()
	remap := make([]uint32, len(x.ids))
	ids := make([]int64, 0, x.live)
	lens := make([]uint32, 0, x.live)
	langs := make([]uint8, 0, x.live)
	for n, ok := range x.alive {
		if !ok {
			remap[n] = math.MaxUint32
			continue
		}
		remap[n] = uint32(len(ids))
		ids = append(ids, x.ids[n])
		lens = append(lens, x.lens[n])
		langs = append(langs, x.langs[n])
	}
	var tmp plist
	for _, lists := range []map[string]plist{x.words, x.lemmas} {
		for t, p := range lists {
			tmp = plist{buf: tmp.buf[:0]}
			c := cursor{b: p.buf}
			for c.next() {
				if m := remap[c.d]; m != math.MaxUint32 {
					tmp.appendPosting(m, c.f)
				}
			}
			if tmp.n == 0 {
				delete(lists, t)
				continue
			}
			lists[t] = plist{buf: bytes.Clone(tmp.buf), n: tmp.n, last: tmp.last}
		}
	}
	x.ids, x.lens, x.langs = ids, lens, langs
	x.alive = make([]bool, len(ids))
	for i := range x.alive {
		x.alive[i] = true
	}
	for n, id := range ids {
		x.byID[id] = uint32(n)
	}
	x.dead = 0
}

// Trim gives back the room that appending left in the postings and the
// per-row arrays: each is copied to a slice of its exact size. A bulk load
// (Put of every row) calls it once at the end; a compaction and a snapshot
// read leave exact sizes already.
func (x *Index) Trim() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.materialize()
	for _, lists := range []map[string]plist{x.words, x.lemmas} {
		for t, p := range lists {
			if cap(p.buf) > len(p.buf) {
				p.buf = bytes.Clone(p.buf)
				lists[t] = p
			}
		}
	}
	x.ids, x.lens, x.langs, x.alive = slices.Clone(x.ids), slices.Clone(x.lens), slices.Clone(x.langs), slices.Clone(x.alive)
}

// DocFreq is the number of rows holding term in any column (FTS5's
// fts5vocab 'row' count).
func (x *Index) DocFreq(term string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.docFreq(term)
}

// DocFreqAbove reports whether more than limit rows hold term in any
// column; it counts only when the term's postings are more than limit.
func (x *Index) DocFreqAbove(term string, limit int) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := int(x.list(0, term).n) + int(x.list(1, term).n)
	return n > limit && x.docFreq(term) > limit
}

func (x *Index) docFreq(term string) int {
	a, b := cursor{b: x.list(0, term).buf}, cursor{b: x.list(1, term).buf}
	okA, okB := a.next(), b.next()
	n := 0
	for okA || okB {
		var d uint32
		switch {
		case !okB || (okA && a.d < b.d):
			d = a.d
			okA = a.next()
		case !okA || b.d < a.d:
			d = b.d
			okB = b.next()
		default:
			d = a.d
			okA, okB = a.next(), b.next()
		}
		if x.alive[d] {
			n++
		}
	}
	return n
}

// slot is a row's accumulator in one search, and the search's stamp when
// it belongs to it: one cache line miss for both.
type slot struct {
	acc   float64
	stamp uint32
}

// scratch is one search's accumulators, indexed by internal row number;
// stamp says which entries belong to the current search.
type scratch struct {
	slots   []slot
	gen     uint32
	touched []uint32
}

// Search returns the k best rows for q by BM25 with the column weights w,
// best first (ties by ID). A non-empty lang keeps rows in that language and
// rows without one; ranking statistics (IDF, average length) are over all
// rows, as in FTS5.
func (x *Index) Search(q Query, k int, w Weights, lang string) []Hit {
	return x.SearchWith(q, k, w, SearchOptions{Lang: lang})
}

// SearchOptions filter a search.
type SearchOptions struct {
	// Lang, when not empty, keeps rows in that language and rows without
	// one.
	Lang string
	// Allow, when not nil, keeps only the rows whose ids it holds (an
	// empty set: none). It is applied before the top-k heap, not after it,
	// so a search returns k rows whenever k allowed rows match.
	Allow *Allow
}

// SearchWith is Search with options: the k best rows among those the
// options allow, best first (ties by ID). Ranking statistics (IDF, average
// length) stay over all live rows, so an allowed row scores as it does
// unfiltered: the result is the unfiltered ranking restricted to the
// allowed rows, cut at k.
func (x *Index) SearchWith(q Query, k int, w Weights, o SearchOptions) []Hit {
	if k <= 0 || (o.Allow != nil && o.Allow.Len() == 0) {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 {
		return nil
	}
	sc := x.takeScratch()
	defer x.scratch.Put(sc)

	s := bm25Scan{x: x, sc: sc, nRow: float64(x.live)}
	s.avgdl = float64(x.totalLen) / s.nRow
	if s.avgdl <= 0 {
		s.avgdl = 1
	}
	s.group(q.Words, 0, [3]float64{w[Body], w[Title], w[Section]})
	s.group(q.Terms, 1, [3]float64{w[Lemmas], w[Heads], 0})
	return x.best(sc, k, o)
}

// takeScratch returns a search's accumulators from the pool, sized for the
// index's rows and stamped with a fresh generation.
func (x *Index) takeScratch() *scratch {
	sc, _ := x.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if len(sc.slots) < len(x.ids) {
		sc.slots, sc.gen = make([]slot, len(x.ids)+len(x.ids)/8), 0
	}
	sc.gen++
	if sc.gen == 0 { // wrapped: stale stamps could match
		clear(sc.slots)
		sc.gen = 1
	}
	sc.touched = sc.touched[:0]
	return sc
}

// bm25Scan is one search's scoring pass: it adds each query phrase's BM25
// contribution to the accumulators of the rows its postings name.
type bm25Scan struct {
	x     *Index
	sc    *scratch
	nRow  float64 // live rows
	avgdl float64 // average row length in tokens
	// fw is the current column group's weighted term frequency per
	// one-byte tf code, -1 until computed; f100 that of counts (1, 0, 0).
	fw   [tfCodes]float64
	f100 float64
}

// group scores the terms of one column group (g 0: words against body,
// title and section; g 1: lemmas against lemmas and heads) with the
// group's column weights cw.
func (s *bm25Scan) group(terms []string, g int, cw [3]float64) {
	if len(terms) == 0 {
		return
	}
	s.fw = fwUnknown // filled as codes are met: a query meets few
	s.f100 = weighted(tf100, cw)
	for _, t := range terms {
		s.phrase(s.x.list(g, t), cw)
	}
}

// liveHits is how many live rows the posting list p names.
func (x *Index) liveHits(p plist) int {
	if x.dead == 0 {
		return int(p.n)
	}
	hits := 0
	c := cursor{b: p.buf}
	for c.next() {
		if x.alive[c.d] {
			hits++
		}
	}
	return hits
}

// phrase adds one phrase's contribution, its IDF times each row's
// saturated weighted frequency, to the rows of its posting list p.
// norm[n] would be k1*(1-b+b*D/avgdl); it is computed per posting instead.
func (s *bm25Scan) phrase(p plist, cw [3]float64) {
	if p.n == 0 {
		return
	}
	hits := s.x.liveHits(p)
	if hits == 0 {
		return
	}
	idf := math.Log((s.nRow - float64(hits) + 0.5) / (float64(hits) + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	norm := K1 * B / s.avgdl
	// Locals, not fields through pointers, in the loop.
	buf, lens, alive, allAlive := p.buf, s.x.lens, s.x.alive, s.x.dead == 0
	slots, gen, touched := s.sc.slots, s.sc.gen, s.sc.touched
	fw, f100 := &s.fw, s.f100
	// A batch of postings is decoded first, then scored: the scoring
	// loop's loads (length, stamp, accumulator) do not wait on the
	// decoding's byte-by-byte chain.
	var ds [batch]uint32
	var fs [batch]float64
	d := uint32(0)
	for i := 0; i < len(buf); {
		m := 0
		for ; m < batch && i < len(buf); m++ {
			v := uint64(buf[i])
			i++
			if v >= 0x80 { // a longer uvarint; two bytes are common
				c := uint64(buf[i])
				i++
				v = v&0x7f | (c&0x7f)<<7
				for shift := 14; c >= 0x80; shift += 7 {
					c = uint64(buf[i])
					i++
					v |= (c & 0x7f) << shift
				}
			}
			d += uint32(v >> 1)
			ds[m] = d
			f := f100
			if v&1 == 0 {
				fs[m] = f
				continue
			}
			code := buf[i]
			i++
			if code != tfEscape {
				if f = fw[code]; f < 0 {
					f = weighted(tfOf(code), cw)
					fw[code] = f
				}
			} else {
				f, i = escapedFreq(buf, i, cw)
			}
			fs[m] = f
		}
		for j, d := range ds[:m] {
			if !allAlive && !alive[d] {
				continue
			}
			f := fs[j]
			add := idf * (f * (K1 + 1)) / (f + K1*(1-B) + norm*float64(lens[d]))
			if a := &slots[d]; a.stamp == gen {
				a.acc += add
			} else {
				a.stamp, a.acc = gen, add
				touched = append(touched, d)
			}
		}
	}
	s.sc.touched = touched
}

// weighted is the weighted term frequency of counts tf in a column group
// with the weights cw.
func weighted(tf [3]uint16, cw [3]float64) float64 {
	return cw[0]*float64(tf[0]) + cw[1]*float64(tf[1]) + cw[2]*float64(tf[2])
}

// escapedFreq decodes the three uvarint counts of an escaped posting at
// buf[i:] and returns their weighted frequency and the offset after them.
func escapedFreq(buf []byte, i int, cw [3]float64) (float64, int) {
	var tf [3]uint16
	for j := range tf {
		v, n := binary.Uvarint(buf[i:])
		tf[j] = uint16(v)
		i += n
	}
	return weighted(tf, cw), i
}

// best returns the k best rows among those the search touched that o
// allows, best first.
func (x *Index) best(sc *scratch, k int, o SearchOptions) []Hit {
	var code uint8
	filter := o.Lang != ""
	if filter {
		c, ok := x.langCodes[o.Lang]
		if !ok {
			c = math.MaxUint8 // no row has it; rows without a language still pass
		}
		code = c
	}
	h := topK{k: k}
	slots, ids, langs, allow := sc.slots, x.ids, x.langs, o.Allow
	for _, d := range sc.touched {
		score := slots[d].acc
		if len(h.h) == k && score < h.h[0].Score {
			continue // worse than the k-th: its id (a cache miss at 1M) is not needed
		}
		if filter && langs[d] != code && langs[d] != 0 {
			continue
		}
		id := ids[d]
		if allow != nil && !allow.Has(id) {
			continue
		}
		h.offer(Hit{ID: id, Score: score})
	}
	return h.sorted()
}
