package vectors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

const testDim = 48

func openT(t *testing.T, dir string, cfg EmbeddedConfig) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(context.Background(), dir, testDim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// testPoints makes n points with ids prefix:i, 10 per document.
func testPoints(seed uint64, prefix string, n int) []Point {
	r := rand.New(rand.NewPCG(seed, 7))
	pts := make([]Point, n)
	for i := range pts {
		v := make([]float32, testDim)
		for d := range v {
			v[d] = float32(r.NormFloat64())
		}
		pts[i] = Point{ID: fmt.Sprintf("%s:%d", prefix, i), DocID: fmt.Sprintf("%s/%d.md", prefix, i/10), Lang: []string{"en", "ru"}[i%2], Vector: v}
	}
	return pts
}

func mustUpsert(t *testing.T, s Store, pts []Point) {
	t.Helper()
	for lo := 0; lo < len(pts); lo += 500 {
		if err := s.Upsert(context.Background(), pts[lo:min(lo+500, len(pts))]); err != nil {
			t.Fatal(err)
		}
	}
}

// answers runs a fixed set of searches and returns their results as text.
func answers(t *testing.T, s Store, qs []Point) string {
	t.Helper()
	var b strings.Builder
	for _, q := range qs {
		for _, f := range []Filter{{}, {Lang: "ru"}, {DocIDs: []string{q.DocID}}} {
			res, err := s.Search(context.Background(), q.Vector, SearchOptions{K: 5, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, res)
		}
	}
	return b.String()
}

func TestReopenGivesTheSameAnswers(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := openT(t, dir, EmbeddedConfig{})
	pts := testPoints(1, "p", 3000)
	mustUpsert(t, e, pts)
	if err := e.Delete(ctx, []string{"p:1", "p:2", "p:3"}); err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, e, testPoints(2, "p", 10)) // replaces p:0..p:9
	qs := testPoints(3, "q", 20)
	before := answers(t, e, qs)
	countBefore, _ := e.Count(ctx)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotFile)); err != nil {
		t.Fatalf("Close wrote no snapshot: %v", err)
	}

	e = openT(t, dir, EmbeddedConfig{})
	defer e.Close()
	if n, _ := e.Count(ctx); n != countBefore || n != 3000 {
		t.Fatalf("Count after reopening = %d, want %d", n, countBefore)
	}
	if after := answers(t, e, qs); after != before {
		t.Fatalf("answers changed across a restart:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if st := e.Stats(); st.LogBytes != logHeaderSize {
		t.Fatalf("log holds %d bytes after a clean reopen", st.LogBytes)
	}
}

func TestTornLogTailIsDropped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{})
	first, second := testPoints(1, "a", 300), testPoints(2, "b", 300)
	mustUpsert(t, e, first)
	sizeAfterFirst := e.Stats().LogBytes
	mustUpsert(t, e, second)
	sizeAfterSecond := e.Stats().LogBytes
	// Simulate a crash: copy the files while the store is open (no snapshot).
	crashed := t.TempDir()
	for _, f := range []string{logFile, "vectors-0.raw"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == logFile {
			// Cut the second batch's record in the middle.
			b = b[:sizeAfterFirst+(sizeAfterSecond-sizeAfterFirst)/2]
		}
		if err := os.WriteFile(filepath.Join(crashed, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()

	var logs bytes.Buffer
	lctx := zerolog.New(&logs).WithContext(ctx)
	r, err := OpenEmbedded(lctx, crashed, testDim, EmbeddedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, _ := r.Count(ctx); n != 300 {
		t.Fatalf("Count = %d, want the 300 points of the intact record", n)
	}
	if !strings.Contains(logs.String(), "torn tail") || !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Fatalf("no warning about the torn tail in %q", logs.String())
	}
	if st := r.Stats(); st.LogBytes != sizeAfterFirst {
		t.Fatalf("log is %d bytes, want it cut to %d", st.LogBytes, sizeAfterFirst)
	}
	// The store goes on appending after the cut.
	mustUpsert(t, r, second[:10])
	res, err := r.Search(ctx, second[3].Vector, SearchOptions{K: 1})
	if err != nil || res[0].ID != second[3].ID {
		t.Fatalf("search after recovery: %v, %v", res, err)
	}
}

func TestCorruptLogRecordInTheMiddleIsAnError(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{})
	mustUpsert(t, e, testPoints(1, "a", 10))
	mustUpsert(t, e, testPoints(2, "b", 10))
	path := filepath.Join(dir, logFile)
	b, _ := os.ReadFile(path)
	e.wal.close()
	e.lock.Close() // abandon the store without a snapshot
	// Flip a byte of the first record's payload: its checksum fails, and
	// what follows is dropped as a torn tail (with a warning).
	b[logHeaderSize+20] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := openT(t, dir, EmbeddedConfig{})
	defer r.Close()
	if n, _ := r.Count(context.Background()); n != 0 {
		t.Fatalf("Count = %d after dropping from the first bad record", n)
	}
}

func TestCompactionDropsDeletedNodesAndKeepsAnswers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{CompactFraction: 0.9}) // no automatic compaction
	n := map[bool]int{false: 4000, true: 1200}[raceEnabled]
	pts := testPoints(1, "p", n)
	mustUpsert(t, e, pts)
	var gone []string
	for i := 0; i < n; i += 2 {
		gone = append(gone, pts[i].ID)
	}
	if err := e.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	mustUpsert(t, e, testPoints(9, "p", 3)) // replaces p:1 (and re-adds p:0, p:2)
	if st := e.Stats(); st.Deleted != n/2+1 || st.Points != n/2+2 {
		t.Fatalf("before compaction: %+v", st)
	}
	live := map[string]Point{}
	for i := 1; i < n; i += 2 {
		live[pts[i].ID] = pts[i]
	}
	for _, p := range testPoints(9, "p", 3) {
		live[p.ID] = p
	}
	qs := testPoints(3, "q", 50)
	if r := exactRecall(t, e, live, qs, 10); r < 0.95 {
		t.Fatalf("recall@10 before compaction = %.3f", r)
	}
	if err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Deleted != 0 || st.Nodes != n/2+2 || st.Points != n/2+2 {
		t.Fatalf("after compaction: %+v", st)
	}
	if r := exactRecall(t, e, live, qs, 10); r < 0.95 {
		t.Fatalf("recall@10 after compaction = %.3f", r)
	}
	raws, _ := filepath.Glob(filepath.Join(dir, "vectors-*.raw"))
	if len(raws) != 1 || filepath.Base(raws[0]) != "vectors-1.raw" {
		t.Fatalf("raw files after compaction: %v", raws)
	}
	checkGraph(t, e)
	mustUpsert(t, e, testPoints(4, "new", 100))
	before := answers(t, e, qs)
	e.Close()

	e = openT(t, dir, EmbeddedConfig{})
	defer e.Close()
	if got, _ := e.Count(ctx); got != n/2+102 {
		t.Fatalf("Count after reopening = %d", got)
	}
	if after := answers(t, e, qs); after != before {
		t.Fatalf("answers changed after reopening")
	}
}

