package vectors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// File names inside the embedded store's directory.
const (
	snapshotFile = "vectors.snap"
	logFile      = "vectors.log"
)

// compactMinDeleted is the fewest deleted nodes worth a compaction.
const compactMinDeleted = 1024

// Embedded is the in-process vector store: an HNSW graph over int8 vectors
// (hnsw.go) whose candidates are rescored with the float32 vectors kept on
// disk (raw.go), persisted as an op log (oplog.go) plus snapshots
// (snapshot.go) in one directory, which one process at a time may open.
//
// Any number of searches run concurrently; writes are serialised, and a
// large upsert links its points on all cores while searches go on.
type Embedded struct {
	dir  string
	dim  int
	cfg  EmbeddedConfig
	log  zerolog.Logger
	lock *os.File

	writeMu sync.Mutex   // one writer: Upsert, Delete, Flush, Snapshot, Compact, Close
	mu      sync.RWMutex // searches read under it; writers change the tables under its write lock

	g        *graph
	ids      []string // per node; "" once deleted
	docOf    []uint32 // per node, index into docs
	langOf   []uint8  // per node, index into langs
	byID     map[string]uint32
	docs     []docEntry
	docIdx   map[string]uint32
	langs    []string
	langIdx  map[string]uint8
	langLive []int // live points per lang
	live     int
	dead     int // deleted nodes still in the graph
	// version changes (under the write lock) whenever a node is added,
	// retired or renumbered: an IDSet's resolution is valid while it
	// stays.
	version uint64

	rng      *rand.Rand // levels of new nodes; writers only
	raw      *rawFile
	wal      *opLog
	lsn      uint64 // last logged op
	snapLSN  uint64 // last op in the snapshot on disk
	snapSize int64
	closed   bool
	broken   error // a write that was logged but could not be applied

	// rescoreAll, for tests and benchmarks, rescores as before selective
	// rescoring: every candidate, one pread after another (with today's
	// dot product, so that scores compare exactly).
	rescoreAll bool
	// forcePlan, for tests and benchmarks, makes every filtered search
	// scan (planExact) or walk (planWalk); planAuto chooses by the
	// filter's size.
	forcePlan int
	// narrowDeep, for benchmarks, walks a deep list (ef beyond the
	// default) as a list of the default ef is walked (see walkShape).
	narrowDeep bool
}

type docEntry struct {
	name    string
	members []uint32 // live nodes
}

// prepared is a validated, normalised, quantised point.
type prepared struct {
	id, doc, lang string
	rec           []byte    // recordSize(dim): scale, codes
	vec           []float32 // the normalised vector
}

// EmbeddedStats describe the embedded store's size.
type EmbeddedStats struct {
	Points        int   // searchable points
	Nodes         int   // graph nodes, including deleted ones awaiting compaction
	Deleted       int   // deleted or replaced nodes still in the graph
	OffHeapBytes  int64 // vector and level-0 link blocks (anonymous mappings on Linux)
	RawBytes      int64 // float32 vectors on disk
	LogBytes      int64 // op log size
	SnapshotBytes int64 // last snapshot size
}

// OpenEmbedded opens the store in dir (creating it if needed) for vectors of
// dimension dim: it loads the snapshot, replays the op log after it, and
// drops a torn last log record with a warning on the context's logger.
func OpenEmbedded(ctx context.Context, dir string, dim int, cfg EmbeddedConfig) (*Embedded, error) {
	cfg = cfg.withDefaults()
	if err := errors.Join(cfg.Validate(), Config{Kind: KindEmbedded, Dir: dir, Dim: dim}.Validate()); err != nil {
		return nil, err
	}
	fail := func(err error) (*Embedded, error) {
		return nil, fmt.Errorf("vectors: open embedded store %s: %w", dir, err)
	}
	lock, err := prepareDir(dir, cfg.ReadOnly)
	if err != nil {
		return fail(err)
	}
	e := &Embedded{
		dir:     dir,
		dim:     dim,
		cfg:     cfg,
		log:     zerolog.Ctx(ctx).With().Str("vector_store", KindEmbedded).Str("dir", dir).Logger(),
		lock:    lock,
		byID:    map[string]uint32{},
		docIdx:  map[string]uint32{},
		langIdx: map[string]uint8{},
		rng:     rand.New(rand.NewPCG(0x5eed, 0x1e7e1)),
	}
	start := time.Now()
	if err := e.load(); err != nil {
		e.abandon()
		return fail(err)
	}
	replayed, err := e.replay()
	if err != nil {
		e.abandon()
		return fail(err)
	}
	e.log.Debug().Int("points", e.live).Int("replayed_ops", replayed).Bool("read_only", cfg.ReadOnly).
		Dur("took", time.Since(start)).Msg("vectors: embedded store open")
	if !cfg.ReadOnly {
		e.writeMu.Lock()
		e.maintain()
		e.writeMu.Unlock()
	}
	return e, nil
}

