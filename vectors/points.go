package vectors

import (
	"context"
	"sort"

	"github.com/qdrant/go-client/qdrant"
)

// PointRef is a stored point without its vector: what exocortex check
// compares with the index.
type PointRef struct {
	ID    string // chunk id
	DocID string
	// Lexical says whether the point's lexical vector and passage are
	// current, on a store that searches lexically (Qdrant with its sparse
	// vector); LexicalCurrent elsewhere.
	Lexical LexicalState
	// LexFormat is the LexicalFormat the point was written in (0: none).
	LexFormat int
}

// LexicalState is how a stored point's lexical part compares with what the
// index stage writes now.
type LexicalState uint8

const (
	LexicalCurrent  LexicalState = iota // of the current LexicalFormat (or not kept by the store)
	LexicalMissing                      // no lexical vector nor passage (written before lexical search on Qdrant)
	LexicalOutdated                     // an older LexicalFormat
)

// Lister is a store that can list its points (both implementations can).
type Lister interface {
	Points(ctx context.Context) ([]PointRef, error)
}

// Points lists every live point, sorted by id.
func (e *Embedded) Points(ctx context.Context) ([]PointRef, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, e.errorf("points: %w", ErrClosed)
	}
	out := make([]PointRef, 0, len(e.byID))
	for id, node := range e.byID {
		ref := PointRef{ID: id}
		if d := e.docOf[node]; int(d) < len(e.docs) {
			ref.DocID = e.docs[d].name
		}
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Points lists every point of the collection (scrolled in pages, payload
// only), sorted by id. On a collection with the lexical sparse vector, each
// point's Lexical state comes from its lex_format and, for the points
// without the current format, a second scroll of the points whose passage
// is empty (those have no lexical vector either: the index stage writes
// both or neither).
func (q *Qdrant) Points(ctx context.Context) ([]PointRef, error) {
	var out []PointRef
	outdated := 0
	err := q.scroll(ctx, nil, []string{payloadChunkID, payloadDocID, payloadLexFormat}, func(p *qdrant.RetrievedPoint) {
		pl := p.GetPayload()
		ref := PointRef{ID: pl[payloadChunkID].GetStringValue(), DocID: pl[payloadDocID].GetStringValue(),
			LexFormat: int(pl[payloadLexFormat].GetIntegerValue())}
		if q.lexical && ref.LexFormat != LexicalFormat {
			ref.Lexical = LexicalOutdated
			outdated++
		}
		out = append(out, ref)
	})
	if err != nil {
		return nil, q.errorf("list points: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if outdated == 0 {
		return out, nil
	}
	empty := &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewIsEmpty(payloadPassage)}}
	err = q.scroll(ctx, empty, []string{payloadChunkID}, func(p *qdrant.RetrievedPoint) {
		id := p.GetPayload()[payloadChunkID].GetStringValue()
		i := sort.Search(len(out), func(i int) bool { return out[i].ID >= id })
		if i < len(out) && out[i].ID == id {
			out[i].Lexical = LexicalMissing
		}
	})
	if err != nil {
		return nil, q.errorf("list points without a passage: %w", err)
	}
	return out, nil
}

// scroll pages through the points the filter matches (every point when
// nil) with the payload fields given, and no vectors.
func (q *Qdrant) scroll(ctx context.Context, filter *qdrant.Filter, fields []string, each func(*qdrant.RetrievedPoint)) error {
	var offset *qdrant.PointId
	for {
		pts, next, err := q.client.ScrollAndOffset(ctx, &qdrant.ScrollPoints{
			CollectionName: q.cfg.Collection,
			Filter:         filter,
			Offset:         offset,
			Limit:          qdrant.PtrOf(uint32(1000)),
			WithPayload:    qdrant.NewWithPayloadInclude(fields...),
			WithVectors:    qdrant.NewWithVectors(false),
		})
		if err != nil {
			return err
		}
		for _, p := range pts {
			each(p)
		}
		if next == nil || len(pts) == 0 {
			return nil
		}
		offset = next
	}
}
