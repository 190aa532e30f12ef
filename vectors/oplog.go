package vectors

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
)

// The op log, vectors.log: every Upsert and Delete is appended here (and
// fsynced, unless NoSync) before it changes the index, so a restart replays
// what the last snapshot lacks.
//
//	header  "EXOVLOG1" | dim u32 | 0 u32                        16 bytes
//	record  length u32 | crc32c(payload) u32 | payload
//	payload lsn u64 | op u8 | count uvarint | entries
//	  upsert entry: id, doc id, lang (each uvarint length + bytes) |
//	                the normalised vector, dim × float32
//	  delete entry: id (uvarint length + bytes)
//
// Integers and floats are little-endian. One record is one batch: a
// crash mid-write leaves a torn tail record, which Open drops with a warning
// (the batch it held was never acknowledged). LSNs increase by one per
// record; the snapshot stores the last LSN it contains, and replay skips
// records up to it, so a crash between writing a snapshot and emptying the
// log is harmless.

const (
	logMagic      = "EXOVLOG1"
	logHeaderSize = 16
	// maxLogRecord bounds a record's declared length, so a garbage length in
	// a torn tail is not taken for a 4 GiB allocation.
	maxLogRecord = 1 << 30
	// maxBatch is the number of points one log record (and one atomic
	// apply) holds; larger upserts are split.
	maxBatch = 4096
)

