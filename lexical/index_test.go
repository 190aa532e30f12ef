package lexical

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
)

var vocab = strings.Fields(`river valley spring farmer rice water tomato sun trellis committee budget library
photosynthesis light sugar oxygen bridge stone wood backup restore machine orchestra symphony bird coast
река долина весна рис вода помидор солнце комитет бюджет библиотека мост камень птица берег`)

func randomRow(rng *rand.Rand, id int64) Row {
	words := func(n int) string {
		var ws []string
		for i := 0; i < n; i++ {
			ws = append(ws, vocab[rng.IntN(len(vocab))])
		}
		return strings.Join(ws, " ")
	}
	return Row{ID: id, Lang: []string{"", "en", "ru"}[rng.IntN(3)],
		Cols: [NumColumns]string{words(5 + rng.IntN(30)), words(rng.IntN(20)), words(rng.IntN(3)), words(rng.IntN(4)), words(rng.IntN(4))}}
}

func randomQuery(rng *rand.Rand) Query {
	var q Query
	for i := 0; i < 1+rng.IntN(4); i++ {
		q.Words = append(q.Words, vocab[rng.IntN(len(vocab))])
	}
	for i := 0; i < rng.IntN(4); i++ {
		q.Terms = append(q.Terms, vocab[rng.IntN(len(vocab))])
	}
	return q
}

// TestAnIndexAfterChurnSearchesAsOneBuiltFromItsLiveRows puts, replaces and
// deletes rows at random (compacting on the way) and compares every search
// with an index built from the surviving rows alone.
func TestAnIndexAfterChurnSearchesAsOneBuiltFromItsLiveRows(t *testing.T) {
	defer func(m int) { CompactMin = m }(CompactMin)
	CompactMin = 20
	rng := rand.New(rand.NewPCG(1, 2))
	x := New()
	live := map[int64]Row{}
	compactions := 0
	for step := 0; step < 3000; step++ {
		id := int64(rng.IntN(400))
		if rng.IntN(3) == 0 {
			x.Delete(id)
			delete(live, id)
		} else {
			r := randomRow(rng, id)
			x.Put(r)
			live[id] = r
		}
		if st := x.Stats(); st.Dead == 0 && step > 0 {
			compactions++
		}
	}
	if compactions == 0 {
		t.Fatal("the churn never compacted the index")
	}
	fresh := New()
	for id := int64(0); id < 400; id++ {
		if r, ok := live[id]; ok {
			fresh.Put(r)
		}
	}
	if x.Len() != len(live) || fresh.Len() != len(live) {
		t.Fatalf("Len %d and %d, want %d", x.Len(), fresh.Len(), len(live))
	}
	w := Weights{0.25, 3, 1, 0.75, 1}
	for i := 0; i < 300; i++ {
		q := randomQuery(rng)
		lang := []string{"", "en", "ru", "de"}[i%4]
		got, want := x.Search(q, 10, w, lang), fresh.Search(q, 10, w, lang)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("query %+v lang %q:\n got %v\nwant %v", q, lang, got, want)
		}
		for _, h := range got {
			if l := live[h.ID].Lang; lang != "" && l != "" && l != lang {
				t.Fatalf("lang %q: hit %d is %q", lang, h.ID, l)
			}
		}
		for _, term := range append(q.Words, q.Terms...) {
			if a, b := x.DocFreq(term), fresh.DocFreq(term); a != b || x.DocFreqAbove(term, a) || !x.DocFreqAbove(term, a-1) {
				t.Fatalf("DocFreq(%s) = %d, want %d", term, a, b)
			}
		}
	}
}

func TestSearchKeepsTheBestKInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := New()
	for id := int64(1); id <= 300; id++ {
		x.Put(randomRow(rng, id))
	}
	w := Weights{1, 1, 1, 1, 1}
	for i := 0; i < 50; i++ {
		q := randomQuery(rng)
		all := x.Search(q, 1000, w, "")
		top := x.Search(q, 7, w, "")
		if len(all) < 7 {
			continue
		}
		if fmt.Sprint(top) != fmt.Sprint(all[:7]) {
			t.Fatalf("top 7 %v, want the first 7 of all %v", top, all[:7])
		}
		for j := 1; j < len(all); j++ {
			if better(all[j], all[j-1]) {
				t.Fatalf("hits out of order at %d: %v", j, all)
			}
		}
	}
	if got := x.Search(Query{Words: []string{"nowhere"}}, 10, w, ""); len(got) != 0 {
		t.Errorf("an unknown word found %v", got)
	}
}

func TestASnapshotReadsBackAsTheSameIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := New()
	for step := 0; step < 1500; step++ {
		id := int64(rng.IntN(500))
		if rng.IntN(4) == 0 {
			x.Delete(id)
		} else {
			x.Put(randomRow(rng, id))
		}
	}
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf, []byte("seq 42")); err != nil {
		t.Fatal(err)
	}
	y, stamp, err := ReadSnapshot(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if string(stamp) != "seq 42" || y.Len() != x.Len() || y.Stats() != x.Stats() {
		t.Fatalf("read back stamp %q, %+v; want %q, %+v", stamp, y.Stats(), "seq 42", x.Stats())
	}
	w := Weights{0.25, 3, 1, 0.75, 1}
	for i := 0; i < 200; i++ {
		q := randomQuery(rng)
		lang := []string{"", "en", "ru"}[i%3]
		if got, want := y.Search(q, 10, w, lang), x.Search(q, 10, w, lang); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("query %+v: read back %v, want %v", q, got, want)
		}
	}
	// Writes after the read work as on the original.
	r := randomRow(rng, 9999)
	x.Put(r)
	y.Put(r)
	q := Query{Words: strings.Fields(r.Cols[Body])[:2]}
	if got, want := y.Search(q, 5, w, ""), x.Search(q, 5, w, ""); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a put: %v, want %v", got, want)
	}
	for _, bad := range [][]byte{buf.Bytes()[:buf.Len()/2], append([]byte("X"), buf.Bytes()[1:]...), flip(buf.Bytes(), buf.Len()/3), nil} {
		if _, _, err := ReadSnapshot(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a damaged snapshot of %d bytes read with %v, want ErrCorrupt", len(bad), err)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x40
	return c
}

// heavyRow is randomRow with some words repeated past what one tf code
// byte holds (15 in body, 4 in title, section, lemmas or heads).
func heavyRow(rng *rand.Rand, id int64) Row {
	r := randomRow(rng, id)
	if rng.IntN(3) == 0 {
		col := rng.IntN(NumColumns)
		w := vocab[rng.IntN(len(vocab))]
		r.Cols[col] += strings.Repeat(" "+w, 3+rng.IntN(40))
	}
	return r
}

// TestCompressedPostingsRankAsTheUncompressedIndex puts, replaces and
// deletes the same rows in the index and in the index as it was before its
// postings were compressed (v1Index, whose ranking the store's tests
// compared with FTS5's), and requires the same hits with the same scores,
// bit for bit, and the same document frequencies.
func TestCompressedPostingsRankAsTheUncompressedIndex(t *testing.T) {
	defer func(m int) { CompactMin = m }(CompactMin)
	CompactMin = 50
	rng := rand.New(rand.NewPCG(7, 8))
	x, old := New(), v1New()
	escapes := 0
	for step := 0; step < 4000; step++ {
		id := int64(rng.IntN(600))
		if rng.IntN(4) == 0 {
			x.Delete(id)
			old.Delete(id)
			continue
		}
		r := heavyRow(rng, id)
		for _, c := range r.Cols {
			if strings.Count(c, " ") >= tfA {
				escapes++
			}
		}
		x.Put(r)
		old.Put(r)
		if step == 2000 {
			x.Trim()
		}
	}
	if escapes == 0 {
		t.Fatal("no row had counts beyond a one-byte code")
	}
	if x.Stats() != old.Stats() {
		t.Fatalf("stats %+v, want %+v", x.Stats(), old.Stats())
	}
	w := Weights{0.25, 3, 1, 0.75, 1}
	for i := 0; i < 400; i++ {
		q := randomQuery(rng)
		lang := []string{"", "en", "ru"}[i%3]
		k := []int{1, 10, 200}[i%3]
		if got, want := x.Search(q, k, w, lang), old.Search(q, k, w, lang); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("query %+v k %d lang %q:\n got %v\nwant %v", q, k, lang, got, want)
		}
		for _, term := range append(q.Words, q.Terms...) {
			if a, b := x.DocFreq(term), old.DocFreq(term); a != b {
				t.Fatalf("DocFreq(%s) = %d, want %d", term, a, b)
			}
		}
	}
}

