package vectors

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The snapshot, vectors.snap: the whole index as it is in memory, written to
// vectors.snap.tmp, fsynced and renamed over the old one, so a crash leaves
// either the old or the new snapshot, never a mix. Little-endian throughout:
//
//	"EXOVSNP1" | version u32 | dim u32 | M u32 | efConstruction u32
//	nodes u32 | entry node+1 u32 (0 = empty) | entry level u32 | lsn u64
//	raw file generation u64
//	langs u32 | docs u32
//	langs × string | docs × string | nodes × id string  (uvarint length + bytes;
//	                                                    "" for deleted nodes)
//	nodes × state u8 | nodes × level u8 | nodes × lang u8 | nodes × doc u32
//	nodes × record (recordSize(dim) bytes: scale f32, codes)
//	nodes × level-0 list ((1+2M) u32: count, ids)
//	for each node above level 0, in id order: level × (1+M) u32
//	crc32c of everything above u32 | "EXOVEND1"
//
// Open loads it, checks the checksum, then replays the op log's records
// after its lsn.

const (
	snapMagic   = "EXOVSNP1"
	snapEnd     = "EXOVEND1"
	snapVersion = 1
)

// snapshotState is what the store hands the writer: the graph plus the
// per-node and table data the store keeps beside it.
type snapshotState struct {
	g      *graph
	lsn    uint64
	rawGen uint64
	langs  []string
	docs   []string
	ids    []string
	langOf []uint8
	docOf  []uint32
}

type snapWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	err error
	b   [8]byte
}

func (w *snapWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc.Write(p)
	_, w.err = w.w.Write(p)
}

func (w *snapWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(w.b[:4], v)
	w.write(w.b[:4])
}

func (w *snapWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(w.b[:8], v)
	w.write(w.b[:8])
}

func (w *snapWriter) str(s string) {
	n := binary.PutUvarint(w.b[:], uint64(len(s)))
	w.write(w.b[:n])
	if w.err == nil {
		w.crc.Write([]byte(s))
		_, w.err = w.w.WriteString(s)
	}
}

func (w *snapWriter) u32s(vs []uint32, buf []byte) {
	for len(vs) > 0 {
		n := min(len(vs), len(buf)/4)
		for i, v := range vs[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], v)
		}
		w.write(buf[:4*n])
		vs = vs[n:]
	}
}

// writeSnapshot writes st to path atomically and returns its size.
func writeSnapshot(path string, st snapshotState) (int64, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	size, err := encodeSnapshot(f, st)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return size, nil
}

