package main_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"
)

// indexSnapshot is what an index holds, in a form two runs can be compared
// by: every document with its hash, version and chunk list, every chunk
// with its document and hash, and the counts of the rows derived from them.
type indexSnapshot struct {
	Docs   []string // "doc_id hash version chunk_ids"
	Chunks []string // "chunk_id doc_id hash"
	Counts map[string]int
}

// readIndex reads the index of a data directory (read-only).
func readIndex(t *testing.T, dataDir string) indexSnapshot {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "exocortex.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func(q string) []string { return sqlStrings(t, db, q) }
	snap := indexSnapshot{
		Docs:   rows(`SELECT doc_id || ' ' || hash || ' ' || version || ' ' || chunk_ids FROM documents`),
		Chunks: rows(`SELECT chunk_id || ' ' || doc_id || ' ' || hash FROM chunks`),
		Counts: map[string]int{},
	}
	for _, table := range []string{"documents", "chunks", "chunks_fts", "chunk_vectors", "blocks", "edges", "deleted_docs"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		snap.Counts[table] = n
	}
	return snap
}

// sqlStrings runs q, whose rows are one string each, and returns them
// sorted.
func sqlStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	r, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer r.Close()
	var out []string
	for r.Next() {
		var s string
		if err := r.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// sameIndex reports every difference between a clean run's index and
// another's (at most a few of each kind); none means identical.
func sameIndex(want, got indexSnapshot) []string {
	var diffs []string
	for _, k := range []struct {
		what      string
		want, got []string
	}{{"document", want.Docs, got.Docs}, {"chunk", want.Chunks, got.Chunks}} {
		missing, extra := setDiff(k.want, k.got), setDiff(k.got, k.want)
		if len(missing) > 0 {
			diffs = append(diffs, fmt.Sprintf("%d %ss missing or different, e.g. %q", len(missing), k.what, missing[:min(3, len(missing))]))
		}
		if len(extra) > 0 {
			diffs = append(diffs, fmt.Sprintf("%d %ss extra or different, e.g. %q", len(extra), k.what, extra[:min(3, len(extra))]))
		}
	}
	for table, n := range want.Counts {
		if got.Counts[table] != n {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows, the clean run has %d", table, got.Counts[table], n))
		}
	}
	return diffs
}

// setDiff lists the elements of a (sorted) not in b (sorted).
func setDiff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			out = append(out, s)
		}
	}
	return out
}
