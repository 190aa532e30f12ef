package vectors

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// The raw file, vectors-<gen>.raw: every node's normalised float32 vector,
// dim·4 bytes at offset node·dim·4, read back with pread to rescore a
// search's candidates exactly. The int8 codes in memory steer the graph
// walk; rescoring the final ef candidates with these makes the ranking (and
// the scores returned) exact, the way Qdrant rescores quantised candidates
// with the original vectors. The file stays out of the process's memory
// (the page cache holds the hot part), so 1M × 384 costs 1.5 GB of disk and
// no RSS.
//
// Writes are not fsynced: the op log holds the same vectors, and Open cuts
// the file back to the snapshot's node count and replays the log. A
// snapshot fsyncs the file first. Compaction renumbers nodes, so it writes
// the next generation's file and a snapshot naming it; older generations are
// deleted once a snapshot no longer needs them.

const rawPrefix, rawSuffix = "vectors-", ".raw"

func rawPath(dir string, gen uint64) string {
	return filepath.Join(dir, rawPrefix+strconv.FormatUint(gen, 10)+rawSuffix)
}

type rawFile struct {
	f    *os.File
	gen  uint64
	size int // bytes per vector

	// readOnly: opened by openRawReadOnly or memRaw; nodes from base on
	// are held in mem (the op log's replay after the snapshot), the file
	// (nil for memRaw) is never written.
	readOnly bool
	base     int
	mem      []byte

	noNowait  atomic.Bool  // preadv2(RWF_NOWAIT) is not supported here (raw_linux.go)
	coldReads atomic.Int64 // vectors that were not in the page cache when a search read them
	forceCold bool         // tests: treat every read as a page-cache miss
}

// openRaw opens generation gen's file, creating it if create, and cuts it
// to n vectors.
func openRaw(dir string, gen uint64, dim, n int, create bool) (*rawFile, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	path := rawPath(dir, gen)
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	r := &rawFile{f: f, gen: gen, size: 4 * dim}
	st, err := f.Stat()
	if err == nil && st.Size() < int64(n)*int64(r.size) {
		err = fmt.Errorf("%s holds %d vectors, the snapshot has %d: %w", path, st.Size()/int64(r.size), n, ErrCorrupt)
	}
	if err == nil && st.Size() != int64(n)*int64(r.size) {
		err = f.Truncate(int64(n) * int64(r.size))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// openRawReadOnly opens generation gen's file, holding the snapshot's n
// vectors, for reading only: it is neither created nor cut, and the
// vectors written after (the op log's replay) are kept in memory.
func openRawReadOnly(dir string, gen uint64, dim, n int) (*rawFile, error) {
	path := rawPath(dir, gen)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := &rawFile{f: f, gen: gen, size: 4 * dim, readOnly: true, base: n}
	st, err := f.Stat()
	if err == nil && st.Size() < int64(n)*int64(r.size) {
		err = fmt.Errorf("%s holds %d vectors, the snapshot has %d: %w", path, st.Size()/int64(r.size), n, ErrCorrupt)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// memRaw is a read-only store's raw file when it has no snapshot: every
// vector (the op log's) in memory.
func memRaw(dim int) *rawFile { return &rawFile{size: 4 * dim, readOnly: true} }

// writeAt stores the vectors of nodes first, first+1, ... in one write (in
// memory when read-only: they must then follow the last one).
func (r *rawFile) writeAt(first uint32, vecs [][]float32) error {
	buf := make([]byte, 0, len(vecs)*r.size)
	if r.readOnly {
		if int(first) != r.base+len(r.mem)/r.size {
			return fmt.Errorf("read-only vectors: node %d written after %d: %w", first, r.base+len(r.mem)/r.size, ErrCorrupt)
		}
		buf = r.mem
	}
	for _, v := range vecs {
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	if r.readOnly {
		r.mem = buf
		return nil
	}
	_, err := r.f.WriteAt(buf, int64(first)*int64(r.size))
	return err
}

// littleEndian is true where float32s in memory have the file's byte
// order, so a vector can be read straight into its slice.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// read loads node's vector (len(dst) == dim) into dst. On little-endian
// machines it reads straight into dst; elsewhere through *buf, grown as
// needed.
func (r *rawFile) read(node uint32, dst []float32, buf *[]byte) error {
	var b []byte
	if littleEndian {
		b = floatBytes(dst)[:r.size]
	} else {
		if len(*buf) < r.size {
			*buf = make([]byte, r.size)
		}
		b = (*buf)[:r.size]
	}
	if r.readOnly && int(node) >= r.base {
		off := (int(node) - r.base) * r.size
		if off+r.size > len(r.mem) {
			return fmt.Errorf("read vector of node %d: past the %d vectors held: %w", node, r.base+len(r.mem)/r.size, ErrCorrupt)
		}
		copy(b, r.mem[off:off+r.size])
	} else if _, err := r.f.ReadAt(b, int64(node)*int64(r.size)); err != nil {
		return fmt.Errorf("read vector of node %d from %s: %w", node, r.f.Name(), err)
	}
	if !littleEndian {
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return nil
}

// floatBytes is v's memory as bytes.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func (r *rawFile) sync() error {
	if r.readOnly {
		return nil
	}
	return r.f.Sync()
}

func (r *rawFile) close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}

// removeOtherRaw deletes raw files of generations other than keep.
func removeOtherRaw(dir string, keep uint64) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, rawPrefix) || !strings.HasSuffix(name, rawSuffix) {
			continue
		}
		gen, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, rawPrefix), rawSuffix), 10, 64)
		if err != nil || gen == keep {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyRaw writes generation gen's file holding, in order, the vectors of the
// nodes whose mapping is not noNode (mapping keeps their order), and syncs it.
func copyRaw(dir string, gen uint64, old *rawFile, mapping []uint32) (*rawFile, error) {
	path := rawPath(dir, gen)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	r := &rawFile{f: f, gen: gen, size: old.size}
	err = func() error {
		const chunk = 1024
		buf := make([]byte, chunk*r.size)
		out := make([]byte, 0, chunk*r.size)
		var off int64
		for lo := 0; lo < len(mapping); lo += chunk {
			hi := min(lo+chunk, len(mapping))
			in := buf[:(hi-lo)*r.size]
			if _, err := old.f.ReadAt(in, int64(lo)*int64(r.size)); err != nil {
				return err
			}
			out = out[:0]
			for i := lo; i < hi; i++ {
				if mapping[i] != noNode {
					out = append(out, in[(i-lo)*r.size:(i-lo+1)*r.size]...)
				}
			}
			if _, err := f.WriteAt(out, off); err != nil {
				return err
			}
			off += int64(len(out))
		}
		return f.Sync()
	}()
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return r, nil
}
