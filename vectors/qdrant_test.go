package vectors_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"

	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/vectors/qdrantfake"
	"github.com/exocortex/exocortex/vectors/storetest"
)

func startFake(t *testing.T) *qdrantfake.Server {
	t.Helper()
	srv, err := qdrantfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func openQdrant(t *testing.T, addr, collection string, dim int) *vectors.Qdrant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: dim, Qdrant: vectors.QdrantConfig{Addr: addr, Collection: collection}})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*vectors.Qdrant)
}

func TestQdrantContract(t *testing.T) {
	srv := startFake(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) vectors.Store {
		return openQdrant(t, srv.Addr(), fmt.Sprintf("contract_%d", n.Add(1)), 64)
	})
}

// TestIntegrationQdrant runs the contract against a real Qdrant at
// EXOCORTEX_QDRANT_ADDR (host:gRPC port), in throwaway collections.
func TestIntegrationQdrant(t *testing.T) {
	addr := os.Getenv("EXOCORTEX_QDRANT_ADDR")
	if addr == "" {
		t.Skip("set EXOCORTEX_QDRANT_ADDR=host:6334 to run against a real Qdrant")
	}
	prefix := fmt.Sprintf("exocortex_test_%d", time.Now().UnixNano())
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) vectors.Store {
		name := fmt.Sprintf("%s_%d", prefix, n.Add(1))
		s := openQdrant(t, addr, name, 64)
		t.Cleanup(func() {
			c, err := qdrant.NewClient(&qdrant.Config{Host: strings.Split(addr, ":")[0], SkipCompatibilityCheck: true})
			if err == nil {
				c.DeleteCollection(context.Background(), name)
				c.Close()
			}
		})
		return s
	})
}

func TestQdrantCreatesTheCollectionAsSpecified(t *testing.T) {
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "", 384)
	defer s.Close()

	creates := srv.CreateRequests()
	if len(creates) != 1 {
		t.Fatalf("%d CreateCollection requests, want 1", len(creates))
	}
	c := creates[0]
	if c.GetCollectionName() != vectors.DefaultCollection {
		t.Errorf("collection %q, want the default %q", c.GetCollectionName(), vectors.DefaultCollection)
	}
	vp := c.GetVectorsConfig().GetParams()
	if vp.GetSize() != 384 || vp.GetDistance() != qdrant.Distance_Cosine {
		t.Errorf("vectors %v, want size 384, Cosine", vp)
	}
	sq := c.GetQuantizationConfig().GetScalar()
	if sq.GetType() != qdrant.QuantizationType_Int8 || !sq.GetAlwaysRam() || sq.GetQuantile() != 0.99 {
		t.Errorf("quantization %v, want int8, always_ram, quantile 0.99", c.GetQuantizationConfig())
	}
	if h := c.GetHnswConfig(); h.GetM() != 16 || h.GetEfConstruct() != 100 {
		t.Errorf("hnsw %v, want m=16, ef_construct=100", h)
	}
	indexed := map[string]qdrant.FieldType{}
	for _, r := range srv.FieldIndexRequests() {
		indexed[r.GetFieldName()] = r.GetFieldType()
		if r.FieldType == nil || !r.GetWait() {
			t.Errorf("field index request %v should name a type and wait", r)
		}
	}
	kw, integer := qdrant.FieldType_FieldTypeKeyword, qdrant.FieldType_FieldTypeInteger
	want := map[string]qdrant.FieldType{"lang": kw, "doc_id": kw, "notebook": kw, "dirs": kw, "tags": kw, "time": integer}
	if fmt.Sprint(indexed) != fmt.Sprint(want) {
		t.Errorf("payload indexes %v, want %v", indexed, want)
	}
}

func TestQdrantReopensAnExistingCollection(t *testing.T) {
	ctx := context.Background()
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "reopen", 8)
	pts := []vectors.Point{
		{ID: "a.md:1", DocID: "a.md", Lang: "en", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}},
		{ID: "a.md:2", DocID: "a.md", Lang: "ru", Vector: []float32{0, 1, 0, 0, 0, 0, 0, 0}},
	}
	if err := s.Upsert(ctx, pts); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openQdrant(t, srv.Addr(), "reopen", 8)
	defer s.Close()
	if n := len(srv.CreateRequests()); n != 1 {
		t.Errorf("%d CreateCollection requests after reopening, want 1", n)
	}
	if n := len(srv.FieldIndexRequests()); n != 6 {
		t.Errorf("%d field index requests after reopening, want the first 6 only", n)
	}
	if n, err := s.Count(ctx); err != nil || n != 2 {
		t.Fatalf("Count after reopening = %d, %v", n, err)
	}
	res, err := s.Search(ctx, pts[1].Vector, vectors.SearchOptions{K: 1})
	if err != nil || len(res) != 1 || res[0] != (vectors.Result{ID: "a.md:2", DocID: "a.md", Score: 1}) {
		t.Fatalf("Search after reopening = %v, %v", res, err)
	}
}

func TestQdrantRejectsACollectionOfAnotherDimension(t *testing.T) {
	srv := startFake(t)
	openQdrant(t, srv.Addr(), "dims", 32).Close()
	_, err := vectors.Open(context.Background(), vectors.Config{Kind: vectors.KindQdrant, Dim: 64, Qdrant: vectors.QdrantConfig{Addr: srv.Addr(), Collection: "dims"}})
	if !errors.Is(err, vectors.ErrDimMismatch) {
		t.Fatalf("err = %v, want ErrDimMismatch", err)
	}
	for _, want := range []string{"dims", "32", "64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestQdrantSendsTheQueryEf(t *testing.T) {
	ctx := context.Background()
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "ef", 4)
	defer s.Close()
	q := []float32{1, 2, 3, 4}
	for _, ef := range []int{0, 64, 96, 128} {
		if _, err := s.Search(ctx, q, vectors.SearchOptions{Ef: ef}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Search(ctx, q, vectors.SearchOptions{K: 50, Ef: 20}); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(srv.QueryEfs()), "[0 64 96 128 20]"; got != want {
		t.Fatalf("hnsw_ef sent = %s, want %s (0 = unset; Qdrant itself searches with max(ef, limit))", got, want)
	}
}

func TestQdrantPointIDsAreDeterministicUUIDs(t *testing.T) {
	a, b := vectors.PointUUID("notes/a.md:0123456789abcdef"), vectors.PointUUID("notes/a.md:0123456789abcdef")
	u, err := uuid.Parse(a)
	if err != nil || a != b || u.Version() != 5 {
		t.Fatalf("PointUUID = %s, %s (err %v)", a, b, err)
	}
	if vectors.PointUUID("notes/a.md:1") == vectors.PointUUID("notes/a.md:2") {
		t.Fatal("different chunks share a point id")
	}
}

func TestQdrantUnreachableFailsOpen(t *testing.T) {
	srv := startFake(t)
	addr := srv.Addr()
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := vectors.Open(ctx, vectors.Config{Kind: vectors.KindQdrant, Dim: 4, Qdrant: vectors.QdrantConfig{Addr: addr}})
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want a failure naming %s", err, addr)
	}
}
