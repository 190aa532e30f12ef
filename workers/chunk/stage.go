package chunk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/chunking"
	"github.com/exocortex/exocortex/schemas"
)

// manifest is what the stage remembers of a document between changes.
type manifest struct {
	Version int64  `json:"version"`
	DocHash string `json:"doc_hash"`
	// Chunks are the document's current chunks, in order.
	Chunks []entry `json:"chunks"`
	// Removed are the chunks the last change tombstoned; a redelivery of that
	// change tombstones them again.
	Removed []entry `json:"removed,omitempty"`
	// Spans tells that the chunks were sent with their block spans. A
	// manifest written before block spans existed lacks it: the document's
	// next change re-sends every chunk (unchanged ones too), so that the
	// index gets their spans.
	Spans bool `json:"spans,omitempty"`
}

type entry struct {
	ID   string `json:"id"`
	Hash string `json:"hash"`
	// Meta fingerprints what a chunk carries besides its text (section path,
	// refs): a renamed heading changes it in every chunk below.
	Meta string `json:"meta,omitempty"`
}

func metaOf(p *chunking.Piece) string {
	h := sha256.New()
	h.Write([]byte(strings.Join(p.SectionPath, "\x1f")))
	h.Write([]byte{0x1e})
	h.Write([]byte(strings.Join(p.Refs, "\x1f")))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ManifestKey is the state key of a document's manifest: "chunks." and the
// doc id when it is made of [-_a-zA-Z0-9] only; otherwise the id with other
// runes replaced by '_' (at most 64 of them), '=' and 16 hex digits of its
// sha256, so that every key is a valid NATS KV key and ids do not collide.
func ManifestKey(docID string) string {
	const prefix = "chunks."
	safe := func(r rune) bool {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_'
	}
	if docID != "" && len(docID) <= 128 && strings.IndexFunc(docID, func(r rune) bool { return !safe(r) }) < 0 {
		return prefix + docID
	}
	var b strings.Builder
	b.WriteString(prefix)
	n := 0
	for _, r := range docID {
		if n == 64 {
			break
		}
		if safe(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		n++
	}
	sum := sha256.Sum256([]byte(docID))
	b.WriteByte('=')
	b.WriteString(hex.EncodeToString(sum[:8]))
	return b.String()
}

type handler struct {
	cfg   chunking.Config
	state bus.KV
}

// NewHandler returns the chunk stage's handler. For each schemas.DocChanged it
// returns a *schemas.ChunkCreated for every new or changed chunk (every
// chunk when the change is forced), a tombstone for every chunk that is
// gone, and then a *schemas.DocStructure; it keeps a manifest per document in
// state (see ManifestKey), saved with bus.Msg.OnPublished once the events are
// published. A change older than the
// manifest's version is dropped. A malformed payload is a permanent error; a
// state error is a plain one (retried).
//
// It panics when cfg is invalid or state is nil: both are wiring errors.
func NewHandler(cfg chunking.Config, state bus.KV) bus.Handler {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if state == nil {
		panic("chunk: NewHandler needs a state KV")
	}
	h := &handler{cfg: cfg, state: state}
	return bus.HandlerFunc(h.handle)
}

func (h *handler) handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	doc, err := bus.Decode[*schemas.DocChanged](m)
	if err != nil {
		return nil, err
	}
	// Every chunk repeats the title: a source that sent a longer one
	// (SiYuan's, a 1 MB title) must not make every chunk event that large.
	doc.BoundTitles()
	key := ManifestKey(doc.DocID)
	prev, err := h.load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("chunk doc %s: load manifest: %w", doc.DocID, err)
	}
	if prev != nil && doc.Version < prev.Version {
		return nil, nil // a stale redelivery: a newer version was chunked already
	}
	trace := m.TraceID
	if trace == "" {
		trace = doc.TraceID
	}
	if doc.Deleted {
		return h.deleted(m, doc, key, prev, trace), nil
	}
	pieces := chunking.Split(doc, h.cfg)
	next := &manifest{Version: doc.Version, DocHash: doc.Hash, Chunks: make([]entry, len(pieces)), Spans: true}
	for i := range pieces {
		next.Chunks[i] = entry{ID: pieces[i].ID, Hash: pieces[i].Hash, Meta: metaOf(&pieces[i])}
	}
	events := changes(doc, pieces, prev, next, m.Delivered > 1, trace)
	data, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("chunk doc %s: encode manifest: %w", doc.DocID, err)
	}
	// No state may claim work that was not handed on: the manifest is saved
	// once every event is published (acknowledged by JetStream). A publish
	// that fails, a crash or a full disk before that leaves the previous
	// manifest, and any resend of the change (a redelivery, a replayed dead
	// letter, a re-ingest) emits these chunks again.
	m.OnPublished(func(ctx context.Context) error {
		return h.save(ctx, key, doc, data)
	})
	return events, nil
}