// prepareDir checks that a read-only store's directory exists, or creates
// a writable store's directory and takes its lock (returned).
func prepareDir(dir string, readOnly bool) (*os.File, error) {
	if readOnly {
		if fi, err := os.Stat(dir); err != nil {
			return nil, err
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return lockDir(dir)
}

// load reads the snapshot (or starts an empty graph when there is none)
// and opens its raw vectors file; a writable store then removes raw files
// of other generations.
func (e *Embedded) load() error {
	dir, dim, cfg := e.dir, e.dim, e.cfg
	snapPath := filepath.Join(dir, snapshotFile)
	st, err := readSnapshot(snapPath, dim)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e.g = newGraph(dim, cfg.M, cfg.EfConstruction)
		if cfg.ReadOnly {
			e.raw, err = memRaw(dim), nil
		} else {
			e.raw, err = openRaw(dir, 0, dim, 0, true)
		}
	case err != nil:
		err = fmt.Errorf("load snapshot %s: %w", snapPath, err)
	default:
		e.adopt(st)
		if fi, err := os.Stat(snapPath); err == nil {
			e.snapSize = fi.Size()
		}
		if cfg.ReadOnly {
			e.raw, err = openRawReadOnly(dir, st.rawGen, dim, st.g.n)
		} else {
			e.raw, err = openRaw(dir, st.rawGen, dim, st.g.n, false)
		}
	}
	if err == nil && !cfg.ReadOnly {
		// Left by a compaction whose snapshot never made it.
		err = removeOtherRaw(dir, e.raw.gen)
	}
	return err
}

// replay opens the op log (read-only: reads it) and applies the ops the
// snapshot does not hold; it returns how many it applied.
func (e *Embedded) replay() (int, error) {
	replayed := 0
	open := openLog
	if e.cfg.ReadOnly {
		open = readLog
	}
	var err error
	e.wal, err = open(filepath.Join(e.dir, logFile), e.dim, e.cfg.NoSync, e.log, func(op logOp) error {
		if op.lsn <= e.lsn {
			return nil // in the snapshot already
		}
		if op.lsn != e.lsn+1 {
			e.log.Warn().Uint64("lsn", op.lsn).Uint64("expected", e.lsn+1).Msg("vectors: gap in the op log")
		}
		e.lsn = op.lsn
		replayed++
		if op.op == opUpsert {
			return e.applyUpsert(op.points)
		}
		e.applyDelete(op.ids)
		return nil
	})
	return replayed, err
}

// abandon releases what a failed open holds: the graph, the raw vectors
// file and the directory's lock.
func (e *Embedded) abandon() {
	if e.g != nil {
		e.g.release()
	}
	if e.raw != nil {
		e.raw.close()
	}
	closeLock(e.lock)
}

// closeLock releases the directory's lock (none when read-only).
func closeLock(lock *os.File) error {
	if lock == nil {
		return nil
	}
	return lock.Close()
}

// adopt takes over a loaded snapshot and rebuilds the indexes it omits.
func (e *Embedded) adopt(st snapshotState) {
	e.g = st.g
	e.lsn, e.snapLSN = st.lsn, st.lsn
	e.ids, e.docOf, e.langOf = st.ids, st.docOf, st.langOf
	e.langs = st.langs
	e.langLive = make([]int, len(e.langs))
	for i, l := range e.langs {
		e.langIdx[l] = uint8(i)
	}
	e.docs = make([]docEntry, len(st.docs))
	for i, d := range st.docs {
		e.docs[i].name = d
	}
	for node, s := range e.g.state {
		switch s {
		case stateLive:
			e.byID[e.ids[node]] = uint32(node)
			e.live++
			e.langLive[e.langOf[node]]++
		default:
			e.g.state[node] = stateDeleted
			e.dead++
		}
	}
	if st.g.m != e.cfg.M || st.g.efc != e.cfg.EfConstruction {
		e.log.Info().Int("m", st.g.m).Int("ef_construction", st.g.efc).Msg("vectors: keeping the snapshot's graph parameters")
	}
	e.rebuildDocs()
}

// rebuildDocs drops documents without live points and rebuilds the member
// lists and docIdx. The caller holds the write lock (or owns e).
func (e *Embedded) rebuildDocs() {
	remap := make([]uint32, len(e.docs))
	for i := range remap {
		remap[i] = noNode
	}
	var docs []docEntry
	for node, s := range e.g.state {
		if s != stateLive {
			e.docOf[node] = 0
			continue
		}
		d := e.docOf[node]
		if remap[d] == noNode {
			remap[d] = uint32(len(docs))
			docs = append(docs, docEntry{name: e.docs[d].name})
		}
		nd := remap[d]
		e.docOf[node] = nd
		docs[nd].members = append(docs[nd].members, uint32(node))
	}
	e.docs = docs
	e.docIdx = make(map[string]uint32, len(docs))
	for i, d := range docs {
		e.docIdx[d.name] = uint32(i)
	}
}

// Name implements Store.
func (e *Embedded) Name() string { return KindEmbedded }

// Dim implements Store.
func (e *Embedded) Dim() int { return e.dim }

func (e *Embedded) errorf(format string, args ...any) error {
	return fmt.Errorf("vectors: embedded %s: "+format, append([]any{e.dir}, args...)...)
}

// prepare validates, normalises and quantises pts, keeping the last of
// points that share an id.
func (e *Embedded) prepare(pts []Point) ([]prepared, error) {
	out := make([]prepared, 0, len(pts))
	pos := make(map[string]int, len(pts))
	for i, p := range pts {
		if p.ID == "" {
			return nil, e.errorf("upsert point %d: empty id: %w", i, ErrInvalid)
		}
		if len(p.Vector) != e.dim {
			return nil, e.errorf("upsert %q: vector has %d dimensions, store has %d: %w", p.ID, len(p.Vector), e.dim, ErrDimMismatch)
		}
		v, err := normalize(p.Vector)
		if err != nil {
			return nil, e.errorf("upsert %q: %w", p.ID, err)
		}
		rec := make([]byte, e.g.recSize)
		quantize(v, rec)
		pp := prepared{id: p.ID, doc: p.DocID, lang: p.Lang, rec: rec, vec: v}
		if j, ok := pos[p.ID]; ok {
			out[j] = pp
			continue
		}
		pos[p.ID] = len(out)
		out = append(out, pp)
	}
	return out, nil
}

func (e *Embedded) writable() error {
	switch {
	case e.closed:
		return e.errorf("%w", ErrClosed)
	case e.cfg.ReadOnly:
		return e.errorf("%w", ErrReadOnly)
	case e.broken != nil:
		return e.errorf("unusable after a failed write: %w", e.broken)
	}
	return nil
}

// Upsert implements Store. Points are logged (and fsynced unless NoSync) in
// batches of up to 4096 before they are linked; each batch is atomic across
// a crash. Re-upserting a point unchanged is a no-op.
func (e *Embedded) Upsert(ctx context.Context, pts []Point) error {
	if len(pts) == 0 {
		return nil
	}
	prep, err := e.prepare(pts)
	if err != nil {
		return err
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.writable(); err != nil {
		return err
	}
	if e.live == 0 && e.dead > 0 {
		// Only deleted nodes left: new points would have nothing to link
		// to but waypoints. Start the graph afresh.
		e.compactLocked()
	}
	for len(prep) > 0 {
		if err := ctx.Err(); err != nil {
			return e.errorf("upsert: %w", err)
		}
		batch := prep[:min(len(prep), maxBatch)]
		prep = prep[len(batch):]
		changed := batch[:0]
		newLangs := map[string]bool{}
		for _, p := range batch {
			if e.unchanged(p) {
				continue
			}
			changed = append(changed, p)
			if _, ok := e.langIdx[p.lang]; !ok {
				newLangs[p.lang] = true
			}
		}
		if len(changed) == 0 {
			continue
		}
		if len(e.langs)+len(newLangs) > 256 {
			return e.errorf("upsert: more than 256 distinct languages: %w", ErrInvalid)
		}
		// The raw vectors first: a write that fails there (a full disk)
		// has changed nothing the store relies on (Open cuts the raw file
		// back to the snapshot and replays the log), so the store stays
		// usable and the same upsert can be tried again.
		if err := e.writeRaw(changed); err != nil {
			return e.errorf("upsert: %w", err)
		}
		if err := e.wal.appendUpsert(e.lsn+1, changed); err != nil {
			return e.errorf("upsert: write op log: %w", err)
		}
		e.lsn++
		if err := e.linkUpsert(changed); err != nil {
			e.broken = err
			return e.errorf("upsert: %w", err)
		}
	}
	e.maintain()
	return nil
}

// unchanged reports whether p is stored already exactly as it is.
func (e *Embedded) unchanged(p prepared) bool {
	node, ok := e.byID[p.id]
	if !ok || e.docs[e.docOf[node]].name != p.doc || e.langs[e.langOf[node]] != p.lang ||
		!bytes.Equal(e.g.rec(node)[:4+e.dim], p.rec[:4+e.dim]) {
		return false
	}
	stored := make([]float32, e.dim)
	if err := e.raw.read(node, stored, new([]byte)); err != nil {
		return false
	}
	return slices.Equal(stored, p.vec)
}

func (e *Embedded) internDoc(doc string) uint32 {
	if i, ok := e.docIdx[doc]; ok {
		return i
	}
	i := uint32(len(e.docs))
	e.docs = append(e.docs, docEntry{name: doc})
	e.docIdx[doc] = i
	return i
}

func (e *Embedded) internLang(lang string) uint8 {
	if i, ok := e.langIdx[lang]; ok {
		return i
	}
	i := uint8(len(e.langs))
	e.langs = append(e.langs, lang)
	e.langLive = append(e.langLive, 0)
	e.langIdx[lang] = i
	return i
}

// applyUpsert adds pts to the graph: it appends them as pending nodes, links
// them (in parallel, while searches go on), then publishes them and retires
// the nodes they replace, all at once for searches.
func (e *Embedded) applyUpsert(pts []prepared) error {
	if err := e.writeRaw(pts); err != nil {
		return err
	}
	return e.linkUpsert(pts)
}

// writeRaw stores pts' vectors in the raw file at the nodes they will take.
func (e *Embedded) writeRaw(pts []prepared) error {
	vecs := make([][]float32, len(pts))
	for i, p := range pts {
		vecs[i] = p.vec
	}
	if err := e.raw.writeAt(uint32(e.g.n), vecs); err != nil {
		return fmt.Errorf("write vectors: %w", err)
	}
	return nil
}

// linkUpsert is applyUpsert once the raw vectors are written.
func (e *Embedded) linkUpsert(pts []prepared) error {
	g := e.g
	e.mu.Lock()
	if err := g.grow(g.n + len(pts)); err != nil {
		e.mu.Unlock()
		return err
	}
	first := uint32(g.n)
	for _, p := range pts {
		g.addNode(p.rec, g.randomLevel(e.rng))
		e.ids = append(e.ids, p.id)
		e.docOf = append(e.docOf, e.internDoc(p.doc))
		e.langOf = append(e.langOf, e.internLang(p.lang))
	}
	start := 0
	if _, _, ok := g.entry(); !ok {
		g.ep.Store(encodeEntry(first, int(g.levels[first])))
		start = 1
	}
	e.mu.Unlock()

	if start < len(pts) {
		e.mu.RLock()
		e.link(pts[start:], first+uint32(start))
		// A large batch is where cut-off nodes mostly arise (many nodes
		// linking to each other at once); other writes are checked before
		// each snapshot.
		if len(pts)*64 >= g.n {
			e.connect()
		}
		e.mu.RUnlock()
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	for i, p := range pts {
		node := first + uint32(i)
		if old, ok := e.byID[p.id]; ok {
			e.dropLocked(old)
		}
		e.byID[p.id] = node
		g.state[node] = stateLive
		d := &e.docs[e.docOf[node]]
		d.members = append(d.members, node)
		e.langLive[e.langOf[node]]++
		e.live++
	}
	e.version++
	return nil
}

// link inserts pts, nodes first, first+1, ..., into the graph, on up to
// GOMAXPROCS goroutines.
func (e *Embedded) link(pts []prepared, first uint32) {
	g := e.g
	insert := func(sc *scratch, i int) { g.insert(sc, first+uint32(i), pts[i].vec) }
	workers := min(runtime.GOMAXPROCS(0), (len(pts)+15)/16)
	if workers <= 1 {
		sc := g.getScratch()
		for i := range pts {
			insert(sc, i)
		}
		g.putScratch(sc)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			sc := g.getScratch()
			defer g.putScratch(sc)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pts) {
					return
				}
				insert(sc, i)
			}
		})
	}
	wg.Wait()
}

