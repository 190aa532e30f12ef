// Package qdrantfake is an in-process Qdrant for tests: a gRPC server on
// 127.0.0.1 speaking the real Qdrant protobuf API (the Qdrant health check,
// and the Collections and Points services) over an in-memory map, with exact
// cosine search.
//
// It implements what the vectors package's Qdrant store calls: collection
// create / get / exists / list / delete, upsert, delete by ids, get by ids,
// count, query (nearest by the unnamed dense vector, or by a named sparse
// vector, with a filter of keyword matches, has_id, is_empty and
// has_vector), scroll (with such a filter), and keyword payload indexes.
// Anything else answers codes.Unimplemented.
//
// Sparse search is exact and scores as Qdrant does: the dot product over
// the indices the query and the point share; with the IDF modifier each
// query value is multiplied by ln(1 + (N - n + 0.5)/(n + 0.5)), N the
// points of the collection (Qdrant's available point count) and n those
// whose sparse vector holds the index (over the whole collection, whatever
// the filter). Only points that
// share an index with the query are returned.
// It records the CreateCollection and CreateFieldIndex requests and each
// query's hnsw_ef so tests can check what the client asked for.
package qdrantfake

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sync"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Version is what the fake's health check reports.
const Version = "1.17.0"

// Server is a running fake.
type Server struct {
	lis  net.Listener
	grpc *grpc.Server
	st   *state
}

type state struct {
	mu          sync.Mutex
	collections map[string]*collection
	creates     []*qdrant.CreateCollection
	indexes     []*qdrant.CreateFieldIndexCollection
	efs         []uint64
}

type collection struct {
	req     *qdrant.CreateCollection
	size    uint64
	sparse  map[string]*qdrant.SparseVectorParams // named sparse vectors
	points  map[string]*point                     // by point id
	indexes map[string]qdrant.FieldType
}

type point struct {
	id      *qdrant.PointId
	vec     []float32 // normalised, as Qdrant stores vectors of a Cosine collection
	sparse  map[string]map[uint32]float32
	payload map[string]*qdrant.Value
}

// Start listens on 127.0.0.1 (a free port) and serves until Close.
func Start() (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("qdrantfake: listen: %w", err)
	}
	st := &state{collections: map[string]*collection{}}
	gs := grpc.NewServer()
	qdrant.RegisterQdrantServer(gs, &health{})
	qdrant.RegisterCollectionsServer(gs, &collections{st: st})
	qdrant.RegisterPointsServer(gs, &points{st: st})
	s := &Server{lis: lis, grpc: gs, st: st}
	go gs.Serve(lis)
	return s, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops the server at once.
func (s *Server) Close() { s.grpc.Stop() }

// CreateRequests returns copies of the CreateCollection requests received.
func (s *Server) CreateRequests() []*qdrant.CreateCollection {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return cloneAll(s.st.creates)
}

// FieldIndexRequests returns copies of the CreateFieldIndex requests received.
func (s *Server) FieldIndexRequests() []*qdrant.CreateFieldIndexCollection {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return cloneAll(s.st.indexes)
}

// QueryEfs returns the hnsw_ef of each query received, in order; 0 when a
// query set none.
func (s *Server) QueryEfs() []uint64 {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return slices.Clone(s.st.efs)
}

// PointCount is the number of points in a collection, -1 if it is missing.
func (s *Server) PointCount(name string) int {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	c, ok := s.st.collections[name]
	if !ok {
		return -1
	}
	return len(c.points)
}

func cloneAll[T proto.Message](in []T) []T {
	out := make([]T, len(in))
	for i, m := range in {
		out[i] = proto.Clone(m).(T)
	}
	return out
}

