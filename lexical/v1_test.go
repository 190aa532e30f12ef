package lexical

// The index as it was before compressed postings (snapshot format EXOLEX01),
// kept for side-by-side benchmarks and to write old snapshots in tests.
//
// Frozen on purpose: this file is a reference copy of the old code, not a
// copy to share with index.go and snapshot.go. The tests compare the
// current index's rankings against it (index_test.go) and read the old
// snapshots it writes, so it must not call the current code (put, del,
// decoder...) nor follow its changes; its likeness to them (put, the
// decoder's uv/byte/str) is expected, and duplicate finders may skip it.

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
)

// v1plist is one term's postings in one column group: rows in increasing
// internal order, with the term's count in each of the group's columns.
type v1plist struct {
	docs []uint32
	tfs  [][3]uint16
}

// v1Index is the inverted index. Its methods are safe for concurrent use;
// searches run in parallel, writes one at a time.
type v1Index struct {
	mu sync.RWMutex

	// Per internal row number (assigned in order of Put).
	ids   []int64
	lens  []uint32 // tokens over all columns
	langs []uint8  // into langNames
	alive []bool

	byID      map[int64]uint32
	langNames []string
	langCodes map[string]uint8

	words, lemmas map[string]*v1plist

	live     int
	totalLen int64
	dead     int

	v1scratch sync.Pool
	// putWords and putLemmas are put's term counts, reused.
	putWords, putLemmas map[string][3]uint16
}

// New returns an empty index.
func v1New() *v1Index {
	x := &v1Index{}
	x.reset()
	return x
}

func (x *v1Index) reset() {
	x.ids, x.lens, x.langs, x.alive = nil, nil, nil, nil
	x.byID = map[int64]uint32{}
	x.langNames = []string{""}
	x.langCodes = map[string]uint8{"": 0}
	x.words, x.lemmas = map[string]*v1plist{}, map[string]*v1plist{}
	x.live, x.totalLen, x.dead = 0, 0, 0
}

// Reset empties the index.
func (x *v1Index) Reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reset()
}

// Len is the number of rows.
func (x *v1Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// Stats returns the index's counts.
func (x *v1Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := Stats{Rows: x.live, Dead: x.dead, Terms: len(x.words) + len(x.lemmas)}
	for _, m := range []map[string]*v1plist{x.words, x.lemmas} {
		for _, p := range m {
			s.Postings += len(p.docs)
		}
	}
	return s
}

// Put adds a row, replacing the row with the same ID.
func (x *v1Index) Put(r Row) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.del(r.ID)
	x.put(r)
	x.maybeCompact()
}

// Delete removes the row with id; an unknown id is fine.
func (x *v1Index) Delete(id int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.del(id)
	x.maybeCompact()
}

func (x *v1Index) del(id int64) {
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

func (x *v1Index) put(r Row) {
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
	add := func(lists map[string]*v1plist, m map[string][3]uint16) {
		for t, f := range m {
			p := lists[t]
			if p == nil {
				// The key must not keep the row's whole column alive.
				p = &v1plist{}
				lists[strings.Clone(t)] = p
			}
			p.docs = append(p.docs, n)
			p.tfs = append(p.tfs, f)
		}
	}
	add(x.words, words)
	add(x.lemmas, lemmas)
}

func (x *v1Index) maybeCompact() {
	if x.dead > CompactMin && float64(x.dead) > CompactFraction*float64(x.live+x.dead) {
		x.compact()
	}
}

// Compact rewrites the index without its tombstones.
func (x *v1Index) Compact() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.compact()
}

