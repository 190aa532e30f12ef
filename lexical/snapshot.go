package lexical

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
)

// ErrCorrupt: a snapshot that cannot be read back (truncated, bad checksum,
// another format).
var ErrCorrupt = errors.New("lexical: corrupt snapshot")

// Snapshot formats: the magic's last two digits are the version.
// EXOLEX01 held each posting as a varint gap and three varint counts;
// EXOLEX02 holds each list as the index holds it in memory (see plist), so
// loading is a copy and a check; EXOLEX03 adds to each column group a hash
// table of its terms (see lazyLists), so loading reads the rows and leaves
// each list where it is until a search or a write first asks for its term.
// ReadSnapshot reads all three (01 converted, 02 checked whole).
const (
	snapshotMagic   = "EXOLEX03"
	snapshotMagicV2 = "EXOLEX02"
	snapshotMagicV1 = "EXOLEX01"
)

// SnapshotVersion is the format WriteSnapshot writes.
const SnapshotVersion = 3

// ReadVersion is the format of the snapshot the index was read from (0 for
// an index built by Put): below SnapshotVersion, the caller may write the
// snapshot again so that the next start reads it without converting.
func (x *Index) ReadVersion() int { return x.readVersion }

// WriteSnapshot writes the index (compacted: live rows only) with a caller's
// stamp (the store's log position), and a CRC-32 of everything at the end.
//
// Format 03: the magic, the stamp, the languages, the rows (id, length,
// language each), then per column group (words, lemmas) its number of
// terms, the byte length of its lists, the lists (term, postings, byte
// length, the plist bytes each), and its term table: a power of two of
// slots (0 when there are no terms), each a little-endian uint32, 0 for
// empty or 1 + the offset of a list within the group's lists, placed by
// termHash with linear probing, at most half full.
func (x *Index) WriteSnapshot(w io.Writer, stamp []byte) error {
	x.mu.Lock()
	x.compact()
	x.materialize()
	x.mu.Unlock()
	x.mu.RLock()
	defer x.mu.RUnlock()
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	var buf [binary.MaxVarintLen64]byte
	uv := func(v uint64) { bw.Write(buf[:binary.PutUvarint(buf[:], v)]) }
	str := func(s string) { uv(uint64(len(s))); bw.WriteString(s) }
	bw.WriteString(snapshotMagic)
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
		size := 0
		for t, p := range lists {
			size += uvLen(uint64(len(t))) + len(t) + uvLen(uint64(p.n)) + uvLen(uint64(len(p.buf))) + len(p.buf)
		}
		if size >= math.MaxUint32 {
			return fmt.Errorf("lexical: snapshot: %d bytes of lists in a column group, more than format %d holds", size, SnapshotVersion)
		}
		uv(uint64(len(lists)))
		uv(uint64(size))
		slots := tableSize(len(lists))
		table := make([]uint32, slots)
		off := 0
		for t, p := range lists {
			for i := termHash(t) & uint64(slots-1); ; i = (i + 1) & uint64(slots-1) {
				if table[i] == 0 {
					table[i] = uint32(off) + 1
					break
				}
			}
			str(t)
			uv(uint64(p.n))
			uv(uint64(len(p.buf)))
			bw.Write(p.buf)
			off += uvLen(uint64(len(t))) + len(t) + uvLen(uint64(p.n)) + uvLen(uint64(len(p.buf))) + len(p.buf)
		}
		uv(uint64(slots))
		for _, e := range table {
			bw.Write(binary.LittleEndian.AppendUint32(buf[:0], e))
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

// uvLen is the length of v as a uvarint.
func uvLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

// tableSize is the slots of a term table of n terms: a power of two at
// least twice n (0 for none).
func tableSize(n int) int {
	if n == 0 {
		return 0
	}
	m := 1
	for m < 2*n {
		m <<= 1
	}
	return m
}

// termHash places a term in a term table (FNV-1a, 64 bits).
func termHash(t string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(t); i++ {
		h ^= uint64(t[i])
		h *= 1099511628211
	}
	return h
}

// ReadSnapshot reads an index written by WriteSnapshot (or by the
// former format 01, converted) and its stamp.
func ReadSnapshot(r io.Reader) (*Index, []byte, error) {
	raw, err := readWhole(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read lexical snapshot: %w", err)
	}
	version, err := snapshotVersion(raw)
	if err != nil {
		return nil, nil, err
	}
	body := raw[:len(raw)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := decoder{b: body[len(snapshotMagic):]}
	stamp := []byte(d.str())
	x := New()
	x.readVersion = version
	d.langs(x)
	nr := d.uv()
	if nr > uint64(len(body)) {
		return nil, nil, fmt.Errorf("%w: %d rows", ErrCorrupt, nr)
	}
	d.rows(x, nr)
	if version == 3 {
		d.lazyGroups(x)
	} else {
		d.termLists(x, version)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, nil, d.err
	}
	return x, stamp, nil
}

// readWhole reads all of r. A file is read into a buffer of its size, not
// one grown by doubling (a 1M-chunk snapshot is a few hundred MiB).
func readWhole(r io.Reader) ([]byte, error) {
	f, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return io.ReadAll(r)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return io.ReadAll(r)
	}
	raw := make([]byte, fi.Size())
	if _, err := io.ReadFull(r, raw); err != nil {
		return raw, err
	}
	// Grown since the Stat: read the rest too.
	more, err := io.ReadAll(r)
	if len(more) > 0 {
		raw = append(raw, more...)
	}
	return raw, err
}

// snapshotVersion is the format version raw's magic names (1 to 3), or
// ErrCorrupt when raw is not a snapshot.
func snapshotVersion(raw []byte) (int, error) {
	if len(raw) < len(snapshotMagic)+4 {
		return 0, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	switch string(raw[:len(snapshotMagic)]) {
	case snapshotMagic:
		return 3, nil
	case snapshotMagicV2:
		return 2, nil
	case snapshotMagicV1:
		return 1, nil
	}
	return 0, fmt.Errorf("%w: not a snapshot (%q)", ErrCorrupt, raw[:len(snapshotMagic)])
}

// langs decodes the snapshot's language names into x's language table.
func (d *decoder) langs(x *Index) {
	nl := d.uv()
	x.langNames = x.langNames[:0]
	clear(x.langCodes)
	for i := uint64(0); i < nl && d.err == nil && i < 256; i++ {
		l := d.str()
		x.langCodes[l] = uint8(len(x.langNames))
		x.langNames = append(x.langNames, l)
	}
}

// rows decodes nr rows (id, length, language) into x, all live.
func (d *decoder) rows(x *Index, nr uint64) {
	x.ids, x.lens, x.langs, x.alive = make([]int64, 0, nr), make([]uint32, 0, nr), make([]uint8, 0, nr), make([]bool, 0, nr)
	x.byID = make(map[int64]uint32, nr)
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
}

// lazyGroups takes a version 3 snapshot's two column groups (term lists
// and hash table) as they lie in the buffer; lists decode when searched.
func (d *decoder) lazyGroups(x *Index) {
	x.lazy = &lazyLists{rows: uint32(len(x.ids))}
	for g := range x.lazy.groups {
		nt, size := d.uv(), d.uv()
		if size > uint64(len(d.b)) || nt > size {
			d.fail("term lists")
			return
		}
		lists := d.b[:size:size]
		d.b = d.b[size:]
		slots := d.uv()
		if slots != uint64(tableSize(int(nt))) || slots*4 > uint64(len(d.b)) {
			d.fail("term table")
			return
		}
		x.lazy.groups[g] = lazyGroup{lists: lists, table: d.b[: slots*4 : slots*4], terms: int(nt)}
		d.b = d.b[slots*4:]
	}
}

// termLists decodes a version 1 or 2 snapshot's words and lemmas, each
// term with its posting list, into x's maps.
func (d *decoder) termLists(x *Index, version int) {
	rows := uint32(len(x.ids))
	for _, lists := range []map[string]plist{x.words, x.lemmas} {
		nt := d.uv()
		if nt > uint64(len(d.b)) {
			d.fail("terms")
		}
		for i := uint64(0); i < nt && d.err == nil; i++ {
			t := d.str()
			np := d.uv()
			if np == 0 || np > uint64(rows) {
				d.fail("postings")
				break
			}
			var p plist
			if version == 1 {
				p = d.listV1(np, rows)
			} else {
				p = d.list(np, rows)
			}
			if _, dup := lists[t]; dup {
				d.fail("term (twice)")
			}
			lists[t] = p
		}
	}
}

// list reads a list of np postings in the index's own encoding, copied
// into a slice of its own, and checks it: np postings, row numbers
// increasing and under rows, nothing after the last.
func (d *decoder) list(np uint64, rows uint32) plist {
	size := d.uv()
	if size > uint64(len(d.b)) {
		d.fail("list size")
		return plist{}
	}
	buf := bytes.Clone(d.b[:size])
	d.b = d.b[size:]
	return d.check(plist{buf: buf, n: uint32(np)}, rows)
}

// check checks a list of p.n postings in p.buf (see list) and sets its
// last row number; on failure d fails and the list returned is empty.
func (d *decoder) check(p plist, rows uint32) plist {
	np := uint64(p.n)
	b := p.buf
	for i := uint64(0); i < np; i++ {
		v, n := binary.Uvarint(b)
		g := v >> 1
		if n <= 0 || (i > 0 && g == 0) || g >= uint64(rows) || uint64(p.last)+g >= uint64(rows) {
			d.fail("row number")
			return plist{}
		}
		p.last += uint32(g)
		b = b[n:]
		if v&1 == 0 {
			continue
		}
		if len(b) == 0 {
			d.fail("frequency code")
			return plist{}
		}
		code := b[0]
		b = b[1:]
		if code == tfEscape {
			for k := 0; k < 3; k++ {
				f, n := binary.Uvarint(b)
				if n <= 0 || f > math.MaxUint16 {
					d.fail("frequency")
					return plist{}
				}
				b = b[n:]
			}
		} else if code >= tfCodes {
			d.fail("frequency code")
			return plist{}
		}
	}
	if len(b) != 0 {
		d.fail("list (trailing bytes)")
		return plist{}
	}
	return p
}

// listV1 reads a list of np postings of format 01 (a varint gap and three
// varint counts each) into the index's encoding.
func (d *decoder) listV1(np uint64, rows uint32) plist {
	var p plist
	prev := uint64(0)
	for j := uint64(0); j < np && d.err == nil; j++ {
		g := d.uv()
		prev += g
		if prev >= uint64(rows) || (j > 0 && g == 0) {
			d.fail("row number")
			break
		}
		var f [3]uint16
		for k := range f {
			v := d.uv()
			if v > math.MaxUint16 {
				d.fail("frequency")
			}
			f[k] = uint16(v)
		}
		p.appendPosting(uint32(prev), f)
	}
	p.buf = bytes.Clone(p.buf) // exact capacity
	return p
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("byte")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) str() string {
	n := d.uv()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
