package scalebench

import (
	"errors"
	"strings"
	"testing"
)

func TestTheTablePutsEachEngineOnOneRowWithEverySizeSideBySide(t *testing.T) {
	big := &Result{Chunks: 1_000_000, Build: BuildInfo{Chunks: 1_000_000, Seconds: 100},
		Rows: []Row{{Measure: "lexical", Engine: "fts5", P50MS: 300, P95MS: 612, Recall: 0.9}}}
	small := &Result{Chunks: 100_000, Build: BuildInfo{Chunks: 100_000, Seconds: 10},
		Rows: []Row{{Measure: "lexical", Engine: "fts5", P50MS: 24, P95MS: 50, Recall: 0.93},
			{Measure: "lexical", Engine: "new", P50MS: 2, P95MS: 5, Recall: 0.95, Note: "impact-ordered"}}}
	md := Markdown([]*Result{big, small}) // out of order on purpose
	for _, want := range []string{
		"| measure | engine | 100k p50 ms | 100k p95 ms | 100k recall@10 | 1M p50 ms | 1M p95 ms | 1M recall@10 | notes |",
		"| lexical | fts5 | 24.0 | 50.0 | 0.93 | 300 | 612 | 0.90 |  |",
		"| lexical | new | 2.00 | 5.00 | 0.95 | | | | impact-ordered |",
		"| 100k chunks |", "| 1M chunks |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "| 100k chunks |") > strings.Index(md, "| 1M chunks |") {
		t.Errorf("sizes not smallest first:\n%s", md)
	}
}

func TestReplaceTableNeedsBothMarkersOnceInOrder(t *testing.T) {
	for _, doc := range []string{
		"no markers",
		EndMarker + "\n" + BeginMarker,
		BeginMarker + EndMarker + BeginMarker + EndMarker,
	} {
		if _, err := ReplaceTable(doc, "| t |"); !errors.Is(err, ErrNoMarkers) {
			t.Errorf("ReplaceTable(%q) err = %v, want ErrNoMarkers", doc, err)
		}
	}
}

func TestTheTableSaysWhatEachEngineHoldsPerSizeAndAStoreReusedUnderNewVectors(t *testing.T) {
	small := &Result{Chunks: 100_000, Build: BuildInfo{Chunks: 100_000, Seconds: 90, StoreSeconds: 75, VectorSeconds: 15,
		Cached: true, VectorsBuilt: true},
		Rows: []Row{{Measure: "vector", Engine: "hnswlib ef=64", P50MS: 0.2, P95MS: 0.3, Recall: 0.99, RSSMB: 170, Note: "C++"}}}
	big := &Result{Chunks: 1_000_000, Build: BuildInfo{Chunks: 1_000_000, Seconds: 900, Cached: true},
		Rows: []Row{{Measure: "vector", Engine: "hnswlib ef=64", P50MS: 0.4, P95MS: 0.6, Recall: 0.98, RSSMB: 1700, Note: "C++"}}}
	md := Markdown([]*Result{small, big})
	for _, want := range []string{
		"| vector | hnswlib ef=64 | 0.20 | 0.30 | 0.99 | 0.40 | 0.60 | 0.98 | C++; RSS 100k 170 MB, 1M 1700 MB |",
		"vectors 15 s, SQLite from an earlier run) |",
		"vectors 0 s, an earlier run's) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}