func (st *state) get(name string) (*collection, error) {
	c, ok := st.collections[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

type health struct {
	qdrant.UnimplementedQdrantServer
}

func (*health) HealthCheck(context.Context, *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	return &qdrant.HealthCheckReply{Title: "qdrantfake", Version: Version}, nil
}

type collections struct {
	qdrant.UnimplementedCollectionsServer
	st *state
}

func (s *collections) Create(_ context.Context, req *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.creates = append(st.creates, proto.Clone(req).(*qdrant.CreateCollection))
	if _, ok := st.collections[req.GetCollectionName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Wrong input: Collection `%s` already exists!", req.GetCollectionName())
	}
	params := req.GetVectorsConfig().GetParams()
	if params == nil || params.GetSize() == 0 {
		return nil, status.Error(codes.InvalidArgument, "qdrantfake: only one unnamed dense vector per point is supported")
	}
	sparse := map[string]*qdrant.SparseVectorParams{}
	for name, p := range req.GetSparseVectorsConfig().GetMap() {
		if name == "" {
			return nil, status.Error(codes.InvalidArgument, "Wrong input: sparse vector name must not be empty")
		}
		sparse[name] = proto.Clone(p).(*qdrant.SparseVectorParams)
	}
	st.collections[req.GetCollectionName()] = &collection{
		req:     proto.Clone(req).(*qdrant.CreateCollection),
		size:    params.GetSize(),
		sparse:  sparse,
		points:  map[string]*point{},
		indexes: map[string]qdrant.FieldType{},
	}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (s *collections) Get(_ context.Context, req *qdrant.GetCollectionInfoRequest) (*qdrant.GetCollectionInfoResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	schema := map[string]*qdrant.PayloadSchemaInfo{}
	for field, ft := range c.indexes {
		switch ft {
		case qdrant.FieldType_FieldTypeKeyword:
			schema[field] = &qdrant.PayloadSchemaInfo{DataType: qdrant.PayloadSchemaType_Keyword, Points: qdrant.PtrOf(uint64(len(c.points)))}
		case qdrant.FieldType_FieldTypeInteger:
			schema[field] = &qdrant.PayloadSchemaInfo{DataType: qdrant.PayloadSchemaType_Integer, Points: qdrant.PtrOf(uint64(len(c.points)))}
		}
	}
	n := uint64(len(c.points))
	return &qdrant.GetCollectionInfoResponse{Result: &qdrant.CollectionInfo{
		Status:        qdrant.CollectionStatus_Green,
		SegmentsCount: 1,
		Config: &qdrant.CollectionConfig{
			Params: &qdrant.CollectionParams{ShardNumber: 1, VectorsConfig: c.req.GetVectorsConfig(),
				SparseVectorsConfig: c.req.GetSparseVectorsConfig()},
			HnswConfig:         c.req.GetHnswConfig(),
			QuantizationConfig: c.req.QuantizationConfig,
		},
		PayloadSchema: schema,
		PointsCount:   &n,
	}}, nil
}

func (s *collections) List(context.Context, *qdrant.ListCollectionsRequest) (*qdrant.ListCollectionsResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	resp := &qdrant.ListCollectionsResponse{}
	for _, name := range slices.Sorted(maps.Keys(st.collections)) {
		resp.Collections = append(resp.Collections, &qdrant.CollectionDescription{Name: name})
	}
	return resp, nil
}

func (s *collections) CollectionExists(_ context.Context, req *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.collections[req.GetCollectionName()]
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: ok}}, nil
}

func (s *collections) Delete(_ context.Context, req *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.collections[req.GetCollectionName()]
	delete(st.collections, req.GetCollectionName())
	return &qdrant.CollectionOperationResponse{Result: ok}, nil
}

type points struct {
	qdrant.UnimplementedPointsServer
	st *state
}

func completed() *qdrant.PointsOperationResponse {
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}
}

// idKey is a map key for a point id; Qdrant accepts a UUID or an unsigned
// integer.
func idKey(id *qdrant.PointId) (string, error) {
	switch v := id.GetPointIdOptions().(type) {
	case *qdrant.PointId_Uuid:
		return "u:" + v.Uuid, nil
	case *qdrant.PointId_Num:
		return fmt.Sprintf("n:%d", v.Num), nil
	}
	return "", status.Error(codes.InvalidArgument, "point id is neither a UUID nor a number")
}