// connect runs graph.connect; the caller holds writeMu and the read lock.
func (e *Embedded) connect() {
	sc := e.g.getScratch()
	defer e.g.putScratch(sc)
	if n := e.g.connect(sc); n > 0 {
		e.log.Debug().Int("links", n).Msg("vectors: reconnected cut-off nodes")
	}
}

// dropLocked retires a live node: it stays in the graph as a waypoint until
// the next compaction. The caller holds the write lock.
func (e *Embedded) dropLocked(node uint32) {
	e.g.state[node] = stateDeleted
	d := &e.docs[e.docOf[node]]
	for i, m := range d.members {
		if m == node {
			last := len(d.members) - 1
			d.members[i] = d.members[last]
			d.members = d.members[:last]
			break
		}
	}
	e.langLive[e.langOf[node]]--
	e.ids[node] = ""
	e.live--
	e.dead++
}

// Delete implements Store.
func (e *Embedded) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.writable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return e.errorf("delete: %w", err)
	}
	seen := make(map[string]bool, len(ids))
	var known []string
	for _, id := range ids {
		if _, ok := e.byID[id]; ok && !seen[id] {
			seen[id] = true
			known = append(known, id)
		}
	}
	for len(known) > 0 {
		batch := known[:min(len(known), maxBatch)]
		known = known[len(batch):]
		if err := e.wal.appendDelete(e.lsn+1, batch); err != nil {
			return e.errorf("delete: write op log: %w", err)
		}
		e.lsn++
		e.applyDelete(batch)
	}
	e.maintain()
	return nil
}

