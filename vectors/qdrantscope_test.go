package vectors_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"

	"github.com/exocortex/exocortex/internal/synth"
	"github.com/exocortex/exocortex/vectors"
)

const scopeT0 = 1_700_000_000 // the first point's time; point i is i minutes later

// scopeMeta is point i's metadata: notebook "Работа" for one point in a
// thousand, path under projects/atlas for one in twenty, tag recipe on
// every other point and черновик on one in ten.
func scopeMeta(i int) vectors.PointMeta {
	m := vectors.PointMeta{Notebook: "Personal", Path: "misc/n" + strconv.Itoa(i) + ".md", Time: scopeT0 + int64(i)*60}
	if i%1000 == 7 {
		m.Notebook = "Работа"
	}
	if i%20 == 3 {
		m.Path = "projects/atlas/n" + strconv.Itoa(i) + ".md"
	}
	if i%2 == 0 {
		m.Tags = append(m.Tags, "recipe")
	}
	if i%10 == 0 {
		m.Tags = append(m.Tags, "черновик")
	}
	return m
}

func i64(v int64) *int64 { return &v }

// TestQdrantScopedSearchFindsTheNearestPointsInScope runs payload-filtered
// searches against the fake (which evaluates the filter on every point, as
// Qdrant's semantics say) and compares them with brute force over the
// points the scope allows: recall@10 at least 0.95, k hits when the scope
// holds k, no hit outside it.
func TestQdrantScopedSearchFindsTheNearestPointsInScope(t *testing.T) {
	const n, dim, nq = 20000, 64, 30
	ctx := context.Background()
	srv := startFake(t)
	s := openQdrant(t, srv.Addr(), "scoped", dim)
	defer s.Close()
	gen := synth.New(synth.Default(7, dim, n))
	vecs := make([][]float32, n)
	for lo := 0; lo < n; lo += 2000 {
		var pts []vectors.Point
		for i := lo; i < lo+2000; i++ {
			vecs[i] = make([]float32, dim)
			gen.Vector(i, vecs[i])
			pts = append(pts, vectors.Point{ID: fmt.Sprintf("n%05d.md:%d", i, i), DocID: fmt.Sprintf("n%05d.md", i),
				Lang: []string{"ru", "en"}[i%2], Vector: vecs[i], Meta: scopeMeta(i)})
		}
		if err := s.Upsert(ctx, pts); err != nil {
			t.Fatal(err)
		}
	}
	qs := make([][]float32, nq)
	for j := range qs {
		qs[j] = make([]float32, dim)
		gen.Query(j, qs[j])
	}
	tFrom, tTo := int64(scopeT0+5000*60), int64(scopeT0+5999*60)
	inTime := func(i int) bool { t := scopeMeta(i).Time; return t >= tFrom && t <= tTo }
	cases := []struct {
		name  string
		meta  vectors.MetaFilter
		allow func(i int) bool
	}{
		{"a notebook of 0.1% (Работа) finds its own points",
			vectors.MetaFilter{Must: []vectors.MetaCond{{Field: vectors.MetaNotebook, Any: []string{"Работа"}}}},
			func(i int) bool { return i%1000 == 7 }},
		{"a folder prefix of 5% keeps to the folder",
			vectors.MetaFilter{Must: []vectors.MetaCond{{Field: vectors.MetaDirs, Any: []string{"projects/atlas"}}}},
			func(i int) bool { return i%20 == 3 }},
		{"a tag without another tag (must and must_not) on a list field",
			vectors.MetaFilter{Must: []vectors.MetaCond{{Field: vectors.MetaTags, Any: []string{"recipe"}}},
				MustNot: []vectors.MetaCond{{Field: vectors.MetaTags, Any: []string{"черновик"}}}},
			func(i int) bool { return i%2 == 0 && i%10 != 0 }},
		{"a date range of 5% on the integer time",
			vectors.MetaFilter{Must: []vectors.MetaCond{{Field: vectors.MetaTime, Min: i64(tFrom), Max: i64(tTo)}}},
			inTime},
		{"a nested either-or: the notebook, or drafts within the dates",
			vectors.MetaFilter{AnyOf: []vectors.MetaFilter{
				{Must: []vectors.MetaCond{{Field: vectors.MetaNotebook, Any: []string{"Работа"}}}},
				{Must: []vectors.MetaCond{{Field: vectors.MetaTags, Any: []string{"черновик"}}, {Field: vectors.MetaTime, Min: i64(tFrom), Max: i64(tTo)}}},
			}},
			func(i int) bool { return i%1000 == 7 || (i%10 == 0 && inTime(i)) }},
		{"an open-ended range with a language",
			vectors.MetaFilter{Must: []vectors.MetaCond{{Field: vectors.MetaTime, Min: i64(scopeT0 + 19990*60)}, {Field: vectors.MetaLang, Any: []string{"ru"}}}},
			func(i int) bool { return i >= 19990 && i%2 == 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in []int
			for i := range n {
				if tc.allow(i) {
					in = append(in, i)
				}
			}
			exact := synth.ExactTopK(len(in), dim, func(j int, dst []float32) { copy(dst, vecs[in[j]]) }, qs, 10)
			got := make([][]int, nq)
			for qi, q := range qs {
				res, err := s.Search(ctx, q, vectors.SearchOptions{K: 10, Filter: vectors.Filter{Meta: &tc.meta}})
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != min(10, len(in)) {
					t.Fatalf("query %d: %d hits in a scope of %d", qi, len(res), len(in))
				}
				for _, r := range res {
					i, _ := strconv.Atoi(r.ID[len("n00000.md:"):])
					if !tc.allow(i) {
						t.Fatalf("query %d: hit %s is outside the scope", qi, r.ID)
					}
					j, _ := slices.BinarySearch(in, i)
					got[qi] = append(got[qi], j)
				}
			}
			if r := synth.Recall(exact, got, 10); r < 0.95 {
				t.Errorf("scope of %d: recall@10 = %.4f, want >= 0.95", len(in), r)
			}
			if c, err := s.CountWhere(ctx, vectors.Filter{Meta: &tc.meta}); err != nil || c != len(in) {
				t.Errorf("CountWhere = %d, %v; want %d", c, err, len(in))
			}
		})
	}
	bad := vectors.MetaFilter{Must: []vectors.MetaCond{{Field: vectors.MetaTags}}}
	if _, err := s.Search(ctx, qs[0], vectors.SearchOptions{Filter: vectors.Filter{Meta: &bad}}); err == nil {
		t.Error("a condition without values or a range was accepted")
	}
	ids := vectors.NewIDSet([]string{"n00003.md:3", "n00004.md:4", "nowhere"})
	if res, err := s.Search(ctx, qs[0], vectors.SearchOptions{K: 10, Filter: vectors.Filter{IDs: ids}}); err != nil || len(res) != 2 {
		t.Errorf("an id set of two known points gave %v, %v", res, err)
	}
}

