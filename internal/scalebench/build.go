package scalebench

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

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
	// Seconds is the direct build's time (store and vectors); on a reused
	// build it is the time measured when it was built.
	Seconds float64 `json:"seconds"`
	// StoreSeconds and VectorSeconds split Seconds between SQLite and the
	// embedded vector index.
	StoreSeconds  float64 `json:"store_seconds"`
	VectorSeconds float64 `json:"vector_seconds"`
	Chunks        int     `json:"chunks"`
	Words         int64   `json:"words"`
	Cached        bool    `json:"cached"`
}

// Paths of a built directory.
func StorePath(dir string) string   { return filepath.Join(dir, "exocortex.db") }
func VectorsPath(dir string) string { return filepath.Join(dir, "vectors") }

const buildInfoFile = "build.json"

// Build fills dir with the corpus's SQLite store (the index stage's writes:
// chunks, full-text rows with the default analyzer, document structure) and
// embedded vector index (synthetic clustered vectors, Vector), directly
// rather than through the pipeline. A directory already built from the same
// corpus stamp is reused as it is. logf reports progress.
func Build(ctx context.Context, dir string, c *Corpus, logf func(format string, args ...any)) (BuildInfo, error) {
	var info BuildInfo
	raw, err := os.ReadFile(filepath.Join(dir, buildInfoFile))
	if err == nil && json.Unmarshal(raw, &info) == nil && info.Stamp == c.cfg.Stamp() {
		info.Cached = true
		return info, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return info, fmt.Errorf("scale build: clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	st, err := store.Open(StorePath(dir))
	if err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	defer st.Close()
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim,
		Embedded: vectors.EmbeddedConfig{NoSync: true}})
	if err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	defer func() {
		if vs != nil {
			vs.Close()
		}
	}()
	vg := NewVectors(c)
	n := c.cfg.Chunks
	type batch struct {
		chunks []Chunk
		pts    []vectors.Point
	}
	// Generation runs on every core ahead of the single writer.
	batches := make([]chan batch, (n+buildBatch-1)/buildBatch)
	for i := range batches {
		batches[i] = make(chan batch, 1)
	}
	var next sync.Mutex
	nextBatch := 0
	workers := runtime.GOMAXPROCS(0)
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, workers+2) // bounds batches generated ahead
	for range workers {
		go func() {
			for {
				// The slot first, then the batch: batches are taken in
				// order by holders of slots, so the one the writer waits
				// for always has its slot.
				select {
				case sem <- struct{}{}:
				case <-gctx.Done():
					return
				}
				next.Lock()
				b := nextBatch
				nextBatch++
				next.Unlock()
				if b >= len(batches) {
					return
				}
				var out batch
				for i := b * buildBatch; i < min((b+1)*buildBatch, n); i++ {
					ch := c.Chunk(i)
					out.chunks = append(out.chunks, ch)
					out.pts = append(out.pts, vectors.Point{ID: ch.ID, DocID: ch.DocID, Lang: ch.Lang, Vector: vg.Vector(i, nil)})
				}
				batches[b] <- out
			}
		}()
	}
	start := time.Now()
	var storeTime, vecTime time.Duration
	docs := map[string]*schemas.DocStructure{}
	for bi, ch := range batches {
		var b batch
		select {
		case b = <-ch:
		case <-ctx.Done():
			return info, ctx.Err()
		}
		<-sem
		t0 := time.Now()
		err := st.Batch(ctx, func(ctx context.Context) error {
			for _, x := range b.chunks {
				info.Words += int64(len(strings.Fields(x.Text)))
				cc := &schemas.ChunkCreated{ChunkID: x.ID, DocID: x.DocID, DocVersion: 1, Ordinal: x.Ordinal,
					Hash: x.ID, Text: x.Text, SectionPath: x.SectionPath, Lang: x.Lang, BlockIDs: []string{x.ID + "-b0"}}
				if _, err := st.UpsertChunk(ctx, cc); err != nil {
					return fmt.Errorf("chunk %s: %w", x.ID, err)
				}
				d := docs[x.DocID]
				if d == nil {
					d = &schemas.DocStructure{DocID: x.DocID, Source: "files", Path: x.DocID, Title: x.Title,
						Hash: x.DocID, Version: 1}
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
				delete(docs, id)
			}
			return nil
		})
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
	err = vs.Close()
	vs = nil
	if err != nil {
		return info, fmt.Errorf("scale build: close vectors: %w", err)
	}
	vecTime += time.Since(t1)
	info = BuildInfo{Stamp: c.cfg.Stamp(), Seconds: time.Since(start).Seconds(), StoreSeconds: storeTime.Seconds(),
		VectorSeconds: vecTime.Seconds(), Chunks: n, Words: info.Words}
	raw, _ = json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, buildInfoFile), raw, 0o644); err != nil {
		return info, fmt.Errorf("scale build: %w", err)
	}
	return info, nil
}

// Vectors makes the synthetic vectors: each note has a topic (one of
// Topics random unit centres), each chunk is its topic's centre plus
// Gaussian noise, as sentence embeddings cluster by subject. (Embedding a
// million chunks with the real model would take days on two cores.)
type Vectors struct {
	c       *Corpus
	centres [][]float32
}

// NewVectors prepares the vectors of c.
func NewVectors(c *Corpus) *Vectors {
	rng := rand.New(rand.NewPCG(c.cfg.Seed, 0xce17))
	v := &Vectors{c: c, centres: make([][]float32, Topics)}
	for i := range v.centres {
		v.centres[i] = normalize(gauss(rng, make([]float32, Dim), 1))
	}
	return v
}

// Vector writes chunk i's vector into dst (allocated when nil).
func (v *Vectors) Vector(i int, dst []float32) []float32 {
	if dst == nil {
		dst = make([]float32, Dim)
	}
	topic := rand.New(rand.NewPCG(v.c.cfg.Seed^0x70b1c, uint64(i/ChunksPerDoc))).IntN(Topics)
	rng := rand.New(rand.NewPCG(v.c.cfg.Seed^0xfec, uint64(i)))
	gauss(rng, dst, 0.06)
	for j, x := range v.centres[topic] {
		dst[j] += x
	}
	return normalize(dst)
}

// Query is the j-th query vector: a chunk's vector moved by noise, so that it
// has near neighbours as a question has.
func (v *Vectors) Query(j int) []float32 {
	rng := rand.New(rand.NewPCG(v.c.cfg.Seed^0x9e7, uint64(j)))
	q := v.Vector(rng.IntN(v.c.cfg.Chunks), nil)
	noise := gauss(rng, make([]float32, Dim), 0.04)
	for k := range q {
		q[k] += noise[k]
	}
	return normalize(q)
}

func gauss(rng *rand.Rand, dst []float32, sigma float64) []float32 {
	for i := range dst {
		dst[i] = float32(rng.NormFloat64() * sigma)
	}
	return dst
}

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
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
