package vectors

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dirState lists every file under dir with its size and modification time.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		lines = append(lines, rel+" "+fi.Mode().String()+" "+strconv.FormatInt(fi.Size(), 10)+" "+fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestAReadOnlyStoreAnswersAsTheWriterAndLeavesItsDirectoryAlone(t *testing.T) {
	ctx := context.Background()
	qs := testPoints(9, "q", 15)
	for _, tc := range []struct {
		name string
		// write fills dir through the writer w, left open (its op log after
		// its last snapshot is what a crash or a running writer leaves).
		write func(t *testing.T, dir string) *Embedded
	}{
		{"a snapshot and nothing after it", func(t *testing.T, dir string) *Embedded {
			w := openT(t, dir, EmbeddedConfig{})
			mustUpsert(t, w, testPoints(1, "p", 1500))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return openT(t, dir, EmbeddedConfig{})
		}},
		{"a snapshot and an op log of upserts, replacements and deletes after it", func(t *testing.T, dir string) *Embedded {
			w := openT(t, dir, EmbeddedConfig{})
			mustUpsert(t, w, testPoints(1, "p", 1500))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			w = openT(t, dir, EmbeddedConfig{})
			mustUpsert(t, w, testPoints(2, "p", 40)) // replaces p:0..p:39
			mustUpsert(t, w, testPoints(3, "n", 300))
			if err := w.Delete(ctx, []string{"p:100", "p:101", "n:7"}); err != nil {
				t.Fatal(err)
			}
			return w
		}},
		{"an op log alone, never snapshotted", func(t *testing.T, dir string) *Embedded {
			w := openT(t, dir, EmbeddedConfig{})
			mustUpsert(t, w, testPoints(4, "p", 800))
			return w
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := tc.write(t, dir)
			defer w.Close()
			want := answers(t, w, qs)
			wantN, _ := w.Count(ctx)
			before := dirState(t, dir)

			r, err := OpenEmbedded(ctx, dir, testDim, EmbeddedConfig{ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open beside the writer: %v", err)
			}
			if n, _ := r.Count(ctx); n != wantN {
				t.Errorf("read-only Count = %d, the writer has %d", n, wantN)
			}
			if got := answers(t, r, qs); got != want {
				t.Errorf("read-only answers differ from the writer's:\nwriter:\n%s\nread-only:\n%s", want, got)
			}
			for name, write := range map[string]func() error{
				"Upsert":   func() error { return r.Upsert(ctx, testPoints(5, "x", 1)) },
				"Delete":   func() error { return r.Delete(ctx, []string{"p:1"}) },
				"Snapshot": func() error { return r.Snapshot(ctx) },
				"Compact":  func() error { return r.Compact(ctx) },
			} {
				if err := write(); !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if after := dirState(t, dir); after != before {
				t.Errorf("a read-only open and close changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

func TestAReadOnlyStoreSkipsATornLogTailWithoutCuttingIt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := openT(t, dir, EmbeddedConfig{})
	first := testPoints(1, "a", 200)
	mustUpsert(t, w, first)
	cut := w.Stats().LogBytes
	mustUpsert(t, w, testPoints(2, "b", 200))
	whole := w.Stats().LogBytes
	crashed := t.TempDir()
	for _, f := range []string{logFile, "vectors-0.raw"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == logFile {
			b = b[:cut+(whole-cut)/2] // the second record half written
		}
		if err := os.WriteFile(filepath.Join(crashed, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	before := dirState(t, crashed)
	r, err := OpenEmbedded(ctx, crashed, testDim, EmbeddedConfig{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.Count(ctx); n != len(first) {
		t.Errorf("Count = %d, want the %d points of the intact record", n, len(first))
	}
	if res, err := r.Search(ctx, first[5].Vector, SearchOptions{K: 1}); err != nil || len(res) == 0 || res[0].ID != first[5].ID {
		t.Errorf("search for a point of the op log: %v, %v", res, err)
	}
	r.Close()
	if after := dirState(t, crashed); after != before {
		t.Errorf("the torn log was changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestAReadOnlyOpenOfAMissingDirectoryFailsAndCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vectors", "model")
	if _, err := OpenEmbedded(context.Background(), dir, testDim, EmbeddedConfig{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing directory: %v, want a not-exist error", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the read-only open created %s", filepath.Dir(dir))
	}
}
