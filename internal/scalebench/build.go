package scalebench

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/exocortex/exocortex/internal/synth"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// Dim is the synthetic vectors' dimension (multilingual-e5-small's).
const Dim = 384

// Topics is the number of clusters the synthetic vectors form.
const Topics = 2000

// buildBatch is how many chunks one store transaction and one vector upsert
// carry.
const buildBatch = 256 * ChunksPerDoc

// BuildInfo describes a built (or reopened) index directory.
type BuildInfo struct {
	Stamp string `json:"stamp"`
	// VectorStamp is the vector generator's (VectorStamp when built).
	VectorStamp string `json:"vector_stamp,omitempty"`
	// Seconds is the direct build's time (store and vectors); on a reused
	// build it is the time measured when it was built.
	Seconds float64 `json:"seconds"`
	// StoreSeconds and VectorSeconds split Seconds between SQLite and the
	// embedded vector index.
	StoreSeconds  float64 `json:"store_seconds"`
	VectorSeconds float64 `json:"vector_seconds"`
	Chunks        int     `json:"chunks"`
	Words         int64   `json:"words"`
	// Cached: the SQLite store was an earlier run's. VectorsBuilt: the
	// vectors were (re)built in this run all the same (their generator
	// changed).
	Cached       bool `json:"cached"`
	VectorsBuilt bool `json:"vectors_built,omitempty"`
}

// Paths of a built directory.
func StorePath(dir string) string   { return filepath.Join(dir, "exocortex.db") }
func VectorsPath(dir string) string { return filepath.Join(dir, "vectors") }

// build.json describes the whole build (the corpus stamp, the SQLite
// store's time); vectors.json the vectors' (VectorStamp and their time), so
// that a new vector generator rebuilds the vectors alone.
const buildInfoFile, vectorsInfoFile = "build.json", "vectors.json"

type vectorsInfo struct {
	Stamp   string  `json:"stamp"`
	Chunks  int     `json:"chunks"`
	Seconds float64 `json:"seconds"`
}

// Build fills dir with the corpus's SQLite store (the index stage's writes:
// chunks, full-text rows with the default analyzer, document structure) and
// embedded vector index (synthetic vectors, Vectors), directly rather than
// through the pipeline. A directory already built from the same corpus
// stamp is reused as it is; when only its vectors.json's stamp differs
// from VectorStamp, its vectors are rebuilt and the SQLite store is not
// opened. logf reports progress.
func Build(ctx context.Context, dir string, c *Corpus, logf func(format string, args ...any)) (BuildInfo, error) {
	if info, ok, err := reuseBuild(ctx, dir, c, logf); ok {
		return info, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return BuildInfo{}, fmt.Errorf("scale build: clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return BuildInfo{}, fmt.Errorf("scale build: %w", err)
	}
	st, err := store.Open(StorePath(dir))
	if err != nil {
		return BuildInfo{}, fmt.Errorf("scale build: %w", err)
	}
	defer st.Close()
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim,
		Embedded: vectors.EmbeddedConfig{NoSync: true}})
	if err != nil {
		return BuildInfo{}, fmt.Errorf("scale build: %w", err)
	}
	info, err := fill(ctx, st, vs, c, logf)
	if err != nil {
		return info, err
	}
	if err := writeJSON(filepath.Join(dir, vectorsInfoFile), vectorsInfo{Stamp: VectorStamp, Chunks: info.Chunks, Seconds: info.VectorSeconds}); err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, scopeInfoFile), map[string]string{"stamp": ScopeStamp}); err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, buildInfoFile), info); err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	return info, nil
}

// reuseBuild returns the build in dir when it is of this corpus (ok),
// rebuilding its vectors alone when they are of another VectorStamp.
func reuseBuild(ctx context.Context, dir string, c *Corpus, logf func(format string, args ...any)) (info BuildInfo, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, buildInfoFile))
	if err != nil || json.Unmarshal(raw, &info) != nil || info.Stamp != c.cfg.Stamp() {
		return BuildInfo{}, false, nil
	}
	info.Cached = true
	if _, err := refreshScope(ctx, dir, c, logf); err != nil {
		return info, true, err
	}
	var vi vectorsInfo
	if readJSON(filepath.Join(dir, vectorsInfoFile), &vi) && vi.Stamp == VectorStamp && vi.Chunks == c.cfg.Chunks {
		return info, true, nil
	}
	logf("vectors of %s are %q, want %q: rebuilding the vectors alone (the SQLite store is kept)", dir, vi.Stamp, VectorStamp)
	secs, err := BuildVectors(ctx, dir, c, logf)
	if err != nil {
		return info, true, err
	}
	info.Seconds += secs - info.VectorSeconds
	info.VectorStamp, info.VectorSeconds = VectorStamp, secs
	stored := info
	stored.Cached = false
	if err := writeJSON(filepath.Join(dir, buildInfoFile), stored); err != nil {
		return info, true, fmt.Errorf("scale build: %w", err)
	}
	info.VectorsBuilt = true
	return info, true, nil
}

