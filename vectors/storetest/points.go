package storetest

import (
	"context"
	"testing"

	"github.com/exocortex/exocortex/vectors"
)

// testPoints: Points lists every live point once, with its document, over
// more than one page (exocortex check compares the list with the index).
func testPoints(t *testing.T, s vectors.Store) {
	lister, ok := s.(vectors.Lister)
	if !ok {
		t.Fatalf("%s store does not implement vectors.Lister", s.Name())
	}
	ctx := context.Background()
	d := newData(s.Dim(), 11)
	pts := d.points("p", 1100)
	for lo := 0; lo < len(pts); lo += 250 {
		upsert(t, s, pts[lo:min(lo+250, len(pts))]...)
	}
	gone := []string{pts[3].ID, pts[700].ID}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	got, err := lister.Points(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range pts {
		want[p.ID] = p.DocID
	}
	for _, id := range gone {
		delete(want, id)
	}
	if len(got) != len(want) {
		t.Errorf("Points listed %d, want %d", len(got), len(want))
	}
	seen := map[string]bool{}
	for i, p := range got {
		if seen[p.ID] {
			t.Errorf("point %s listed twice", p.ID)
		}
		seen[p.ID] = true
		if doc, ok := want[p.ID]; !ok || doc != p.DocID {
			t.Errorf("listed %+v; want it absent, or of document %q", p, doc)
		}
		if i > 0 && got[i-1].ID >= p.ID {
			t.Errorf("not sorted by id at %d: %s >= %s", i, got[i-1].ID, p.ID)
		}
	}
}