// deleted is a deleted document's events: a tombstone for every chunk of
// its manifest, then its (empty) structure.
func (h *handler) deleted(m *bus.Msg, doc *schemas.DocChanged, key string, prev *manifest, trace string) []schemas.Event {
	var events []schemas.Event
	if prev != nil {
		for _, e := range prev.Chunks {
			events = append(events, tombstone(doc, e, trace))
		}
	}
	events = append(events, structure(doc, nil, trace))
	// The manifest goes once the tombstones are published: a deletion
	// that fails to publish is redone from the manifest.
	m.OnPublished(func(ctx context.Context) error {
		if err := h.state.Delete(ctx, key); err != nil {
			return fmt.Errorf("chunk doc %s: delete manifest: %w", doc.DocID, err)
		}
		return nil
	})
	return events
}

// changes is a changed document's events against its previous manifest
// prev: a ChunkCreated for every new or changed chunk, a tombstone for
// every chunk that is gone (recorded in next.Removed), then the
// document's structure. redelivered says the message came again.
func changes(doc *schemas.DocChanged, pieces []chunking.Piece, prev, next *manifest, redelivered bool, trace string) []schemas.Event {
	// The manifest is saved only after the events are published (see
	// handle), so what it lists was handed on. A redelivery of the change it
	// already holds (saved, but the ack was lost) emits everything again; the
	// bus's message ids drop what did get through. A forced change
	// (ingest --force) emits every chunk: the index may have lost some.
	replay := prev != nil && redelivered && prev.Version == doc.Version && prev.DocHash == doc.Hash
	known := map[string]entry{}
	var gone []entry
	if prev != nil {
		if replay {
			gone = prev.Removed
		} else {
			if prev.Spans && !doc.Force {
				for _, e := range prev.Chunks {
					known[e.ID] = e
				}
			}
			gone = prev.Chunks
		}
	}
	var events []schemas.Event
	current := make(map[string]bool, len(pieces))
	for i := range pieces {
		p := &pieces[i]
		current[p.ID] = true
		if old, ok := known[p.ID]; ok && old == next.Chunks[i] {
			continue
		}
		events = append(events, chunkCreated(doc, p, trace))
	}
	for _, e := range gone {
		if !current[e.ID] {
			events = append(events, tombstone(doc, e, trace))
			next.Removed = append(next.Removed, e)
		}
	}
	return append(events, structure(doc, pieces, trace))
}

// chunkCreated is the event of one new or changed chunk p of doc.
func chunkCreated(doc *schemas.DocChanged, p *chunking.Piece, trace string) *schemas.ChunkCreated {
	return &schemas.ChunkCreated{
		Envelope:    schemas.Envelope{TraceID: trace},
		ChunkID:     p.ID,
		DocID:       doc.DocID,
		DocVersion:  doc.Version,
		Ordinal:     p.Ordinal,
		Hash:        p.Hash,
		Text:        p.Text,
		SectionPath: p.SectionPath,
		Lang:        p.Lang,
		BlockIDs:    p.BlockIDs,
		BlockSpans:  p.BlockSpans,
		Refs:        p.Refs,
		Tokens:      p.Tokens,
	}
}