// fill writes the corpus's chunks, documents and vectors, a batch at a
// time (the next batches made meanwhile), and closes vs.
func fill(ctx context.Context, st *store.Store, vs vectors.Store, c *Corpus, logf func(format string, args ...any)) (BuildInfo, error) {
	defer func() {
		if vs != nil {
			vs.Close()
		}
	}()
	vg := NewVectors(c)
	n := c.cfg.Chunks
	next, stop := inOrder(ctx, (n+buildBatch-1)/buildBatch, func(b int) buildBatchData {
		var out buildBatchData
		for i := b * buildBatch; i < min((b+1)*buildBatch, n); i++ {
			ch := c.Chunk(i)
			out.chunks = append(out.chunks, ch)
			out.pts = append(out.pts, vectors.Point{ID: ch.ID, DocID: ch.DocID, Lang: ch.Lang, Vector: vg.Vector(i, nil)})
		}
		return out
	})
	defer stop()
	var info BuildInfo
	start := time.Now()
	var storeTime, vecTime time.Duration
	for bi := range (n + buildBatch - 1) / buildBatch {
		b, err := next()
		if err != nil {
			return info, err
		}
		t0 := time.Now()
		words, err := storeBatch(ctx, st, c, b.chunks)
		info.Words += words
		if err != nil {
			return info, fmt.Errorf("scale build: %w", err)
		}
		t1 := time.Now()
		if err := vs.Upsert(ctx, b.pts); err != nil {
			return info, fmt.Errorf("scale build: vectors: %w", err)
		}
		storeTime += t1.Sub(t0)
		vecTime += time.Since(t1)
		if bi%50 == 49 {
			logf("built %d/%d chunks in %s (store %s, vectors %s)", (bi+1)*buildBatch, n,
				time.Since(start).Round(time.Second), storeTime.Round(time.Second), vecTime.Round(time.Second))
		}
	}
	t1 := time.Now()
	err := vs.Close()
	vs = nil
	if err != nil {
		return info, fmt.Errorf("scale build: close vectors: %w", err)
	}
	vecTime += time.Since(t1)
	return BuildInfo{Stamp: c.cfg.Stamp(), VectorStamp: VectorStamp, Seconds: time.Since(start).Seconds(),
		StoreSeconds: storeTime.Seconds(), VectorSeconds: vecTime.Seconds(), Chunks: n, Words: info.Words}, nil
}

// buildBatchData is one batch of the build: its chunks and their vectors.
type buildBatchData struct {
	chunks []Chunk
	pts    []vectors.Point
}

// storeBatch writes chunks and their documents in one transaction and
// returns the words they hold.
func storeBatch(ctx context.Context, st *store.Store, c *Corpus, chunks []Chunk) (words int64, err error) {
	docs := map[string]*schemas.DocStructure{}
	err = st.Batch(ctx, func(ctx context.Context) error {
		for _, x := range chunks {
			words += int64(len(strings.Fields(x.Text)))
			cc := &schemas.ChunkCreated{ChunkID: x.ID, DocID: x.DocID, DocVersion: 1, Ordinal: x.Ordinal,
				Hash: x.ID, Text: x.Text, SectionPath: x.SectionPath, Lang: x.Lang, BlockIDs: []string{x.ID + "-b0"}}
			if _, err := st.UpsertChunk(ctx, cc); err != nil {
				return fmt.Errorf("chunk %s: %w", x.ID, err)
			}
			d := docs[x.DocID]
			if d == nil {
				d = docStructure(x.DocID, x.Title, c.ChunkMeta(ChunkIndex(x.ID)), nil)
				docs[x.DocID] = d
			}
			d.ChunkIDs = append(d.ChunkIDs, x.ID)
		}
		// A note never spans batches (buildBatch is a multiple of
		// ChunksPerDoc; a planted paragraph is one chunk), so each is
		// complete at the end of its batch.
		for id, d := range docs {
			if _, err := st.ApplyStructure(ctx, d); err != nil {
				return fmt.Errorf("document %s: %w", id, err)
			}
		}
		return nil
	})
	return words, err
}