func denseOf(v *qdrant.Vector) []float32 {
	if d := v.GetDense(); d != nil {
		return d.GetData()
	}
	return v.GetData()
}

func (s *points) Upsert(_ context.Context, req *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	staged := make(map[string]*point, len(req.GetPoints()))
	for _, p := range req.GetPoints() {
		key, err := idKey(p.GetId())
		if err != nil {
			return nil, err
		}
		pt := &point{id: proto.Clone(p.GetId()).(*qdrant.PointId), payload: clonePayload(p.GetPayload())}
		var vec []float32
		if named := p.GetVectors().GetVectors(); named != nil {
			for name, v := range named.GetVectors() {
				if name == "" {
					vec = denseOf(v)
					continue
				}
				if _, ok := c.sparse[name]; !ok {
					return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", name)
				}
				sv, err := sparseOf(v.GetSparse())
				if err != nil {
					return nil, err
				}
				if pt.sparse == nil {
					pt.sparse = map[string]map[uint32]float32{}
				}
				pt.sparse[name] = sv
			}
		} else {
			vec = denseOf(p.GetVectors().GetVector())
		}
		if uint64(len(vec)) != c.size {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.size, len(vec))
		}
		pt.vec = normalized(vec)
		staged[key] = pt
	}
	for k, p := range staged {
		c.points[k] = p
	}
	return completed(), nil
}

func (s *points) Delete(_ context.Context, req *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	ids := req.GetPoints().GetPoints()
	if ids == nil {
		return nil, status.Error(codes.Unimplemented, "qdrantfake: delete supports only a list of ids")
	}
	for _, id := range ids.GetIds() {
		key, err := idKey(id)
		if err != nil {
			return nil, err
		}
		delete(c.points, key)
	}
	return completed(), nil
}

func (s *points) CreateFieldIndex(_ context.Context, req *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.indexes = append(st.indexes, proto.Clone(req).(*qdrant.CreateFieldIndexCollection))
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if req.FieldType == nil {
		return nil, status.Error(codes.InvalidArgument, "qdrantfake: field index needs a field type")
	}
	c.indexes[req.GetFieldName()] = req.GetFieldType()
	return completed(), nil
}

func (s *points) Count(_ context.Context, req *qdrant.CountPoints) (*qdrant.CountResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	n := 0
	for _, p := range c.points {
		ok, err := matches(req.GetFilter(), p)
		if err != nil {
			return nil, err
		}
		if ok {
			n++
		}
	}
	return &qdrant.CountResponse{Result: &qdrant.CountResult{Count: uint64(n)}}, nil
}

func (s *points) Query(_ context.Context, req *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.efs = append(st.efs, req.GetParams().GetHnswEf())
	c, err := st.get(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if len(req.GetPrefetch()) > 0 {
		return nil, status.Error(codes.Unimplemented, "qdrantfake: prefetch is not supported")
	}
	if req.GetUsing() != "" {
		return querySparse(c, req)
	}
	q := req.GetQuery().GetNearest().GetDense().GetData()
	if q == nil {
		return nil, status.Error(codes.Unimplemented, "qdrantfake: only nearest queries by a dense vector are supported")
	}
	if uint64(len(q)) != c.size {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.size, len(q))
	}
	q = normalized(q)
	var hits []*qdrant.ScoredPoint
	for _, p := range c.points {
		ok, err := matches(req.GetFilter(), p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		var dot float64
		for i := range q {
			dot += float64(q[i]) * float64(p.vec[i])
		}
		hits = append(hits, scored(p, req.GetWithPayload(), dot))
	}
	return &qdrant.QueryResponse{Result: page(hits, req)}, nil
}

// page sorts hits best first (ties by id) and cuts the page the request
// asks for.
func page(hits []*qdrant.ScoredPoint, req *qdrant.QueryPoints) []*qdrant.ScoredPoint {
	slices.SortFunc(hits, func(a, b *qdrant.ScoredPoint) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.GetId().String(), b.GetId().String())
	})
	limit := uint64(10)
	if req.Limit != nil {
		limit = req.GetLimit()
	}
	off := min(req.GetOffset(), uint64(len(hits)))
	hits = hits[off:]
	return hits[:min(limit, uint64(len(hits)))]
}

