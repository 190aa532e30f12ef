package lexical

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// ErrCorrupt: a snapshot that cannot be read back (truncated, bad checksum,
// another format).
var ErrCorrupt = errors.New("lexical: corrupt snapshot")

const snapshotMagic = "EXOLEX01"

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
	for _, lists := range []map[string]*plist{x.words, x.lemmas} {
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

// ReadSnapshot reads an index written by WriteSnapshot and its stamp.
func ReadSnapshot(r io.Reader) (*Index, []byte, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	if len(raw) < len(snapshotMagic)+4 || string(raw[:len(snapshotMagic)]) != snapshotMagic {
		return nil, nil, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	body := raw[:len(raw)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := decoder{b: body[len(snapshotMagic):]}
	stamp := []byte(d.str())
	x := New()
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
	for _, lists := range []map[string]*plist{x.words, x.lemmas} {
		nt := d.uv()
		for i := uint64(0); i < nt && d.err == nil; i++ {
			t := d.str()
			np := d.uv()
			if np > uint64(len(x.ids)) {
				d.fail("postings")
				break
			}
			p := &plist{docs: make([]uint32, np), tfs: make([][3]uint16, np)}
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