func (e *Embedded) applyDelete(ids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.version++
	for _, id := range ids {
		if node, ok := e.byID[id]; ok {
			delete(e.byID, id)
			e.dropLocked(node)
		}
	}
}

// Count implements Store.
func (e *Embedded) Count(ctx context.Context) (int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, e.errorf("count: %w", ErrClosed)
	}
	return e.live, nil
}

// Stats reports the store's size; it waits for a write in progress.
func (e *Embedded) Stats() EmbeddedStats {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.RLock()
	defer e.mu.RUnlock()
	st := EmbeddedStats{Points: e.live, Nodes: e.g.n, Deleted: e.dead, OffHeapBytes: e.g.offHeapBytes(),
		RawBytes: int64(e.g.n) * int64(4*e.dim), SnapshotBytes: e.snapSize}
	if e.wal != nil {
		st.LogBytes = e.wal.size
	}
	return st
}

// maintain compacts and snapshots when the thresholds say so; failures are
// logged, as the write that triggered them is durable already. The caller
// holds writeMu.
func (e *Embedded) maintain() {
	if e.dead >= compactMinDeleted && float64(e.dead) > e.cfg.CompactFraction*float64(e.g.n) {
		e.compactLocked()
	}
	if e.wal.size-logHeaderSize > max(e.cfg.SnapshotLogBytes, e.snapSize/4) {
		if err := e.snapshotLocked(); err != nil {
			e.log.Warn().Err(err).Msg("vectors: snapshot failed; the op log keeps growing")
		}
	}
}

