package scalebench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/store"
)

func TestNoteMetaMakesScopesOfExactShares(t *testing.T) {
	const notes = 20_000
	cases := []struct {
		name string
		has  func(NoteMeta) bool
		want int
	}{
		{"notebook half holds 50% of the notes", func(m NoteMeta) bool { return m.NotebookName == NotebookHalf }, notes / 2},
		{"tag five is on 5% of the notes", func(m NoteMeta) bool { return hasTag(m, TagFive) }, notes / 20},
		{"tag rare is on 0.1% of the notes", func(m NoteMeta) bool { return hasTag(m, TagRare) }, notes / 1000},
		{"every note's time is within the three years", func(m NoteMeta) bool {
			return !m.Time.Before(metaEpoch) && m.Time.Before(metaEpoch.Add(metaSpan))
		}, notes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for k := range notes {
				if tc.has(noteMeta(k)) {
					n++
				}
			}
			if n != tc.want {
				t.Fatalf("%d notes, want %d", n, tc.want)
			}
		})
	}
	recent := 0
	for k := range notes {
		if !noteMeta(k).Time.Before(sinceShare()) {
			recent++
		}
	}
	if share := float64(recent) / notes; share < 0.04 || share > 0.06 {
		t.Fatalf("the last 5%% of the span holds %.3f of the notes", share)
	}
}

// allowedCounts is how many chunks each of Scopes allows in the build at
// dir, and how many its metadata says it should.
func allowedCounts(t *testing.T, dir string, c *Corpus) (got, want []int) {
	t.Helper()
	st, err := store.Open(StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, sc := range Scopes {
		cs, err := st.AllowedChunks(context.Background(), sc.Filter)
		if err != nil {
			t.Fatal(err)
		}
		w := 0
		for i := range c.cfg.Chunks {
			if sc.Want(c, i) {
				w++
			}
		}
		got, want = append(got, cs.Len()), append(want, w)
	}
	return got, want
}

func TestTheBuildStoresTheScopesAndACachedBuildWithoutThemGetsThemInPlace(t *testing.T) {
	c := small(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "build")
	if _, err := Build(ctx, dir, c, t.Logf); err != nil {
		t.Fatal(err)
	}
	got, want := allowedCounts(t, dir, c)
	for i, sc := range Scopes {
		if got[i] != want[i] || want[i] == 0 && sc.Name != "tag 0.1%" {
			t.Fatalf("built: scope %s allows %d chunks, want %d", sc.Name, got[i], want[i])
		}
	}
	// A build from before scopes: its documents carry no metadata and it
	// has no scope.json.
	st, err := store.Open(StorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for i := range c.cfg.Chunks {
		_, docID, title := c.chunkDoc(i)
		if done[docID] {
			continue
		}
		done[docID] = true
		ids, err := st.DocChunkIDs(ctx, docID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyStructure(ctx, docStructure(docID, title, NoteMeta{}, ids)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if err := os.Remove(filepath.Join(dir, scopeInfoFile)); err != nil {
		t.Fatal(err)
	}
	if got, _ := allowedCounts(t, dir, c); got[0] != 0 {
		t.Fatalf("metadata not cleared: notebook scope allows %d chunks", got[0])
	}
	db := statID(t, StorePath(dir))
	info, err := Build(ctx, dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Cached {
		t.Fatal("the build was redone, want the cached one with its metadata rewritten")
	}
	got, want = allowedCounts(t, dir, c)
	for i, sc := range Scopes {
		if got[i] != want[i] {
			t.Fatalf("refreshed: scope %s allows %d chunks, want %d", sc.Name, got[i], want[i])
		}
	}
	if statID(t, StorePath(dir)).ino != db.ino {
		t.Fatal("the SQLite store was replaced, want it updated in place")
	}
}

// TestEachScopeIsTheSameAsAQueryGivesIt: the fused rows search with the
// query's scope (retrieval resolves it) and the fake Qdrant's with its
// payload conditions; both must be the scope the other rows resolve.
func TestEachScopeIsTheSameAsAQueryGivesIt(t *testing.T) {
	for _, sc := range Scopes {
		t.Run(sc.Name, func(t *testing.T) {
			f, err := retrieval.DocFilter(&sc.Query)
			if err != nil {
				t.Fatal(err)
			}
			if f.Key() != sc.Filter.Key() {
				t.Errorf("the query's scope resolves to %s, the rows' filter is %s", f.Key(), sc.Filter.Key())
			}
			if meta, err := retrieval.ScopeMeta(&sc.Query); err != nil || meta == nil {
				t.Errorf("no payload conditions for Qdrant (%v)", err)
			}
		})
	}
}
