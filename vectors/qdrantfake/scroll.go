package qdrantfake

import (
	"context"
	"sort"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/protobuf/proto"
)

// Scroll pages through a collection's points in id order, as Qdrant does:
// from Offset (inclusive) up to Limit points (default 10), with their
// payloads and no vectors, and the id the next page starts at; with a
// filter, only the points it matches (the conditions Query supports).
func (s *points) Scroll(_ context.Context, req *qdrant.ScrollPoints) (*qdrant.ScrollResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(c.points))
	for k, p := range c.points {
		ok, err := matches(req.GetFilter(), p)
		if err != nil {
			return nil, err
		}
		if ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	i := 0
	if req.Offset != nil {
		from, err := idKey(req.GetOffset())
		if err != nil {
			return nil, err
		}
		i = sort.SearchStrings(keys, from)
	}
	limit := int(req.GetLimit())
	if req.Limit == nil {
		limit = 10
	}
	resp := &qdrant.ScrollResponse{}
	for ; i < len(keys) && len(resp.Result) < limit; i++ {
		p := c.points[keys[i]]
		resp.Result = append(resp.Result, &qdrant.RetrievedPoint{Id: proto.Clone(p.id).(*qdrant.PointId),
			Payload: selectPayload(p.payload, req.GetWithPayload())})
	}
	if i < len(keys) {
		resp.NextPageOffset = proto.Clone(c.points[keys[i]].id).(*qdrant.PointId)
	}
	return resp, nil
}