// Flush fsyncs the op log; only needed with NoSync.
func (e *Embedded) Flush(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.writable(); err != nil {
		return err
	}
	if err := e.wal.sync(); err != nil {
		return e.errorf("flush op log: %w", err)
	}
	return nil
}

// Snapshot writes a snapshot now and empties the op log.
func (e *Embedded) Snapshot(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.writable(); err != nil {
		return err
	}
	return e.snapshotLocked()
}

func (e *Embedded) snapshotLocked() error {
	start := time.Now()
	e.mu.RLock()
	e.connect()
	e.mu.RUnlock()
	if err := e.raw.sync(); err != nil {
		return e.errorf("sync vectors: %w", err)
	}
	docs := make([]string, len(e.docs))
	for i, d := range e.docs {
		docs[i] = d.name
	}
	path := filepath.Join(e.dir, snapshotFile)
	size, err := writeSnapshot(path, snapshotState{
		g: e.g, lsn: e.lsn, rawGen: e.raw.gen, langs: e.langs, docs: docs, ids: e.ids, langOf: e.langOf, docOf: e.docOf,
	})
	if err != nil {
		return e.errorf("write snapshot: %w", err)
	}
	e.snapLSN, e.snapSize = e.lsn, size
	if err := removeOtherRaw(e.dir, e.raw.gen); err != nil {
		e.log.Warn().Err(err).Msg("vectors: cannot remove old raw vector files")
	}
	if err := e.wal.reset(); err != nil {
		// The snapshot holds every op; replay will skip the old records.
		return e.errorf("empty op log after snapshot: %w", err)
	}
	e.log.Debug().Int64("bytes", size).Dur("took", time.Since(start)).Msg("vectors: snapshot written")
	return nil
}