// TestASnapshotOfTheFormerFormatIsConverted reads a snapshot written in
// format 01 (before compressed postings) as the same index, and writes it
// back in the current format.
func TestASnapshotOfTheFormerFormatIsConverted(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	x, old := New(), v1New()
	for step := 0; step < 1500; step++ {
		id := int64(rng.IntN(500))
		if rng.IntN(5) == 0 {
			x.Delete(id)
			old.Delete(id)
		} else {
			r := heavyRow(rng, id)
			x.Put(r)
			old.Put(r)
		}
	}
	var v1 bytes.Buffer
	if err := old.WriteSnapshot(&v1, []byte("seq 7")); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(v1.Bytes(), []byte(snapshotMagicV1)) {
		t.Fatalf("the former writer wrote %q", v1.Bytes()[:8])
	}
	y, stamp, err := ReadSnapshot(bytes.NewReader(v1.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if string(stamp) != "seq 7" || y.Stats() != old.Stats() || y.ReadVersion() != 1 {
		t.Fatalf("read back stamp %q, %+v, format %d; want %q, %+v, format 1", stamp, y.Stats(), y.ReadVersion(), "seq 7", old.Stats())
	}
	w := Weights{0.25, 3, 1, 0.75, 1}
	for i := 0; i < 200; i++ {
		q := randomQuery(rng)
		if got, want := y.Search(q, 10, w, ""), x.Search(q, 10, w, ""); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("query %+v: converted %v, want %v", q, got, want)
		}
	}
	var v2 bytes.Buffer
	if err := y.WriteSnapshot(&v2, stamp); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(v2.Bytes(), []byte(snapshotMagic)) || v2.Len() >= v1.Len() {
		t.Fatalf("rewritten as %q, %d bytes (format 01: %d)", v2.Bytes()[:8], v2.Len(), v1.Len())
	}
	if z, _, err := ReadSnapshot(bytes.NewReader(v2.Bytes())); err != nil || z.ReadVersion() != SnapshotVersion || New().ReadVersion() != 0 {
		t.Fatalf("format 02 read back: %v", err)
	}
	// A snapshot of a later format than this reader knows is not read.
	later := recrc(append([]byte("EXOLEX04"), v2.Bytes()[8:]...))
	if _, _, err := ReadSnapshot(bytes.NewReader(later)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("format 04 read with %v, want ErrCorrupt", err)
	}
	// Nor one whose checksum holds but whose lists do not: every byte of
	// the postings' tail changed in turn (row numbers past the rows, gaps
	// of 0, unknown tf codes, lists ending early or late).
	body := v2.Bytes()[:v2.Len()-4]
	misread := 0
	for i := len(body) - 200; i < len(body); i++ {
		for _, v := range []byte{0, 0x7f, 0x80, 0xf5, 0xff} {
			bad := append([]byte(nil), body...)
			if bad[i] == v {
				continue
			}
			bad[i] = v
			z, _, err := ReadSnapshot(bytes.NewReader(recrc(bad)))
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d = %#x: %v, want ErrCorrupt", i, v, err)
				}
				continue
			}
			// Read: then it must be an index that searches without failing.
			for _, term := range vocab {
				z.DocFreq(term)
				z.Search(Query{Words: []string{term}, Terms: []string{term}}, 10, w, "")
			}
			misread++
		}
	}
	t.Logf("%d of the changed snapshots still read as an index (a count changed, not the structure)", misread)
}

// recrc replaces a snapshot body's checksum (its last 4 bytes are added).
func recrc(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body[:len(body):len(body)], crc32.ChecksumIEEE(body))
}
