package store

import (
	"context"
	"testing"
)

// docIDsInDocuments is the set of document ids the documents table holds.
func docIDsInDocuments(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	rows, err := s.r.Query(`SELECT doc_id FROM documents`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	return out
}

func TestSearchNeverReturnsAChunkWhoseDocumentIsNotIndexed(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	// Chunks arrive before their structure: d1's has come, d2's has not.
	mustUpsert(t, s, chunkEv("c1", "d1", 1, "ravens cache food for winter"), true)
	mustUpsert(t, s, chunkEv("c2", "d2", 1, "ravens remember faces"), true)
	mustApply(t, s, structure("d1", 1, "c1"), true)

	check := func(when string, want ...string) {
		t.Helper()
		docs := docIDsInDocuments(t, s)
		hits := search(t, s, "ravens", SearchOptions{})
		for _, h := range hits {
			if !docs[h.DocID] {
				t.Errorf("%s: search returned chunk %s of doc %s, which the documents table lacks", when, h.ChunkID, h.DocID)
			}
		}
		ps, err := s.Passages(ctx, []string{"c1", "c2"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range ps {
			if !docs[h.DocID] {
				t.Errorf("%s: passages returned chunk %s of doc %s, which the documents table lacks", when, h.ChunkID, h.DocID)
			}
		}
		if got := hitIDs(hits); len(got) != len(want) {
			t.Errorf("%s: search found %v, want %v", when, got, want)
		}
	}
	check("before d2's structure", "c1")

	// The structure arrives: the held chunk becomes searchable, with its title.
	mustApply(t, s, structure("d2", 1, "c2"), true)
	check("after d2's structure", "c1", "c2")
	if hits := search(t, s, "d2", SearchOptions{}); len(hits) != 1 || hits[0].ChunkID != "c2" {
		t.Fatalf("d2's title finds %v, want c2", hitIDs(hits))
	}
	// Redeliveries change nothing.
	mustUpsert(t, s, chunkEv("c2", "d2", 1, "ravens remember faces"), false)
	mustApply(t, s, structure("d2", 1, "c2"), true)
	check("after redeliveries", "c1", "c2")
	wantRows(t, s, 2)
}