// matches evaluates the filter subset the fake supports: keyword matches
// (match, match any, match except) on string payload fields, has_id,
// is_empty, has_vector, and nested filters, under must, should and
// must_not.
func matches(f *qdrant.Filter, p *point) (bool, error) {
	if f == nil {
		return true, nil
	}
	for _, c := range f.GetMust() {
		ok, err := condition(c, p)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, c := range f.GetMustNot() {
		ok, err := condition(c, p)
		if err != nil || ok {
			return false, err
		}
	}
	if len(f.GetShould()) == 0 {
		return true, nil
	}
	for _, c := range f.GetShould() {
		ok, err := condition(c, p)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func condition(c *qdrant.Condition, p *point) (bool, error) {
	switch v := c.GetConditionOneOf().(type) {
	case *qdrant.Condition_Field:
		return field(v.Field, p)
	case *qdrant.Condition_IsEmpty:
		// Missing, null or an empty list, as Qdrant's is_empty.
		val, ok := p.payload[v.IsEmpty.GetKey()]
		if !ok {
			return true, nil
		}
		switch k := val.GetKind().(type) {
		case *qdrant.Value_NullValue:
			return true, nil
		case *qdrant.Value_ListValue:
			return len(k.ListValue.GetValues()) == 0, nil
		}
		return false, nil
	case *qdrant.Condition_HasVector:
		name := v.HasVector.GetHasVector()
		if name == "" {
			return true, nil
		}
		_, ok := p.sparse[name]
		return ok, nil
	case *qdrant.Condition_HasId:
		for _, id := range v.HasId.GetHasId() {
			if proto.Equal(id, p.id) {
				return true, nil
			}
		}
		return false, nil
	case *qdrant.Condition_Filter:
		return matches(v.Filter, p)
	}
	return false, status.Errorf(codes.Unimplemented, "qdrantfake: unsupported condition %v", c)
}

// scored is p as a query hit with score, its payload as the query selects.
func scored(p *point, sel *qdrant.WithPayloadSelector, score float64) *qdrant.ScoredPoint {
	return &qdrant.ScoredPoint{
		Id:      proto.Clone(p.id).(*qdrant.PointId),
		Payload: selectPayload(p.payload, sel),
		Score:   float32(score),
		Version: 1,
	}
}

func selectPayload(pl map[string]*qdrant.Value, sel *qdrant.WithPayloadSelector) map[string]*qdrant.Value {
	out := map[string]*qdrant.Value{}
	switch {
	case sel == nil:
		return nil
	case sel.GetInclude() != nil:
		for _, k := range sel.GetInclude().GetFields() {
			if v, ok := pl[k]; ok {
				out[k] = proto.Clone(v).(*qdrant.Value)
			}
		}
	case sel.GetExclude() != nil:
		for k, v := range pl {
			if !slices.Contains(sel.GetExclude().GetFields(), k) {
				out[k] = proto.Clone(v).(*qdrant.Value)
			}
		}
	case sel.GetEnable():
		return clonePayload(pl)
	default:
		return nil
	}
	return out
}

func clonePayload(pl map[string]*qdrant.Value) map[string]*qdrant.Value {
	out := make(map[string]*qdrant.Value, len(pl))
	for k, v := range pl {
		out[k] = proto.Clone(v).(*qdrant.Value)
	}
	return out
}

func normalized(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if ss == 0 {
		return out
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// CollectionNames lists the collections, sorted.
func (s *Server) CollectionNames() []string {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return slices.Sorted(maps.Keys(s.st.collections))
}
