package qdrantfake

import (
	"context"
	"maps"
	"math"
	"slices"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// sparseOf checks a sparse vector as Qdrant does (as many values as
// indices, no index twice) and returns it as a map.
func sparseOf(v *qdrant.SparseVector) (map[uint32]float32, error) {
	if v == nil {
		return nil, status.Error(codes.InvalidArgument, "Wrong input: expected a sparse vector")
	}
	idx, vals := v.GetIndices(), v.GetValues()
	if len(idx) != len(vals) {
		return nil, status.Errorf(codes.InvalidArgument, "Validation error: indices and values must have the same length (%d, %d)", len(idx), len(vals))
	}
	out := make(map[uint32]float32, len(idx))
	for i, id := range idx {
		if _, dup := out[id]; dup {
			return nil, status.Error(codes.InvalidArgument, "Validation error: indices must be unique")
		}
		out[id] = vals[i]
	}
	return out, nil
}

// IDF is Qdrant's inverse document frequency of an index held by n of N
// points: ln(1 + (N - n + 0.5)/(n + 0.5)).
func IDF(n, N int) float64 {
	return math.Log(1 + (float64(N)-float64(n)+0.5)/(float64(n)+0.5))
}

// querySparse answers a nearest query on the named sparse vector req.Using.
func querySparse(c *collection, req *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	name := req.GetUsing()
	params, ok := c.sparse[name]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", name)
	}
	q, err := sparseOf(req.GetQuery().GetNearest().GetSparse())
	if err != nil {
		return nil, err
	}
	weight := map[uint32]float64{}
	for id, v := range q {
		weight[id] = float64(v)
	}
	if params.GetModifier() == qdrant.Modifier_Idf {
		// N is every point of the collection (Qdrant's available point
		// count, summed over segments), not only those holding the vector.
		total, df := len(c.points), map[uint32]int{}
		for _, p := range c.points {
			sv, ok := p.sparse[name]
			if !ok {
				continue
			}
			for id := range q {
				if _, ok := sv[id]; ok {
					df[id]++
				}
			}
		}
		for id := range weight {
			weight[id] *= IDF(df[id], total)
		}
	}
	var hits []*qdrant.ScoredPoint
	for _, p := range c.points {
		sv, ok := p.sparse[name]
		if !ok {
			continue
		}
		var score float64
		shared := false
		for id, w := range weight {
			if v, ok := sv[id]; ok {
				shared = true
				score += w * float64(v)
			}
		}
		if !shared {
			continue
		}
		ok, err := matches(req.GetFilter(), p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		hits = append(hits, scored(p, req.GetWithPayload(), score))
	}
	return &qdrant.QueryResponse{Result: page(hits, req)}, nil
}

// Get returns the points with the given ids that exist, in the order asked,
// with the payload selected, and their vectors when asked (all of them: a
// point with a sparse vector as named vectors, the dense one under "").
func (s *points) Get(_ context.Context, req *qdrant.GetPoints) (*qdrant.GetResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	resp := &qdrant.GetResponse{}
	for _, id := range req.GetIds() {
		key, err := idKey(id)
		if err != nil {
			return nil, err
		}
		p, ok := c.points[key]
		if !ok {
			continue
		}
		rp := &qdrant.RetrievedPoint{
			Id:      proto.Clone(p.id).(*qdrant.PointId),
			Payload: selectPayload(p.payload, req.GetWithPayload()),
		}
		if req.GetWithVectors().GetEnable() {
			rp.Vectors = vectorsOutput(p)
		}
		resp.Result = append(resp.Result, rp)
	}
	return resp, nil
}

func vectorsOutput(p *point) *qdrant.VectorsOutput {
	dense := &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Dense{Dense: &qdrant.DenseVector{Data: slices.Clone(p.vec)}}}
	if len(p.sparse) == 0 {
		return &qdrant.VectorsOutput{VectorsOptions: &qdrant.VectorsOutput_Vector{Vector: dense}}
	}
	named := map[string]*qdrant.VectorOutput{"": dense}
	for name, sv := range p.sparse {
		out := &qdrant.SparseVector{}
		for _, id := range slices.Sorted(maps.Keys(sv)) {
			out.Indices = append(out.Indices, id)
			out.Values = append(out.Values, sv[id])
		}
		named[name] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Sparse{Sparse: out}}
	}
	return &qdrant.VectorsOutput{VectorsOptions: &qdrant.VectorsOutput_Vectors{Vectors: &qdrant.NamedVectorsOutput{Vectors: named}}}
}
