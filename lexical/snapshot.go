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
// loading is a copy and a check. ReadSnapshot reads both (01 converted).
const (
	snapshotMagic   = "EXOLEX02"
	snapshotMagicV1 = "EXOLEX01"
)

// SnapshotVersion is the format WriteSnapshot writes.
const SnapshotVersion = 2

// ReadVersion is the format of the snapshot the index was read from (0 for
// an index built by Put): below SnapshotVersion, the caller may write the
// snapshot again so that the next start reads it without converting.
func (x *Index) ReadVersion() int { return x.readVersion }

// WriteSnapshot writes the index (compacted: live rows only) with a caller's
// stamp (the store's log position), and a CRC-32 of everything at the end.
func (x *Index) WriteSnapshot(w io.Writer, stamp []byte) error {
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
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	_, err := w.Write(sum[:])
	return err
}

// ReadSnapshot reads an index written by WriteSnapshot (or by the
// former format 01, converted) and its stamp.
func ReadSnapshot(r io.Reader) (*Index, []byte, error) {
	var raw []byte
	var err error
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		// A file: read it into a buffer of its size, not one grown by
		// doubling (a 1M-chunk snapshot is a few hundred MiB).
		if fi, serr := f.Stat(); serr == nil && fi.Mode().IsRegular() {
			var buf bytes.Buffer
			buf.Grow(int(fi.Size()) + bytes.MinRead)
			_, err = buf.ReadFrom(r)
			raw = buf.Bytes()
		} else {
			raw, err = io.ReadAll(r)
		}
	} else {
		raw, err = io.ReadAll(r)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read lexical snapshot: %w", err)
	}
	if len(raw) < len(snapshotMagic)+4 {
		return nil, nil, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	v1 := false
	switch string(raw[:len(snapshotMagic)]) {
	case snapshotMagic:
	case snapshotMagicV1:
		v1 = true
	default:
		return nil, nil, fmt.Errorf("%w: not a snapshot (%q)", ErrCorrupt, raw[:len(snapshotMagic)])
	}
	body := raw[:len(raw)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := decoder{b: body[len(snapshotMagic):]}
	stamp := []byte(d.str())
	x := New()
	x.readVersion = SnapshotVersion
	if v1 {
		x.readVersion = 1
	}
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
			if v1 {
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
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, nil, d.err
	}
	return x, stamp, nil
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
	p := plist{buf: bytes.Clone(d.b[:size]), n: uint32(np)}
	d.b = d.b[size:]
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
