package scalebench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// ScopeStamp names the notes' scope metadata (NoteMeta) for caches: a
// built directory whose scope.json carries another stamp (or none: built
// before scopes) gets its documents' metadata rewritten in place, its
// chunks, full-text rows and vectors kept. Change it with NoteMeta.
const ScopeStamp = "scope-v1"

// scopeInfoFile records ScopeStamp in a built directory.
const scopeInfoFile = "scope.json"

// The scopes the metadata makes, by how much of the corpus they hold.
const (
	NotebookHalf = "half" // notebook of half of the notes
	TagFive      = "five" // tag on 5% of the notes
	TagRare      = "rare" // tag on 0.1% of the notes
)

// metaEpoch and metaSpan: the notes' times are spread evenly over the three
// years from metaEpoch.
var (
	metaEpoch = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	metaSpan  = 3 * 365 * 24 * time.Hour
)

// NoteMeta is a note's scope metadata: its notebook, tags and time.
type NoteMeta struct {
	Notebook, NotebookName string
	Tags                   []string
	Time                   time.Time
}

// noteMeta is the metadata of the note with key (a generated note's number,
// or Docs() plus a planted paragraph's): its slot, key times a prime modulo
// 1000, is a permutation of every 1000 consecutive keys, so the shares are
// exact to a note: slots 0-499 are in notebook "half" (50%), slots 1 modulo
// 20 carry the tag "five" (5%), slot 0 the tag "rare" (0.1%). Its time is a
// hash of key over the three years from 2023.
func noteMeta(key int) NoteMeta {
	slot := key * 7919 % 1000
	m := NoteMeta{Notebook: "nb-rest", NotebookName: "rest"}
	if slot < 500 {
		m.Notebook, m.NotebookName = "nb-"+NotebookHalf, NotebookHalf
	}
	if slot%20 == 1 {
		m.Tags = append(m.Tags, TagFive)
	}
	if slot == 0 {
		m.Tags = append(m.Tags, TagRare)
	}
	h := splitmix(uint64(key))
	m.Time = metaEpoch.Add(time.Duration(h%uint64(metaSpan/time.Second)) * time.Second)
	return m
}

// splitmix is SplitMix64's finaliser: a well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// docKey is the key of chunk i's note (noteMeta).
func (c *Corpus) docKey(i int) int {
	if p, ok := c.planted[i]; ok {
		return c.Docs() + p
	}
	return i / ChunksPerDoc
}

// ChunkMeta is the scope metadata of chunk i's note.
func (c *Corpus) ChunkMeta(i int) NoteMeta { return noteMeta(c.docKey(i)) }

// docStructure is the structure the direct build stores for a note: its
// chunks, title and scope metadata.
func docStructure(docID, title string, m NoteMeta, chunkIDs []string) *schemas.DocStructure {
	return &schemas.DocStructure{DocID: docID, Source: "files", Path: docID, Title: title, Hash: docID, Version: 1,
		Notebook: m.Notebook, NotebookName: m.NotebookName, Tags: m.Tags, Updated: m.Time, ChunkIDs: chunkIDs}
}

// Scope is one scope the suite measures: a DocFilter and the chunks it
// should allow (Want, by chunk index).
type Scope struct {
	Name   string // "notebook 50%", ...
	Filter store.DocFilter
	// Query is the same scope as a query gives it (QueryOptions.Scope):
	// the fused rows search through the retriever's own resolution of it
	// (retrieval.DocFilter of Query is Filter).
	Query schemas.Scope
	Want  func(c *Corpus, i int) bool
}

// timeShare is the last share of metaSpan the date scope holds.
const timeShare = 0.05

// Scopes are the scopes measured: a notebook of half the notes, a tag on
// 5%, a tag on 0.1%, and the last 5% of the three years (a date range).
var Scopes = []Scope{
	{Name: "notebook 50%", Filter: store.DocFilter{Notebooks: []string{NotebookHalf}},
		Query: schemas.Scope{Include: schemas.ScopeSet{Notebooks: []string{NotebookHalf}}},
		Want:  func(c *Corpus, i int) bool { return c.ChunkMeta(i).NotebookName == NotebookHalf }},
	{Name: "tag 5%", Filter: store.DocFilter{Tags: []string{TagFive}},
		Query: schemas.Scope{Include: schemas.ScopeSet{Tags: []string{TagFive}}},
		Want:  func(c *Corpus, i int) bool { return hasTag(c.ChunkMeta(i), TagFive) }},
	{Name: "tag 0.1%", Filter: store.DocFilter{Tags: []string{TagRare}},
		Query: schemas.Scope{Include: schemas.ScopeSet{Tags: []string{TagRare}}},
		Want:  func(c *Corpus, i int) bool { return hasTag(c.ChunkMeta(i), TagRare) }},
	{Name: "since, last 5%", Filter: store.DocFilter{Since: sinceShare()},
		Query: schemas.Scope{Since: sinceShare().Format(time.RFC3339)},
		Want:  func(c *Corpus, i int) bool { return !c.ChunkMeta(i).Time.Before(sinceShare()) }},
}

func sinceShare() time.Time {
	return metaEpoch.Add(time.Duration(float64(metaSpan) * (1 - timeShare))).Truncate(time.Second)
}

func hasTag(m NoteMeta, tag string) bool {
	for _, t := range m.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// ChunkIndex is the index of chunk id ("c0001234"), or -1.
func ChunkIndex(id string) int {
	if len(id) < 2 || id[0] != 'c' {
		return -1
	}
	i, err := strconv.Atoi(id[1:])
	if err != nil {
		return -1
	}
	return i
}

// refreshScope writes the notes' scope metadata (NoteMeta) into a built
// directory whose scope.json is not of ScopeStamp: every note's structure
// is applied again as the build stores it (same chunks, title and version,
// so only the documents' rows and tags change), then scope.json. It
// returns whether it wrote.
func refreshScope(ctx context.Context, dir string, c *Corpus, logf func(format string, args ...any)) (bool, error) {
	var si struct{ Stamp string }
	if readJSON(filepath.Join(dir, scopeInfoFile), &si) && si.Stamp == ScopeStamp {
		return false, nil
	}
	logf("scope metadata of %s is %q, want %q: rewriting the documents' rows", dir, si.Stamp, ScopeStamp)
	t0 := time.Now()
	st, err := store.Open(StorePath(dir))
	if err != nil {
		return false, fmt.Errorf("scale scope: %w", err)
	}
	defer st.Close()
	n := c.cfg.Chunks
	for lo := 0; lo < n; lo += buildBatch {
		docs := map[string]*schemas.DocStructure{}
		var order []string
		for i := lo; i < min(lo+buildBatch, n); i++ {
			id, docID, title := c.chunkDoc(i)
			d := docs[docID]
			if d == nil {
				d = docStructure(docID, title, c.ChunkMeta(i), nil)
				docs[docID] = d
				order = append(order, docID)
			}
			d.ChunkIDs = append(d.ChunkIDs, id)
		}
		err := st.Batch(ctx, func(ctx context.Context) error {
			for _, id := range order {
				if _, err := st.ApplyStructure(ctx, docs[id]); err != nil {
					return fmt.Errorf("document %s: %w", id, err)
				}
			}
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("scale scope: %w", err)
		}
	}
	if err := writeJSON(filepath.Join(dir, scopeInfoFile), map[string]string{"stamp": ScopeStamp}); err != nil {
		return false, fmt.Errorf("scale scope: %w", err)
	}
	logf("scope metadata written in %s", time.Since(t0).Round(time.Millisecond))
	return true, nil
}