// Compact repairs the graph around deleted nodes and drops them now,
// whatever their number.
func (e *Embedded) Compact(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if err := e.writable(); err != nil {
		return err
	}
	e.compactLocked()
	return nil
}

// compactLocked relinks every live node that points at a deleted one and
// copies the live raw vectors into a new generation's file (searches still
// running), renumbers the live nodes densely (searches paused), and writes a
// snapshot naming the new file. The caller holds writeMu.
func (e *Embedded) compactLocked() {
	if e.dead == 0 {
		return
	}
	start := time.Now()
	g := e.g
	e.mu.Lock()
	g.countIndegrees(func(u uint32) bool { return g.state[u] == stateLive })
	e.mu.Unlock()
	e.mu.RLock()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			sc := g.getScratch()
			defer g.putScratch(sc)
			for {
				lo := int(next.Add(1024) - 1024)
				if lo >= g.n {
					return
				}
				for u := lo; u < min(lo+1024, g.n); u++ {
					if g.state[u] == stateLive {
						g.repair(sc, uint32(u))
					}
				}
			}
		})
	}
	wg.Wait()
	e.mu.RUnlock()
	repaired := time.Since(start)

	oldN := g.n
	mapping := make([]uint32, oldN)
	newN := 0
	for old := range oldN {
		if g.state[old] == stateLive {
			mapping[old] = uint32(newN)
			newN++
		} else {
			mapping[old] = noNode
		}
	}
	raw, err := copyRaw(e.dir, e.raw.gen+1, e.raw, mapping)
	if err != nil {
		e.log.Warn().Err(err).Msg("vectors: compaction abandoned")
		return
	}

	e.mu.Lock()
	oldRaw := e.raw
	e.raw = raw
	g.renumber(mapping, newN)
	for old := range oldN {
		if nw := mapping[old]; nw != noNode {
			e.ids[nw], e.docOf[nw], e.langOf[nw] = e.ids[old], e.docOf[old], e.langOf[old]
		}
	}
	clear(e.ids[newN:])
	e.ids, e.docOf, e.langOf = e.ids[:newN], e.docOf[:newN], e.langOf[:newN]
	for id, node := range e.byID {
		e.byID[id] = mapping[node]
	}
	e.rebuildDocs()
	e.version++
	dropped := e.dead
	e.dead = 0
	e.mu.Unlock()
	oldRaw.close()
	if err := e.snapshotLocked(); err != nil {
		// The old snapshot and its raw file still describe the log's base.
		e.log.Warn().Err(err).Msg("vectors: snapshot after compaction failed")
	}
	e.log.Info().Int("dropped", dropped).Int("points", e.live).Dur("repair", repaired).Dur("took", time.Since(start)).
		Msg("vectors: compacted the graph")
}

// Close writes a snapshot if the log holds anything and releases the store.
func (e *Embedded) Close() error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if e.closed {
		return nil
	}
	var errs []error
	if !e.cfg.ReadOnly {
		if e.broken == nil && e.lsn != e.snapLSN {
			if err := e.snapshotLocked(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := e.wal.sync(); err != nil {
			errs = append(errs, e.errorf("sync op log: %w", err))
		}
	}
	errs = append(errs, e.wal.close(), e.raw.close())
	e.mu.Lock()
	e.closed = true
	e.g.release()
	e.mu.Unlock()
	errs = append(errs, closeLock(e.lock))
	return errors.Join(errs...)
}
