package scalebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/exocortex/exocortex/internal/synth"
	"github.com/exocortex/exocortex/vectors"
)

// fileID is what tells a file rewritten or replaced from one left alone.
type fileID struct {
	ino   uint64
	size  int64
	mtime int64
}

func statID(t *testing.T, path string) fileID {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileID{ino: fi.Sys().(*syscall.Stat_t).Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

func TestANewVectorStampRebuildsTheVectorsAndLeavesTheSQLiteStoreAlone(t *testing.T) {
	c := small(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "build")
	first, err := Build(ctx, dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if first.VectorStamp != VectorStamp {
		t.Fatalf("first build: vector stamp %q, want %q", first.VectorStamp, VectorStamp)
	}
	var sqlite []string
	for _, suffix := range []string{"", "-wal"} {
		if _, err := os.Stat(StorePath(dir) + suffix); err == nil {
			sqlite = append(sqlite, StorePath(dir)+suffix)
		}
	}
	before := map[string]fileID{}
	for _, p := range sqlite {
		before[p] = statID(t, p)
	}
	oldTruth := filepath.Join(dir, "truth-"+VectorStamp+"-3.json")
	oldHnswlib := filepath.Join(dir, "hnswlib-"+VectorStamp+"-M16-efc128.bin")
	for _, p := range []string{oldTruth, oldHnswlib} {
		if err := writeFile(p, `[["x"],["y"],["z"]]`); err != nil {
			t.Fatal(err)
		}
	}

	defer func(s string) { VectorStamp = s }(VectorStamp)
	VectorStamp = "synth-test-next"
	again, err := Build(ctx, dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || !again.VectorsBuilt || again.VectorStamp != "synth-test-next" {
		t.Errorf("build with a new vector stamp: %+v, want the store reused and the vectors built", again)
	}
	for p, id := range before {
		if got := statID(t, p); got != id {
			t.Errorf("%s changed in a vectors-only rebuild: %+v, was %+v", p, got, id)
		}
	}
	for _, p := range []string{oldTruth, oldHnswlib} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s, made from the old vectors, outlived them (stat: %v)", filepath.Base(p), err)
		}
	}
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := vs.Count(ctx); n != smallChunks {
		t.Errorf("rebuilt vector index holds %d points, want %d", n, smallChunks)
	}
	vs.Close()

	third, err := Build(ctx, dir, c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Cached || third.VectorsBuilt || third.VectorSeconds != again.VectorSeconds {
		t.Errorf("third build, nothing changed: %+v, want everything reused with the second's vector time %.2f s", third, again.VectorSeconds)
	}
}

func TestTheSuitesVectorsHaveNeighboursAnHNSWFinds(t *testing.T) {
	c := small(t)
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := BuildVectors(ctx, dir, c, t.Logf); err != nil {
		t.Fatal(err)
	}
	vs, err := vectors.Open(ctx, vectors.Config{Dir: VectorsPath(dir), Dim: Dim})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	vg := NewVectors(c)
	var qs [][]float32
	for j := range 100 {
		qs = append(qs, vg.Query(j))
	}
	exact := synth.ExactTopK(smallChunks, Dim, func(i int, dst []float32) { vg.Vector(i, dst) }, qs, 10)
	got := make([][]int, len(qs))
	for j, q := range qs {
		res, err := vs.Search(ctx, q, vectors.SearchOptions{K: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			var id int
			if _, err := fmt.Sscanf(r.ID, "c%07d", &id); err != nil {
				t.Fatalf("chunk id %q: %v", r.ID, err)
			}
			got[j] = append(got[j], id)
		}
	}
	if r := synth.Recall(exact, got, 10); r < 0.98 {
		t.Errorf("recall@10 at the default ef on %d chunks: %.3f, want at least 0.98", smallChunks, r)
	}
	// Not uniform noise: a query's nearest chunk is much nearer than a
	// random one.
	var top1, random float64
	for j := range qs {
		top1 += float64(exact[j][0].Score)
		random += float64(dot(qs[j], vg.Vector((j*7919)%smallChunks, nil)))
	}
	if top1/100 < 0.5 || random/100 > 0.3 {
		t.Errorf("mean cosine to the nearest chunk %.2f, to a random one %.2f: want clusters (above 0.5, under 0.3)", top1/100, random/100)
	}
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