// save stores a document's manifest unless a newer change's manifest was
// saved meanwhile (two changes, or two resends, of one document handled at
// once). With a KV that has revisions it is a compare-and-set: the write
// succeeds only at the revision whose manifest was compared, else the
// manifest is read and compared again, so a stale manifest can never land
// over a newer one.
func (h *handler) save(ctx context.Context, key string, doc *schemas.DocChanged, data []byte) error {
	rkv, ok := h.state.(bus.RevKV)
	if !ok {
		cur, err := h.load(ctx, key)
		if err != nil {
			return fmt.Errorf("chunk doc %s: reload manifest: %w", doc.DocID, err)
		}
		if cur != nil && cur.Version > doc.Version {
			return nil
		}
		if err := h.state.Put(ctx, key, data); err != nil {
			return fmt.Errorf("chunk doc %s: save manifest: %w", doc.DocID, err)
		}
		return nil
	}
	for try := 0; ; try++ {
		raw, rev, err := rkv.GetRev(ctx, key)
		if err != nil {
			return fmt.Errorf("chunk doc %s: reload manifest: %w", doc.DocID, err)
		}
		var cur manifest
		if raw != nil && json.Unmarshal(raw, &cur) != nil {
			// Not a manifest (a large value kept aside, or a corrupt one):
			// read it whole to learn its version.
			if mf, err := h.load(ctx, key); err == nil && mf != nil {
				cur = *mf
			}
		}
		if raw != nil && cur.Version > doc.Version {
			return nil
		}
		saved, err := rkv.PutIf(ctx, key, data, rev)
		if errors.Is(err, bus.ErrTooLargeForRevision) {
			// A manifest over one message (tens of thousands of chunks)
			// cannot be compared-and-set; it is written as before.
			if err := h.state.Put(ctx, key, data); err != nil {
				return fmt.Errorf("chunk doc %s: save manifest: %w", doc.DocID, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("chunk doc %s: save manifest: %w", doc.DocID, err)
		}
		if saved {
			return nil
		}
		if try == 20 {
			return fmt.Errorf("chunk doc %s: save manifest: other writers kept changing it (%d tries)", doc.DocID, try+1)
		}
	}
}

// load returns the stored manifest, or nil when there is none. A manifest
// that does not decode counts as none: the document is then chunked afresh
// (its old chunks get no tombstones, but DocStructure.ChunkIDs still lists
// the current ones).
func (h *handler) load(ctx context.Context, key string) (*manifest, error) {
	data, err := h.state.Get(ctx, key)
	if err != nil || data == nil {
		return nil, err
	}
	var mf manifest
	if json.Unmarshal(data, &mf) != nil {
		return nil, nil
	}
	return &mf, nil
}

func tombstone(doc *schemas.DocChanged, e entry, trace string) *schemas.ChunkCreated {
	return &schemas.ChunkCreated{
		Envelope:   schemas.Envelope{TraceID: trace},
		ChunkID:    e.ID,
		DocID:      doc.DocID,
		DocVersion: doc.Version,
		Tombstone:  true,
		Hash:       e.Hash,
	}
}

// structure builds the document's DocStructure. A block's ChunkID is the
// first chunk that covers it; for a container split across chunks, the
// chunk of its first covered descendant; "" for a block without text.
func structure(doc *schemas.DocChanged, pieces []chunking.Piece, trace string) *schemas.DocStructure {
	ds := &schemas.DocStructure{
		Envelope:    schemas.Envelope{TraceID: trace},
		DocID:       doc.DocID,
		Source:      doc.Source,
		Path:        doc.Path,
		Notebook:    doc.Notebook,
		Title:       doc.Title,
		TitlePath:   slices.Clone(doc.TitlePath),
		ParentDocID: doc.ParentDocID,
		Hash:        doc.Hash,
		Version:     doc.Version,
		Deleted:     doc.Deleted,
		Meta:        doc.Meta,
		Report:      doc.Report || schemas.IsReportMeta(doc.Meta),
		// What a query's scope filters on.
		NotebookName: doc.NotebookName,
		Tags:         slices.Clone(doc.Tags),
		Updated:      doc.Updated,
		Created:      doc.Created,
	}
	if doc.Deleted {
		return ds
	}
	chunkOf := make(map[string]string)
	for _, p := range pieces {
		ds.ChunkIDs = append(ds.ChunkIDs, p.ID)
		for _, id := range p.BlockIDs {
			if _, ok := chunkOf[id]; !ok {
				chunkOf[id] = p.ID
			}
		}
	}
	index := make(map[string]int, len(doc.Blocks))
	parent := make([]int, len(doc.Blocks))
	ds.Blocks = make([]schemas.BlockNode, len(doc.Blocks))
	for i, b := range doc.Blocks {
		parent[i] = -1
		if p, ok := index[b.ParentID]; ok && b.ParentID != "" {
			parent[i] = p
		}
		if _, dup := index[b.ID]; !dup {
			index[b.ID] = i
		}
		ds.Blocks[i] = schemas.BlockNode{ID: b.ID, Type: b.Type, ParentID: b.ParentID,
			ChunkID: chunkOf[b.ID], Refs: slices.Clone(b.Refs)}
	}
	for i := range ds.Blocks {
		if chunkOf[ds.Blocks[i].ID] == "" {
			continue
		}
		for p := parent[i]; p >= 0 && ds.Blocks[p].ChunkID == ""; p = parent[p] {
			ds.Blocks[p].ChunkID = ds.Blocks[i].ChunkID
		}
	}
	return ds
}