// TestQdrantAddsPayloadIndexesToAnOlderCollection opens a collection made
// with the first two indexes only (lang, doc_id, as before scopes): the
// store adds the scope fields' indexes and leaves the others.
func TestQdrantAddsPayloadIndexesToAnOlderCollection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := startFake(t)
	_, port, _ := net.SplitHostPort(srv.Addr())
	p, _ := strconv.Atoi(port)
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", Port: p, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: "old",
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 8, Distance: qdrant.Distance_Cosine})}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lang", "doc_id"} {
		if _, err := c.CreateFieldIndex(ctx, &qdrant.CreateFieldIndexCollection{CollectionName: "old", FieldName: f,
			FieldType: qdrant.FieldType_FieldTypeKeyword.Enum()}); err != nil {
			t.Fatal(err)
		}
	}
	s := openQdrant(t, srv.Addr(), "old", 8)
	defer s.Close()
	var added []string
	for _, r := range srv.FieldIndexRequests()[2:] {
		added = append(added, fmt.Sprintf("%s:%s", r.GetFieldName(), r.GetFieldType()))
	}
	want := []string{"notebook:FieldTypeKeyword", "dirs:FieldTypeKeyword", "tags:FieldTypeKeyword", "time:FieldTypeInteger"}
	if fmt.Sprint(added) != fmt.Sprint(want) {
		t.Errorf("indexes added %v, want %v", added, want)
	}
}