const (
	opUpsert byte = 1
	opDelete byte = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logOp is one decoded record.
type logOp struct {
	lsn    uint64
	op     byte
	points []prepared // opUpsert
	ids    []string   // opDelete
}

type opLog struct {
	f      *os.File
	path   string
	dim    int
	size   int64
	noSync bool
	buf    []byte
	// dirty: records were written without a sync since the last one (or the
	// log was just opened), so sync has something to do.
	dirty bool
	// readOnly: opened by readLog (f is nil when there was no log).
	readOnly bool
}

// openLog opens (creating it if needed) the log at path, calls replay for
// each intact record in order, drops a torn tail, and leaves the log ready
// for appends.
func openLog(path string, dim int, noSync bool, log zerolog.Logger, replay func(logOp) error) (*opLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	l := &opLog{f: f, path: path, dim: dim, noSync: noSync, dirty: true}
	if err := l.load(log, replay); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// readLog is openLog for a read-only store: it replays the log at path (a
// missing one is empty) without creating, cutting or writing it; the
// returned log takes no appends.
func readLog(path string, dim int, noSync bool, log zerolog.Logger, replay func(logOp) error) (*opLog, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &opLog{path: path, dim: dim, readOnly: true}, nil
	}
	if err != nil {
		return nil, err
	}
	l := &opLog{f: f, path: path, dim: dim, noSync: noSync, readOnly: true}
	if err := l.load(log, replay); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *opLog) load(log zerolog.Logger, replay func(logOp) error) error {
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < logHeaderSize {
		if l.readOnly {
			return nil // empty, or its header still being written
		}
		if st.Size() > 0 {
			log.Warn().Str("path", l.path).Int64("bytes", st.Size()).Msg("vectors: op log header torn; starting an empty log")
		}
		return l.reset()
	}
	r := bufio.NewReaderSize(l.f, 1<<20)
	var hdr [logHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	if string(hdr[:8]) != logMagic {
		return fmt.Errorf("%s is not an op log: %w", l.path, ErrCorrupt)
	}
	if d := int(binary.LittleEndian.Uint32(hdr[8:])); d != l.dim {
		return fmt.Errorf("op log %s has dimension %d, store has %d: %w", l.path, d, l.dim, ErrDimMismatch)
	}
	off := int64(logHeaderSize)
	var torn string
	for {
		var rh [8]byte
		n, err := io.ReadFull(r, rh[:])
		if err == io.EOF {
			break
		}
		if err != nil {
			torn = fmt.Sprintf("record header cut after %d bytes", n)
			break
		}
		size := binary.LittleEndian.Uint32(rh[:4])
		if size > maxLogRecord {
			torn = fmt.Sprintf("record length %d is impossible", size)
			break
		}
		payload := make([]byte, size)
		if n, err := io.ReadFull(r, payload); err != nil {
			torn = fmt.Sprintf("record cut after %d of %d bytes", n, size)
			break
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(rh[4:]) {
			torn = "record checksum mismatch"
			break
		}
		op, err := decodeLogOp(payload, l.dim)
		if err != nil {
			return fmt.Errorf("op log %s at offset %d: %w", l.path, off, err)
		}
		if err := replay(op); err != nil {
			return fmt.Errorf("op log %s at offset %d: replay: %w", l.path, off, err)
		}
		off += 8 + int64(size)
	}
	if torn != "" && l.readOnly {
		// Left alone: a writer may be appending it right now.
		log.Debug().Str("path", l.path).Int64("offset", off).Str("reason", torn).Msg("vectors: read-only: the op log's tail skipped")
	} else if torn != "" {
		log.Warn().Str("path", l.path).Int64("offset", off).Int64("dropped_bytes", st.Size()-off).
			Str("reason", torn).Msg("vectors: ignoring the op log's torn tail (a write cut short by a crash)")
		if err := l.f.Truncate(off); err != nil {
			return err
		}
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	l.size = off
	_, err = l.f.Seek(off, io.SeekStart)
	return err
}

// reset empties the log down to its header and syncs it.
func (l *opLog) reset() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	var hdr [logHeaderSize]byte
	copy(hdr[:], logMagic)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(l.dim))
	if _, err := l.f.WriteAt(hdr[:], 0); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return err
	}
	l.size, l.dirty = logHeaderSize, false
	_, err := l.f.Seek(logHeaderSize, io.SeekStart)
	return err
}

// appendUpsert logs one batch of upserts.
func (l *opLog) appendUpsert(lsn uint64, pts []prepared) error {
	b := l.begin(lsn, opUpsert, len(pts))
	for _, p := range pts {
		b = appendString(b, p.id)
		b = appendString(b, p.doc)
		b = appendString(b, p.lang)
		for _, x := range p.vec {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return l.commit(b)
}

// appendDelete logs one batch of deletes.
func (l *opLog) appendDelete(lsn uint64, ids []string) error {
	b := l.begin(lsn, opDelete, len(ids))
	for _, id := range ids {
		b = appendString(b, id)
	}
	return l.commit(b)
}

func (l *opLog) begin(lsn uint64, op byte, count int) []byte {
	b := append(l.buf[:0], make([]byte, 8)...)
	b = binary.LittleEndian.AppendUint64(b, lsn)
	b = append(b, op)
	return binary.AppendUvarint(b, uint64(count))
}

// commit writes a record in one write and syncs it. On failure it cuts the
// log back so no half record stays behind a later good one.
func (l *opLog) commit(b []byte) error {
	payload := b[8:]
	binary.LittleEndian.PutUint32(b[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(payload, castagnoli))
	l.buf = b
	if _, err := l.f.Write(b); err != nil {
		return l.undo(err)
	}
	if !l.noSync {
		if err := l.f.Sync(); err != nil {
			return l.undo(err)
		}
	}
	l.size += int64(len(b))
	l.dirty = l.noSync
	return nil
}

func (l *opLog) undo(cause error) error {
	if err := l.f.Truncate(l.size); err != nil {
		return errors.Join(cause, fmt.Errorf("cut back op log: %w", err))
	}
	if _, err := l.f.Seek(l.size, io.SeekStart); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// sync makes the written records durable; with nothing written since the
// last sync it does no I/O (the index stage flushes after every batch,
// most of which carry no vectors).
func (l *opLog) sync() error {
	if !l.dirty {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.dirty = false
	return nil
}

func (l *opLog) close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// logReader decodes a payload, remembering the first error.
type logReader struct {
	b   []byte
	err error
}

func (r *logReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("record too short: %w", ErrCorrupt)
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *logReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("bad varint: %w", ErrCorrupt)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *logReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("string length %d past the record: %w", n, ErrCorrupt)
		return ""
	}
	return string(r.take(int(n)))
}

func decodeLogOp(payload []byte, dim int) (logOp, error) {
	r := &logReader{b: payload}
	var op logOp
	if h := r.take(9); h != nil {
		op.lsn = binary.LittleEndian.Uint64(h)
		op.op = h[8]
	}
	count := r.uvarint()
	if count > uint64(len(payload)) {
		return op, fmt.Errorf("entry count %d past the record: %w", count, ErrCorrupt)
	}
	switch op.op {
	case opUpsert:
		op.points = make([]prepared, 0, count)
		for range count {
			p := prepared{id: r.str(), doc: r.str(), lang: r.str()}
			raw := r.take(4 * dim)
			if raw == nil {
				break
			}
			p.vec = make([]float32, dim)
			for i := range p.vec {
				p.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			p.rec = make([]byte, recordSize(dim))
			quantize(p.vec, p.rec)
			op.points = append(op.points, p)
		}
	case opDelete:
		op.ids = make([]string, 0, count)
		for range count {
			op.ids = append(op.ids, r.str())
		}
	default:
		if r.err == nil {
			return op, fmt.Errorf("unknown op %d: %w", op.op, ErrCorrupt)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes after the last entry: %w", len(r.b), ErrCorrupt)
	}
	return op, r.err
}

// syncDir fsyncs a directory so a create or rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