func encodeSnapshot(f io.Writer, st snapshotState) (int64, error) {
	g := st.g
	cw := &countWriter{w: f}
	w := &snapWriter{w: bufio.NewWriterSize(cw, 1<<20), crc: crc32.New(castagnoli)}
	w.write([]byte(snapMagic))
	w.u32(snapVersion)
	w.u32(uint32(g.dim))
	w.u32(uint32(g.m))
	w.u32(uint32(g.efc))
	w.u32(uint32(g.n))
	ep, level, ok := g.entry()
	if ok {
		w.u32(ep + 1)
	} else {
		w.u32(0)
	}
	w.u32(uint32(level))
	w.u64(st.lsn)
	w.u64(st.rawGen)
	w.u32(uint32(len(st.langs)))
	w.u32(uint32(len(st.docs)))
	for _, s := range st.langs {
		w.str(s)
	}
	for _, s := range st.docs {
		w.str(s)
	}
	for _, s := range st.ids[:g.n] {
		w.str(s)
	}
	w.write(g.state[:g.n])
	w.write(g.levels[:g.n])
	w.write(st.langOf[:g.n])
	buf := make([]byte, 1<<16)
	w.u32s(st.docOf[:g.n], buf)
	for b := 0; b*blockNodes < g.n; b++ {
		k := min(blockNodes, g.n-b*blockNodes)
		w.write(g.vecs[b][:k*g.recSize])
	}
	for b := 0; b*blockNodes < g.n; b++ {
		k := min(blockNodes, g.n-b*blockNodes)
		w.u32s(g.l0[b][:k*g.l0Stride], buf)
	}
	for id := range g.n {
		if g.levels[id] > 0 {
			w.u32s(g.upper[uint32(id)], buf)
		}
	}
	sum := w.crc.Sum32()
	if w.err == nil {
		binary.LittleEndian.PutUint32(w.b[:4], sum)
		_, w.err = w.w.Write(w.b[:4])
	}
	if w.err == nil {
		_, w.err = w.w.WriteString(snapEnd)
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return cw.n, w.err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type snapReader struct {
	r   *bufio.Reader
	crc hash.Hash32
	err error
	b   [8]byte
}

func (r *snapReader) read(p []byte) {
	if r.err != nil {
		return
	}
	if _, err := io.ReadFull(r.r, p); err != nil {
		r.err = fmt.Errorf("snapshot cut short: %w", ErrCorrupt)
		return
	}
	r.crc.Write(p)
}

func (r *snapReader) u32() uint32 {
	r.read(r.b[:4])
	return binary.LittleEndian.Uint32(r.b[:4])
}

func (r *snapReader) u64() uint64 {
	r.read(r.b[:8])
	return binary.LittleEndian.Uint64(r.b[:8])
}

func (r *snapReader) str() string {
	if r.err != nil {
		return ""
	}
	n, err := binary.ReadUvarint(r.r)
	if err != nil || n > 1<<20 {
		r.err = fmt.Errorf("snapshot string: %w", ErrCorrupt)
		return ""
	}
	var tmp [binary.MaxVarintLen64]byte
	r.crc.Write(tmp[:binary.PutUvarint(tmp[:], n)])
	b := make([]byte, n)
	r.read(b)
	return string(b)
}

func (r *snapReader) u32s(dst []uint32, buf []byte) {
	for len(dst) > 0 && r.err == nil {
		n := min(len(dst), len(buf)/4)
		r.read(buf[:4*n])
		for i := range n {
			dst[i] = binary.LittleEndian.Uint32(buf[4*i:])
		}
		dst = dst[n:]
	}
}

// readSnapshot loads a snapshot written by writeSnapshot. The graph's
// dimension must be dim; its M and ef construction come from the file.
func readSnapshot(path string, dim int) (snapshotState, error) {
	f, err := os.Open(path)
	if err != nil {
		return snapshotState{}, err
	}
	defer f.Close()
	r := &snapReader{r: bufio.NewReaderSize(f, 1<<20), crc: crc32.New(castagnoli)}
	h, err := r.header(dim)
	if err != nil {
		return snapshotState{}, err
	}
	g := newGraph(dim, h.m, h.efc)
	st := snapshotState{g: g, lsn: h.lsn, rawGen: h.rawGen}
	fail := func(err error) (snapshotState, error) {
		g.release()
		return snapshotState{}, err
	}
	buf := make([]byte, 1<<16)
	r.tables(&st, h, buf)
	if r.err != nil {
		return fail(r.err)
	}
	if err := r.nodes(g, h, buf); err != nil {
		return fail(err)
	}
	if err := r.trailer(); err != nil {
		return fail(err)
	}
	if err := validateGraph(st); err != nil {
		return fail(err)
	}
	if h.epNode > 0 {
		g.ep.Store(encodeEntry(h.epNode-1, h.epLevel))
	}
	g.countIndegrees(func(uint32) bool { return true })
	return st, nil
}

// snapHeader is a snapshot's header: the graph's parameters and counts.
type snapHeader struct {
	m, efc, n     int
	epNode        uint32 // the entry point's node plus one; 0: none
	epLevel       int
	lsn, rawGen   uint64
	nLangs, nDocs int
}

// header reads and checks the magic, the version and the header of a
// snapshot of a store of dimension dim.
func (r *snapReader) header(dim int) (snapHeader, error) {
	var magic [8]byte
	r.read(magic[:])
	if r.err == nil && string(magic[:]) != snapMagic {
		return snapHeader{}, fmt.Errorf("not a vectors snapshot: %w", ErrCorrupt)
	}
	if v := r.u32(); r.err == nil && v != snapVersion {
		return snapHeader{}, fmt.Errorf("snapshot version %d, this build reads %d: %w", v, snapVersion, ErrCorrupt)
	}
	var h snapHeader
	fdim := int(r.u32())
	h.m, h.efc, h.n = int(r.u32()), int(r.u32()), int(r.u32())
	h.epNode, h.epLevel, h.lsn, h.rawGen = r.u32(), int(r.u32()), r.u64(), r.u64()
	h.nLangs, h.nDocs = int(r.u32()), int(r.u32())
	if r.err != nil {
		return snapHeader{}, r.err
	}
	if fdim != dim {
		return snapHeader{}, fmt.Errorf("snapshot has dimension %d, store has %d: %w", fdim, dim, ErrDimMismatch)
	}
	if h.m < 2 || h.m > 128 || h.efc < 1 || h.nLangs > 256 || h.n < 0 || h.n > 1<<31 || h.epLevel > maxLevel || int(h.epNode) > h.n {
		return snapHeader{}, fmt.Errorf("snapshot header out of range: %w", ErrCorrupt)
	}
	return h, nil
}

// tables reads the languages, documents and point ids, and each node's
// state, level, language and document; errors are left in r.err.
func (r *snapReader) tables(st *snapshotState, h snapHeader, buf []byte) {
	g, n := st.g, h.n
	for range h.nLangs {
		st.langs = append(st.langs, r.str())
	}
	for range h.nDocs {
		if r.err != nil {
			break
		}
		st.docs = append(st.docs, r.str())
	}
	st.ids = make([]string, 0, n)
	for range n {
		if r.err != nil {
			break
		}
		st.ids = append(st.ids, r.str())
	}
	g.state = make([]uint8, n)
	g.levels = make([]uint8, n)
	st.langOf = make([]uint8, n)
	st.docOf = make([]uint32, n)
	r.read(g.state)
	r.read(g.levels)
	r.read(st.langOf)
	r.u32s(st.docOf, buf)
}

// nodes reads the nodes' vectors, their level-0 links and the upper
// levels' links into g.
func (r *snapReader) nodes(g *graph, h snapHeader, buf []byte) error {
	n := h.n
	if err := g.grow(n); err != nil {
		return err
	}
	g.n = n
	for b := 0; b*blockNodes < n; b++ {
		k := min(blockNodes, n-b*blockNodes)
		r.read(g.vecs[b][:k*g.recSize])
	}
	for b := 0; b*blockNodes < n; b++ {
		k := min(blockNodes, n-b*blockNodes)
		r.u32s(g.l0[b][:k*g.l0Stride], buf)
	}
	for id := range n {
		if l := int(g.levels[id]); l > 0 {
			if l > maxLevel {
				return fmt.Errorf("node %d level %d: %w", id, l, ErrCorrupt)
			}
			u := make([]uint32, l*(h.m+1))
			r.u32s(u, buf)
			g.upper[uint32(id)] = u
		}
	}
	return nil
}

// trailer checks the snapshot's end: the CRC of all read so far and the
// end mark; it returns any earlier read error first.
func (r *snapReader) trailer() error {
	want := r.crc.Sum32()
	var tail [12]byte
	if r.err == nil {
		if _, err := io.ReadFull(r.r, tail[:]); err != nil {
			r.err = fmt.Errorf("snapshot trailer missing: %w", ErrCorrupt)
		}
	}
	if r.err != nil {
		return r.err
	}
	if binary.LittleEndian.Uint32(tail[:4]) != want || string(tail[4:]) != snapEnd {
		return fmt.Errorf("snapshot checksum mismatch: %w", ErrCorrupt)
	}
	return nil
}

// validateGraph checks the references a corrupt file could get wrong, so a
// search can never index out of range.
func validateGraph(st snapshotState) error {
	g := st.g
	bad := func(what string, node int) error {
		return fmt.Errorf("snapshot node %d: %s out of range: %w", node, what, ErrCorrupt)
	}
	for id := range g.n {
		if int(st.langOf[id]) >= max(len(st.langs), 1) || int(st.docOf[id]) >= max(len(st.docs), 1) {
			return bad("lang or doc", id)
		}
		if g.state[id] > stateDeleted {
			return bad("state", id)
		}
		for l := 0; l <= int(g.levels[id]); l++ {
			list := g.links(uint32(id), l)
			if int(list[0]) > len(list)-1 {
				return bad("link count", id)
			}
			for _, nb := range list[1 : 1+list[0]] {
				if int(nb) >= g.n || int(g.levels[nb]) < l {
					return bad("link", id)
				}
			}
		}
	}
	return nil
}