// BuildVectors rebuilds the embedded vector index of a built directory
// (VectorsPath) from Vectors, and vectors.json, leaving the SQLite store
// alone; the exact top-10 and the hnswlib index cached for the old vectors
// go with them. It returns the build's seconds.
func BuildVectors(ctx context.Context, dir string, c *Corpus, logf func(format string, args ...any)) (float64, error) {
	// vectors.json first: a build cut short is never taken for a whole one.
	if err := os.Remove(filepath.Join(dir, vectorsInfoFile)); err != nil && !os.IsNotExist(err) {
		return 0, fmt.Errorf("scale vectors: %w", err)
	}
	if err := os.RemoveAll(VectorsPath(dir)); err != nil {
		return 0, fmt.Errorf("scale vectors: clear %s: %w", VectorsPath(dir), err)
	}
	// What was computed from the old vectors goes with them: the exact
	// top-10 and hnswlib's index (hnswlib_bench_test.go).
	old, _ := filepath.Glob(filepath.Join(dir, "truth-*.json"))
	idx, _ := filepath.Glob(filepath.Join(dir, "hnswlib-*.bin"))
	for _, f := range append(old, idx...) {
		if err := os.Remove(f); err != nil {
			return 0, fmt.Errorf("scale vectors: %w", err)
		}
	}
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim,
		Embedded: vectors.EmbeddedConfig{NoSync: true}})
	if err != nil {
		return 0, fmt.Errorf("scale vectors: %w", err)
	}
	defer func() {
		if vs != nil {
			vs.Close()
		}
	}()
	vg := NewVectors(c)
	n := c.cfg.Chunks
	nb := (n + buildBatch - 1) / buildBatch
	next, stop := inOrder(ctx, nb, func(b int) []vectors.Point {
		var pts []vectors.Point
		for i := b * buildBatch; i < min((b+1)*buildBatch, n); i++ {
			ch := c.Chunk(i)
			pts = append(pts, vectors.Point{ID: ch.ID, DocID: ch.DocID, Lang: ch.Lang, Vector: vg.Vector(i, nil)})
		}
		return pts
	})
	defer stop()
	start := time.Now()
	for bi := range nb {
		pts, err := next()
		if err != nil {
			return 0, err
		}
		if err := vs.Upsert(ctx, pts); err != nil {
			return 0, fmt.Errorf("scale vectors: upsert: %w", err)
		}
		if bi%50 == 49 {
			logf("built the vectors of %d/%d chunks in %s", (bi+1)*buildBatch, n, time.Since(start).Round(time.Second))
		}
	}
	err = vs.Close()
	vs = nil
	if err != nil {
		return 0, fmt.Errorf("scale vectors: close: %w", err)
	}
	secs := time.Since(start).Seconds()
	if err := writeJSON(filepath.Join(dir, vectorsInfoFile), vectorsInfo{Stamp: VectorStamp, Chunks: n, Seconds: secs}); err != nil {
		return 0, fmt.Errorf("scale vectors: %w", err)
	}
	return secs, nil
}

// inOrder makes batches 0..nb-1 with mk on every core, a few ahead of the
// consumer, and hands them out in order: next returns the following batch
// (or ctx's error); stop ends the workers.
func inOrder[T any](ctx context.Context, nb int, mk func(b int) T) (next func() (T, error), stop func()) {
	batches := make([]chan T, nb)
	for i := range batches {
		batches[i] = make(chan T, 1)
	}
	var mu sync.Mutex
	nextBatch := 0
	workers := runtime.GOMAXPROCS(0)
	gctx, cancel := context.WithCancel(ctx)
	sem := make(chan struct{}, workers+2) // bounds batches made ahead
	for range workers {
		go func() {
			for {
				// The slot first, then the batch: batches are taken in
				// order by holders of slots, so the one the consumer
				// waits for always has its slot.
				select {
				case sem <- struct{}{}:
				case <-gctx.Done():
					return
				}
				mu.Lock()
				b := nextBatch
				nextBatch++
				mu.Unlock()
				if b >= nb {
					return
				}
				batches[b] <- mk(b)
			}
		}()
	}
	taken := 0
	next = func() (T, error) {
		var zero T
		if taken >= nb {
			return zero, fmt.Errorf("scale build: batch %d of %d", taken, nb)
		}
		select {
		case x := <-batches[taken]:
			taken++
			<-sem
			return x, nil
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	return next, cancel
}

func readJSON(path string, v any) bool {
	raw, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(raw, v) == nil
}

// writeJSON replaces path with v's JSON whole (a reader never sees half).
func writeJSON(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", raw, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// VectorStamp names the vector generator for caches: a built directory
// whose vectors.json carries another stamp (or none: the generator before
// stamps) gets its vectors rebuilt, and only them. Change it with the
// generator (Vectors, synth.Default).
var VectorStamp = "synth-v1"

// Vectors makes the synthetic vectors with internal/synth (the vector
// store's own benchmark data): 64 latent dimensions with a decaying
// spectrum, one topic per 500 chunks, mapped to 384 dimensions with
// isotropic noise, as sentence embeddings cluster by subject and have a low
// intrinsic dimension. A chunk's topic is drawn per chunk, not per note.
// Queries are synth's query stream: drawn like the points, not copies of
// them. (Embedding a million chunks with the real model would take days on
// two cores.)
type Vectors struct {
	n int
	g *synth.Gen
}

// NewVectors prepares the vectors of c.
func NewVectors(c *Corpus) *Vectors { return newVectors(c.cfg.Seed, c.cfg.Chunks) }

func newVectors(seed uint64, n int) *Vectors {
	return &Vectors{n: n, g: synth.New(synth.Default(seed, Dim, n))}
}

// Vector writes chunk i's vector into dst (allocated when nil).
func (v *Vectors) Vector(i int, dst []float32) []float32 {
	if dst == nil {
		dst = make([]float32, Dim)
	}
	v.g.Vector(i, dst)
	return dst
}

// Query is the j-th query vector.
func (v *Vectors) Query(j int) []float32 {
	q := make([]float32, Dim)
	v.g.Query(j, q)
	return q
}

// DirSize is the bytes of the files under path (0 when missing).
func DirSize(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