func TestDeletingMostPointsCompactsAutomatically(t *testing.T) {
	ctx := context.Background()
	e := openT(t, t.TempDir(), EmbeddedConfig{})
	defer e.Close()
	n := map[bool]int{false: 3000, true: 1600}[raceEnabled]
	pts := testPoints(1, "p", n)
	mustUpsert(t, e, pts)
	var gone []string
	for _, p := range pts[:n-500] {
		gone = append(gone, p.ID)
	}
	if err := e.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Deleted != 0 || st.Nodes != 500 {
		t.Fatalf("no automatic compaction: %+v", st)
	}
	for _, p := range pts[n-500 : n-400] {
		res, err := e.Search(ctx, p.Vector, SearchOptions{K: 1})
		if err != nil || len(res) != 1 || res[0].ID != p.ID {
			t.Fatalf("%s: %v, %v", p.ID, res, err)
		}
	}
	checkGraph(t, e)
	// Delete everything: the graph empties and takes points again.
	gone = gone[:0]
	for _, p := range pts[n-500:] {
		gone = append(gone, p.ID)
	}
	if err := e.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := e.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Nodes != 0 {
		t.Fatalf("after deleting all: %+v", st)
	}
	mustUpsert(t, e, pts[:5])
	if res, _ := e.Search(ctx, pts[3].Vector, SearchOptions{K: 1}); len(res) != 1 || res[0].ID != pts[3].ID {
		t.Fatalf("search in the refilled store: %v", res)
	}
}

