package lexical

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// writeSnapshotV2 is WriteSnapshot as it was in format 02 (no term
// tables): snapshots of it are on disk and are still read.
func writeSnapshotV2(x *Index, w io.Writer, stamp []byte) error {
	x.mu.Lock()
	x.compact()
	x.materialize()
	x.mu.Unlock()
	crc := crc32.NewIEEE()
	bw := bufio.NewWriter(io.MultiWriter(w, crc))
	var buf [binary.MaxVarintLen64]byte
	uv := func(v uint64) { bw.Write(buf[:binary.PutUvarint(buf[:], v)]) }
	str := func(s string) { uv(uint64(len(s))); bw.WriteString(s) }
	bw.WriteString(snapshotMagicV2)
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
	for _, lists := range []map[string]plist{x.words, x.lemmas} {
		uv(uint64(len(lists)))
		for t, p := range lists {
			str(t)
			uv(uint64(p.n))
			uv(uint64(len(p.buf)))
			bw.Write(p.buf)
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// churn applies the same random puts and deletes to every index given.
func churn(rng *rand.Rand, steps int, xs ...*Index) {
	for step := 0; step < steps; step++ {
		id := int64(rng.IntN(700))
		if rng.IntN(4) == 0 {
			for _, x := range xs {
				x.Delete(id)
			}
			continue
		}
		r := heavyRow(rng, id)
		for _, x := range xs {
			x.Put(r)
		}
	}
}

// sameSearches compares the hits and document frequencies of random
// queries on two indexes.
func sameSearches(t *testing.T, what string, rng *rand.Rand, want, got *Index) {
	t.Helper()
	w := Weights{0.25, 3, 1, 0.75, 1}
	for i := 0; i < 150; i++ {
		q := randomQuery(rng)
		lang := []string{"", "en", "ru"}[i%3]
		k := []int{1, 10, 200}[i%3]
		if g, x := got.Search(q, k, w, lang), want.Search(q, k, w, lang); fmt.Sprint(g) != fmt.Sprint(x) {
			t.Fatalf("%s: query %+v k %d lang %q:\n got %v\nwant %v", what, q, k, lang, g, x)
		}
		for _, term := range append(q.Words, q.Terms...) {
			if a, b := got.DocFreq(term), want.DocFreq(term); a != b {
				t.Fatalf("%s: DocFreq(%s) = %d, want %d", what, term, a, b)
			}
		}
	}
}

func TestASnapshotReadLazilySearchesAndChangesAsTheIndexItWasWrittenFrom(t *testing.T) {
	defer func(m int) { CompactMin = m }(CompactMin)
	CompactMin = 50
	for _, tc := range []struct {
		name   string
		format int
		write  func(x *Index, w io.Writer, stamp []byte) error
	}{
		{"format 03, its lists read as their terms are asked for", 3, (*Index).WriteSnapshot},
		{"format 02, read whole", 2, writeSnapshotV2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			x := New()
			churn(rng, 2500, x)
			var buf bytes.Buffer
			if err := tc.write(x, &buf, []byte("seq 9")); err != nil {
				t.Fatal(err)
			}
			y, stamp, err := ReadSnapshot(bytes.NewReader(buf.Bytes()))
			if err != nil || string(stamp) != "seq 9" || y.ReadVersion() != tc.format {
				t.Fatalf("read back: %v, stamp %q, format %d", err, stamp, y.ReadVersion())
			}
			if lazy := y.lazy != nil; lazy != (tc.format == 3) {
				t.Fatalf("lists left in the snapshot's bytes: %v, want %v", lazy, tc.format == 3)
			}
			if tc.format == 3 {
				// Nothing decoded before a search asks.
				if len(y.words)+len(y.lemmas) != 0 {
					t.Fatalf("%d lists decoded at the read", len(y.words)+len(y.lemmas))
				}
				if y.Search(Query{Words: []string{"river"}}, 5, Weights{1, 1, 1, 1, 1}, ""); len(y.lazy.got[0]) != 1 {
					t.Fatalf("one word searched decoded %d word lists", len(y.lazy.got[0]))
				}
			}
			sameSearches(t, "read back", rng, x, y)
			// The same writes on both (compactions on the way) keep them alike.
			churn(rng, 1500, x, y)
			sameSearches(t, "after more writes", rng, x, y)
			if x.Stats() != y.Stats() || y.lazy != nil {
				t.Fatalf("stats %+v, want %+v (lists left lazy: %v)", y.Stats(), x.Stats(), y.lazy != nil)
			}
			var again bytes.Buffer
			if err := y.WriteSnapshot(&again, stamp); err != nil {
				t.Fatal(err)
			}
			z, _, err := ReadSnapshot(bytes.NewReader(again.Bytes()))
			if err != nil || z.ReadVersion() != SnapshotVersion {
				t.Fatalf("written again in format %d: %v", z.ReadVersion(), err)
			}
			sameSearches(t, "written again", rng, x, z)
			if err := z.Err(); err != nil {
				t.Errorf("Err of a sound snapshot: %v", err)
			}
		})
	}
}

func TestADamagedListOfALazySnapshotIsFoundWhenItsTermIsSearched(t *testing.T) {
	x := New()
	x.Put(Row{ID: 1, Lang: "en", Cols: [NumColumns]string{"quokka river"}})
	x.Put(Row{ID: 2, Lang: "ru", Cols: [NumColumns]string{"river река"}})
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf, nil); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()[:buf.Len()-4]
	// quokka's entry: its name, 1 posting, a list of 1 byte. Two postings
	// in one byte cannot be.
	at := bytes.Index(raw, []byte("\x06quokka"))
	if at < 0 || raw[at+7] != 1 || raw[at+8] != 1 {
		t.Fatalf("quokka's entry not found as expected in %q", raw)
	}
	bad := append([]byte(nil), raw...)
	bad[at+7] = 2
	y, _, err := ReadSnapshot(bytes.NewReader(recrc(bad)))
	if err != nil {
		t.Fatalf("a damaged list is read lazily, so the read succeeds: %v", err)
	}
	w := Weights{1, 1, 1, 1, 1}
	if err := y.Err(); err != nil {
		t.Fatalf("Err before the damaged list was read: %v", err)
	}
	if hits := y.Search(Query{Words: []string{"river"}}, 5, w, ""); len(hits) != 2 || y.Err() != nil {
		t.Fatalf("a sound term: %v, Err %v", hits, y.Err())
	}
	if hits := y.Search(Query{Words: []string{"quokka"}}, 5, w, ""); len(hits) != 0 {
		t.Errorf("the damaged list found %v", hits)
	}
	if err := y.Err(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "quokka") {
		t.Errorf("Err after the damaged list was searched: %v, want ErrCorrupt naming quokka", err)
	}
	// Materialized for a snapshot, the damage stays known.
	z, _, _ := ReadSnapshot(bytes.NewReader(recrc(bad)))
	z.Stats()
	if err := z.Err(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Err after every list was read: %v, want ErrCorrupt", err)
	}
	// A term table pointing past the lists is damage too, never a panic.
	for i := len(raw) - 16; i < len(raw); i++ {
		for _, v := range []byte{0, 1, 0x7f, 0xff} {
			b := append([]byte(nil), raw...)
			b[i] = v
			if z, _, err := ReadSnapshot(bytes.NewReader(recrc(b))); err == nil {
				for _, term := range []string{"quokka", "river", "река", "nowhere"} {
					z.Search(Query{Words: []string{term}, Terms: []string{term}}, 5, w, "")
					z.DocFreq(term)
				}
			}
		}
	}
}

func TestSearchesOfALazySnapshotRunConcurrentlyWithWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	x := New()
	churn(rng, 800, x)
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf, nil); err != nil {
		t.Fatal(err)
	}
	y, _, err := ReadSnapshot(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(seed uint64) {
			defer func() { done <- struct{}{} }()
			r := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < 200; i++ {
				q := randomQuery(r)
				y.Search(q, 10, Weights{1, 1, 1, 1, 1}, "")
				y.DocFreq(q.Words[0])
			}
		}(uint64(g))
	}
	churn(rand.New(rand.NewPCG(15, 16)), 300, y)
	for g := 0; g < 4; g++ {
		<-done
	}
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
}