func (x *v1Index) compact() {
	if x.dead == 0 {
		return
	}
	remap := make([]uint32, len(x.ids))
	var ids []int64
	var lens []uint32
	var langs []uint8
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
	for _, lists := range []map[string]*v1plist{x.words, x.lemmas} {
		for t, p := range lists {
			j := 0
			for i, d := range p.docs {
				if m := remap[d]; m != math.MaxUint32 {
					p.docs[j], p.tfs[j] = m, p.tfs[i]
					j++
				}
			}
			if j == 0 {
				delete(lists, t)
				continue
			}
			p.docs = append([]uint32(nil), p.docs[:j]...)
			p.tfs = append([][3]uint16(nil), p.tfs[:j]...)
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

// DocFreq is the number of rows holding term in any column (FTS5's
// fts5vocab 'row' count).
func (x *v1Index) DocFreq(term string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.docFreq(term)
}

// DocFreqAbove reports whether more than limit rows hold term in any
// column; it counts only when the term's postings are more than limit.
func (x *v1Index) DocFreqAbove(term string, limit int) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := 0
	if p := x.words[term]; p != nil {
		n += len(p.docs)
	}
	if p := x.lemmas[term]; p != nil {
		n += len(p.docs)
	}
	return n > limit && x.docFreq(term) > limit
}

func (x *v1Index) docFreq(term string) int {
	a, b := x.words[term], x.lemmas[term]
	var ad, bd []uint32
	if a != nil {
		ad = a.docs
	}
	if b != nil {
		bd = b.docs
	}
	n, i, j := 0, 0, 0
	for i < len(ad) || j < len(bd) {
		var d uint32
		switch {
		case j >= len(bd) || (i < len(ad) && ad[i] < bd[j]):
			d = ad[i]
			i++
		case i >= len(ad) || bd[j] < ad[i]:
			d = bd[j]
			j++
		default:
			d = ad[i]
			i++
			j++
		}
		if x.alive[d] {
			n++
		}
	}
	return n
}

// v1scratch is one search's accumulators, indexed by internal row number;
// stamp says which entries belong to the current search.
type v1scratch struct {
	acc     []float64
	stamp   []uint32
	gen     uint32
	touched []uint32
}

// Search returns the k best rows for q by BM25 with the column weights w,
// best first (ties by ID). A non-empty lang keeps rows in that language and
// rows without one; ranking statistics (IDF, average length) are over all
// rows, as in FTS5.
func (x *v1Index) Search(q Query, k int, w Weights, lang string) []Hit {
	if k <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 {
		return nil
	}
	sc, _ := x.v1scratch.Get().(*v1scratch)
	if sc == nil {
		sc = &v1scratch{}
	}
	defer x.v1scratch.Put(sc)
	if len(sc.acc) < len(x.ids) {
		size := len(x.ids) + len(x.ids)/8
		sc.acc, sc.stamp, sc.gen = make([]float64, size), make([]uint32, size), 0
	}
	sc.gen++
	if sc.gen == 0 { // wrapped: stale stamps could match
		clear(sc.stamp)
		sc.gen = 1
	}
	sc.touched = sc.touched[:0]

	nRow := float64(x.live)
	avgdl := float64(x.totalLen) / nRow
	if avgdl <= 0 {
		avgdl = 1
	}
	// norm[n] would be k1*(1-b+b*D/avgdl); computed per posting instead.
	phrase := func(p *v1plist, cw [3]float64) {
		if p == nil {
			return
		}
		hits := len(p.docs)
		if x.dead > 0 {
			hits = 0
			for _, d := range p.docs {
				if x.alive[d] {
					hits++
				}
			}
		}
		if hits == 0 {
			return
		}
		allAlive := x.dead == 0
		idf := math.Log((nRow - float64(hits) + 0.5) / (float64(hits) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		norm := K1 * B / avgdl
		for i, d := range p.docs {
			if !allAlive && !x.alive[d] {
				continue
			}
			tf := p.tfs[i]
			f := cw[0]*float64(tf[0]) + cw[1]*float64(tf[1]) + cw[2]*float64(tf[2])
			s := idf * (f * (K1 + 1)) / (f + K1*(1-B) + norm*float64(x.lens[d]))
			if sc.stamp[d] != sc.gen {
				sc.stamp[d] = sc.gen
				sc.acc[d] = 0
				sc.touched = append(sc.touched, d)
			}
			sc.acc[d] += s
		}
	}
	ww := [3]float64{w[Body], w[Title], w[Section]}
	for _, t := range q.Words {
		phrase(x.words[t], ww)
	}
	lw := [3]float64{w[Lemmas], w[Heads], 0}
	for _, t := range q.Terms {
		phrase(x.lemmas[t], lw)
	}

	var code uint8
	filter := lang != ""
	if filter {
		c, ok := x.langCodes[lang]
		if !ok {
			c = math.MaxUint8 // no row has it; rows without a language still pass
		}
		code = c
	}
	h := v1topK{k: k}
	for _, d := range sc.touched {
		if filter && x.langs[d] != code && x.langs[d] != 0 {
			continue
		}
		h.offer(Hit{ID: x.ids[d], Score: sc.acc[d]})
	}
	return h.sorted()
}

// v1WriteSnapshot writes the index (compacted: live rows only) with a caller's
// stamp (the store's log position), and a CRC-32 of everything at the end.
func (x *v1Index) WriteSnapshot(w io.Writer, stamp []byte) error {
	x.mu.Lock()
	x.compact()
	x.mu.Unlock()
	x.mu.RLock()
	defer x.mu.RUnlock()
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	var buf [binary.MaxVarintLen64]byte
	uv := func(v uint64) { bw.Write(buf[:binary.PutUvarint(buf[:], v)]) }
	str := func(s string) { uv(uint64(len(s))); bw.WriteString(s) }
	bw.WriteString(v1Magic)
	str(string(stamp))
	uv(uint64(len(x.langNames)))
	for _, l := range x.langNames {
		str(l)
	}
	uv(uint64(len(x.ids)))
	for n, id := range x.ids {
		uv(uint64(id))
		uv(uint64(x.lens[n]))
		bw.WriteByte(x.langs[n])
	}
	for _, lists := range []map[string]*v1plist{x.words, x.lemmas} {
		uv(uint64(len(lists)))
		for t, p := range lists {
			str(t)
			uv(uint64(len(p.docs)))
			prev := uint32(0)
			for i, d := range p.docs {
				uv(uint64(d - prev)) // increasing: gaps
				prev = d
				for _, f := range p.tfs[i] {
					uv(uint64(f))
				}
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	_, err := w.Write(sum[:])
	return err
}

// v1ReadSnapshot reads an index written by v1WriteSnapshot and its stamp.
func v1ReadSnapshot(r io.Reader) (*v1Index, []byte, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	if len(raw) < len(v1Magic)+4 || string(raw[:len(v1Magic)]) != v1Magic {
		return nil, nil, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	body := raw[:len(raw)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := v1decoder{b: body[len(v1Magic):]}
	stamp := []byte(d.str())
	x := v1New()
	nl := d.uv()
	x.langNames = x.langNames[:0]
	clear(x.langCodes)
	for i := uint64(0); i < nl && d.err == nil && i < 256; i++ {
		l := d.str()
		x.langCodes[l] = uint8(len(x.langNames))
		x.langNames = append(x.langNames, l)
	}
	nr := d.uv()
	if nr > uint64(len(body)) {
		return nil, nil, fmt.Errorf("%w: %d rows", ErrCorrupt, nr)
	}
	x.ids, x.lens, x.langs, x.alive = make([]int64, 0, nr), make([]uint32, 0, nr), make([]uint8, 0, nr), make([]bool, 0, nr)
	for i := uint64(0); i < nr && d.err == nil; i++ {
		id, length, lang := int64(d.uv()), d.uv(), d.byte()
		if int(lang) >= len(x.langNames) {
			d.fail("language")
		}
		x.byID[id] = uint32(len(x.ids))
		x.ids, x.lens, x.langs, x.alive = append(x.ids, id), append(x.lens, uint32(length)), append(x.langs, lang), append(x.alive, true)
		x.totalLen += int64(length)
	}
	x.live = len(x.ids)
	for _, lists := range []map[string]*v1plist{x.words, x.lemmas} {
		nt := d.uv()
		for i := uint64(0); i < nt && d.err == nil; i++ {
			t := d.str()
			np := d.uv()
			if np > uint64(len(x.ids)) {
				d.fail("postings")
				break
			}
			p := &v1plist{docs: make([]uint32, np), tfs: make([][3]uint16, np)}
			prev := uint64(0)
			for j := range p.docs {
				prev += d.uv()
				if prev >= uint64(len(x.ids)) {
					d.fail("row number")
					break
				}
				p.docs[j] = uint32(prev)
				for k := range p.tfs[j] {
					f := d.uv()
					if f > math.MaxUint16 {
						d.fail("frequency")
					}
					p.tfs[j][k] = uint16(f)
				}
			}
			lists[t] = p
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, nil, d.err
	}
	return x, stamp, nil
}

type v1decoder struct {
	b   []byte
	err error
}

func (d *v1decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *v1decoder) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *v1decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("byte")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *v1decoder) str() string {
	n := d.uv()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

const v1Magic = "EXOLEX01"

// v1topK keeps the k best hits offered, the worst on top of a heap.
type v1topK struct {
	k int
	h v1hitHeap
}

func (t *v1topK) offer(x Hit) {
	if len(t.h) < t.k {
		heap.Push(&t.h, x)
		return
	}
	if better(x, t.h[0]) {
		t.h[0] = x
		heap.Fix(&t.h, 0)
	}
}

func (t *v1topK) sorted() []Hit {
	out := []Hit(t.h)
	sort.Slice(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}

// v1hitHeap is a min-heap by better: the worst hit is at 0.
type v1hitHeap []Hit

func (h v1hitHeap) Len() int           { return len(h) }
func (h v1hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h v1hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *v1hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *v1hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
