package qdrantfake

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func client(t *testing.T, s *Server) *qdrant.Client {
	t.Helper()
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: port(t, s), SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func port(t *testing.T, s *Server) int {
	t.Helper()
	_, p, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestHealthCheckReportsAVersion(t *testing.T) {
	c := client(t, start(t))
	reply, err := c.HealthCheck(context.Background())
	if err != nil || reply.GetVersion() != Version {
		t.Fatalf("HealthCheck = %v, %v", reply, err)
	}
}

func TestUnsupportedCallsAreUnimplemented(t *testing.T) {
	ctx := context.Background()
	s := start(t)
	c := client(t, s)
	if err := c.CreateCollection(ctx, &qdrant.CreateCollection{
		CollectionName: "c",
		VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine}),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Points: []*qdrant.PointStruct{
		{Id: qdrant.NewIDNum(1), Vectors: qdrant.NewVectorsDense([]float32{1, 0})}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Scroll(ctx, &qdrant.ScrollPoints{CollectionName: "c",
		Filter: &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewGeoRadius("at", 52.5, 13.4, 1000)}}})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("Scroll with a geo filter: %v, want Unimplemented", err)
	}
	_, err = c.Delete(ctx, &qdrant.DeletePoints{CollectionName: "c", Points: qdrant.NewPointsSelectorFilter(&qdrant.Filter{})})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("delete by filter: %v, want Unimplemented", err)
	}
}

func TestQueryIsExactCosineWithFilters(t *testing.T) {
	ctx := context.Background()
	s := start(t)
	c := client(t, s)
	if err := c.CreateCollection(ctx, &qdrant.CreateCollection{
		CollectionName: "c",
		VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine}),
	}); err != nil {
		t.Fatal(err)
	}
	pt := func(n uint64, x, y float32, lang string) *qdrant.PointStruct {
		return &qdrant.PointStruct{Id: qdrant.NewIDNum(n), Vectors: qdrant.NewVectorsDense([]float32{x, y}),
			Payload: qdrant.NewValueMap(map[string]any{"lang": lang})}
	}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Points: []*qdrant.PointStruct{
		pt(1, 1, 0, "en"), pt(2, 3, 3, "ru"), pt(3, 0, 2, "en"),
	}}); err != nil {
		t.Fatal(err)
	}
	hits, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: "c", Query: qdrant.NewQueryDense([]float32{2, 0}),
		Filter: &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("lang", "en")}},
		Params: &qdrant.SearchParams{HnswEf: qdrant.PtrOf(uint64(77))}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].GetId().GetNum() != 1 || hits[0].GetScore() != 1 || hits[1].GetScore() != 0 {
		t.Fatalf("hits = %v", hits)
	}
	if efs := s.QueryEfs(); len(efs) != 1 || efs[0] != 77 {
		t.Fatalf("QueryEfs = %v", efs)
	}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Points: []*qdrant.PointStruct{pt(4, 1, 2, "en")}}); err != nil {
		t.Fatal(err)
	}
	bad := &qdrant.PointStruct{Id: qdrant.NewIDNum(5), Vectors: qdrant.NewVectorsDense([]float32{1, 2, 3})}
	if _, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Points: []*qdrant.PointStruct{bad}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("wrong dimension upsert: %v", err)
	}
	if n := s.PointCount("c"); n != 4 {
		t.Fatalf("PointCount = %d", n)
	}
}

func TestScrollFiltersByIsEmptyAndHasVector(t *testing.T) {
	ctx := context.Background()
	s := start(t)
	c := client(t, s)
	if err := c.CreateCollection(ctx, &qdrant.CreateCollection{
		CollectionName:      "c",
		VectorsConfig:       qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine}),
		SparseVectorsConfig: qdrant.NewSparseVectorsConfig(map[string]*qdrant.SparseVectorParams{"lex": {}}),
	}); err != nil {
		t.Fatal(err)
	}
	dense := []float32{1, 0}
	withLex := qdrant.NewVectorsMap(map[string]*qdrant.Vector{"": qdrant.NewVectorDense(dense), "lex": qdrant.NewVectorSparse([]uint32{1}, []float32{1})})
	_, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "c", Points: []*qdrant.PointStruct{
		{Id: qdrant.NewIDNum(1), Vectors: withLex, Payload: qdrant.NewValueMap(map[string]any{"p": "text"})},
		{Id: qdrant.NewIDNum(2), Vectors: qdrant.NewVectorsDense(dense), Payload: qdrant.NewValueMap(map[string]any{"p": nil})},
		{Id: qdrant.NewIDNum(3), Vectors: qdrant.NewVectorsDense(dense), Payload: qdrant.NewValueMap(map[string]any{"p": []any{}})},
		{Id: qdrant.NewIDNum(4), Vectors: qdrant.NewVectorsDense(dense)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(f *qdrant.Filter) []uint64 {
		t.Helper()
		pts, err := c.Scroll(ctx, &qdrant.ScrollPoints{CollectionName: "c", Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, p := range pts {
			out = append(out, p.GetId().GetNum())
		}
		return out
	}
	if got := ids(&qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewIsEmpty("p")}}); !slices.Equal(got, []uint64{2, 3, 4}) {
		t.Errorf("is_empty p: %v, want 2 3 4 (null, empty list, missing)", got)
	}
	if got := ids(&qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewHasVector("lex")}}); !slices.Equal(got, []uint64{1}) {
		t.Errorf("has_vector lex: %v, want 1", got)
	}
	if got := ids(&qdrant.Filter{MustNot: []*qdrant.Condition{qdrant.NewHasVector("lex")}}); !slices.Equal(got, []uint64{2, 3, 4}) {
		t.Errorf("must_not has_vector lex: %v, want 2 3 4", got)
	}
}
