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
}

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
// only), sorted by id.
func (q *Qdrant) Points(ctx context.Context) ([]PointRef, error) {
	var out []PointRef
	var offset *qdrant.PointId
	for {
		pts, next, err := q.client.ScrollAndOffset(ctx, &qdrant.ScrollPoints{
			CollectionName: q.cfg.Collection,
			Offset:         offset,
			Limit:          qdrant.PtrOf(uint32(1000)),
			WithPayload:    qdrant.NewWithPayloadInclude(payloadChunkID, payloadDocID),
			WithVectors:    qdrant.NewWithVectors(false),
		})
		if err != nil {
			return nil, q.errorf("list points: %w", err)
		}
		for _, p := range pts {
			pl := p.GetPayload()
			out = append(out, PointRef{ID: pl[payloadChunkID].GetStringValue(), DocID: pl[payloadDocID].GetStringValue()})
		}
		if next == nil || len(pts) == 0 {
			break
		}
		offset = next
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