// exactRecall is the recall@k of s's searches for qs against a brute-force
// ranking of live.
func exactRecall(t *testing.T, s Store, live map[string]Point, qs []Point, k int) float64 {
	t.Helper()
	hit := 0
	for _, q := range qs {
		var all []Point
		for _, p := range live {
			all = append(all, p)
		}
		qn, _ := normalize(q.Vector)
		score := func(p Point) float32 { v, _ := normalize(p.Vector); return dotF32(qn, v) }
		slices.SortFunc(all, func(a, b Point) int {
			if sa, sb := score(a), score(b); sa != sb {
				if sa > sb {
					return -1
				}
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		want := map[string]bool{}
		for _, p := range all[:k] {
			want[p.ID] = true
		}
		res, err := s.Search(context.Background(), q.Vector, SearchOptions{K: k})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if want[r.ID] {
				hit++
			}
		}
	}
	return float64(hit) / float64(k*len(qs))
}

// checkGraph checks every link points at a live node of a high enough level
// and that every node is reachable from the entry point at level 0.
func checkGraph(t *testing.T, e *Embedded) {
	t.Helper()
	g := e.g
	ep, _, ok := g.entry()
	if !ok {
		if e.live > 0 {
			t.Fatal("no entry point")
		}
		return
	}
	seen := make([]bool, g.n)
	stack := []uint32{ep}
	seen[ep] = true
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for l := 0; l <= int(g.levels[u]); l++ {
			for _, v := range g.readLinks(u, l, nil) {
				if int(v) >= g.n || int(g.levels[v]) < l || v == u {
					t.Fatalf("node %d level %d links to %d", u, l, v)
				}
				if l == 0 && !seen[v] {
					seen[v] = true
					stack = append(stack, v)
				}
			}
		}
	}
	unreached := 0
	for id, s := range g.state {
		if s == stateLive && !seen[id] {
			unreached++
			var from []int
			for u := range g.n {
				if slices.Contains(g.readLinks(uint32(u), 0, nil), uint32(id)) {
					from = append(from, u)
				}
			}
			t.Logf("unreachable node %d: level %d, indeg %d, in-links from %v, out %v", id, g.levels[id], g.indeg[id], from, g.readLinks(uint32(id), 0, nil))
		}
	}
	if unreached > 0 {
		t.Errorf("%d live nodes unreachable from the entry point", unreached)
	}
}

func TestOpenRejectsAnotherDimension(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{})
	mustUpsert(t, e, testPoints(1, "p", 10))
	e.Close()
	_, err := OpenEmbedded(context.Background(), dir, testDim+1, EmbeddedConfig{})
	if !errors.Is(err, ErrDimMismatch) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, want ErrDimMismatch naming %s", err, dir)
	}
	// Also when only the log knows the dimension.
	dir2 := t.TempDir()
	e = openT(t, dir2, EmbeddedConfig{})
	e.wal.close()
	e.lock.Close()
	if _, err := OpenEmbedded(context.Background(), dir2, testDim*2, EmbeddedConfig{}); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("log with another dimension: err = %v", err)
	}
}

func TestOneProcessAtATime(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{})
	defer e.Close()
	if _, err := OpenEmbedded(context.Background(), dir, testDim, EmbeddedConfig{}); err == nil {
		t.Fatal("a second open of the same directory succeeded")
	}
}

func TestCorruptSnapshotIsAnError(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{})
	mustUpsert(t, e, testPoints(1, "p", 100))
	e.Close()
	path := filepath.Join(dir, snapshotFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0x01
	os.WriteFile(path, b, 0o644)
	if _, err := OpenEmbedded(context.Background(), dir, testDim, EmbeddedConfig{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

func TestLargeLogTriggersASnapshot(t *testing.T) {
	dir := t.TempDir()
	e := openT(t, dir, EmbeddedConfig{SnapshotLogBytes: 50_000})
	defer e.Close()
	mustUpsert(t, e, testPoints(1, "p", 400)) // ~100 kB of log
	st := e.Stats()
	if st.SnapshotBytes == 0 || st.LogBytes != logHeaderSize {
		t.Fatalf("no snapshot after outgrowing the log: %+v", st)
	}
}

func TestUnchangedUpsertWritesNothing(t *testing.T) {
	e := openT(t, t.TempDir(), EmbeddedConfig{})
	defer e.Close()
	pts := testPoints(1, "p", 50)
	mustUpsert(t, e, pts)
	st := e.Stats()
	mustUpsert(t, e, pts)
	if after := e.Stats(); after.LogBytes != st.LogBytes || after.Nodes != st.Nodes {
		t.Fatalf("re-upserting identical points grew the store: %+v -> %+v", st, after)
	}
	pts[7].Lang = "de"
	mustUpsert(t, e, pts)
	if after := e.Stats(); after.Nodes != st.Nodes+1 || after.Deleted != 1 {
		t.Fatalf("a changed lang was not applied: %+v", after)
	}
}

func TestClosedStoreErrors(t *testing.T) {
	e := openT(t, t.TempDir(), EmbeddedConfig{})
	e.Close()
	ctx := context.Background()
	q := testPoints(1, "p", 1)
	for name, err := range map[string]error{
		"upsert": e.Upsert(ctx, q),
		"delete": e.Delete(ctx, []string{"x"}),
		"search": func() error { _, err := e.Search(ctx, q[0].Vector, SearchOptions{}); return err }(),
		"count":  func() error { _, err := e.Count(ctx); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"no dim and no dir", Config{}, []string{"dim 0", "directory"}},
		{"unknown kind", Config{Kind: "faiss", Dim: 3}, []string{`"faiss"`}},
		{"bad qdrant addr", Config{Kind: KindQdrant, Dim: 3, Qdrant: QdrantConfig{Addr: "nohost"}}, []string{"qdrant addr"}},
		{"bad tuning", Config{Dir: "x", Dim: 3, Embedded: EmbeddedConfig{M: 1, CompactFraction: 2}}, []string{"M 1", "compact fraction"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if !slices.Contains([]string{KindEmbedded}, Config{}.withDefaults().Kind) {
		t.Error("the default kind is not embedded")
	}
}
