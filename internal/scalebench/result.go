package scalebench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Result is one run of the suite at one corpus size, as written to
// scale-<size>.json.
type Result struct {
	Corpus     string    `json:"corpus"` // Config.Stamp
	Chunks     int       `json:"chunks"`
	Words      int64     `json:"words"`
	Questions  int       `json:"questions"`
	Machine    string    `json:"machine"` // GOOS/GOARCH, cores
	Load       string    `json:"load"`    // /proc/loadavg at the start and the end
	Started    string    `json:"started"` // RFC 3339
	Build      BuildInfo `json:"build"`
	Pipeline   *Ingest   `json:"pipeline,omitempty"`
	DiskBytes  Disk      `json:"disk_bytes"`
	Memory     Memory    `json:"memory"`
	Rows       []Row     `json:"rows"`
	Skipped    []string  `json:"skipped,omitempty"` // measurements left out, and why
	GoVersion  string    `json:"go_version"`
	GitVersion string    `json:"git_version,omitempty"`
}

// Ingest is the pipeline sample: generated notes published as source events
// through the real pipeline (embedded JetStream, chunk and index stages).
type Ingest struct {
	Docs         int     `json:"docs"`
	Chunks       int     `json:"chunks"`
	Seconds      float64 `json:"seconds"`
	ChunksPerSec float64 `json:"chunks_per_sec"`
}

// Disk is the size of the built indexes.
type Disk struct {
	SQLite  int64 `json:"sqlite"`
	Vectors int64 `json:"vectors"`
}

// Memory is measured with the store and the vector index open, after the
// searches.
type Memory struct {
	// IndexesRSSMB is VmRSS after the lexical and vector searches, before
	// the models are loaded: the store's and the vector index's share (and
	// the corpus generator's vocabulary, a few tens of MB).
	IndexesRSSMB float64 `json:"indexes_rss_mb,omitempty"`
	RSSMB        float64 `json:"rss_mb"`      // VmRSS at the end, the models loaded
	PeakRSSMB    float64 `json:"peak_rss_mb"` // VmHWM (the build included when it ran in this process)
	HeapMB       float64 `json:"heap_mb"`     // Go heap in use after a GC
}

// Row is one measurement of one engine.
type Row struct {
	// Measure is lexical, vector, fused, rerank or xquad-only (lexical
	// recall on the XQuAD paragraphs alone, the reference recall at scale
	// must keep).
	Measure string `json:"measure"`
	// Engine names the implementation ("fts5", "embedded-hnsw", ...).
	Engine  string  `json:"engine"`
	Queries int     `json:"queries"`
	P50MS   float64 `json:"p50_ms"`
	P95MS   float64 `json:"p95_ms"`
	// Recall is recall@10 of the XQuAD gold paragraphs (lexical, fused,
	// xquad-only) or of the exact float32 top-10 (vector); MRR the mean
	// reciprocal rank of the gold (0 when not measured).
	Recall float64 `json:"recall_at_10,omitempty"`
	MRR    float64 `json:"mrr,omitempty"`
	// RSSMB is the memory the engine holds where it is measured apart
	// (vector rows: VmRSS grown by opening and searching the embedded
	// index; hnswlib's process with its index loaded), in MB of 2^20 bytes.
	RSSMB float64 `json:"rss_mb,omitempty"`
	Note  string  `json:"note,omitempty"`
}

// WriteJSON writes r to path.
func (r *Result) WriteJSON(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write scale result: %w", err)
	}
	return nil
}

// ReadResult reads a result file.
func ReadResult(path string) (*Result, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scale result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("read scale result %s: %w", path, err)
	}
	if r.Chunks == 0 {
		return nil, fmt.Errorf("read scale result %s: no chunks: not a scale result", path)
	}
	return &r, nil
}

// SizeName is "100k" or "1M".
func SizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func num(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func mbOrDash(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MB", x)
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

// Markdown renders results (any sizes, smallest first) as two tables:
// per size, the build and its footprint; per measurement and engine, the
// latency and recall at each size side by side.
func Markdown(rs []*Result) string {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b *Result) int { return a.Chunks - b.Chunks })
	var b strings.Builder
	b.WriteString("| corpus | words | direct build | pipeline sample | SQLite | vectors | RSS: indexes, with models | Go heap | machine, load |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		pipe := "-"
		if r.Pipeline != nil {
			pipe = fmt.Sprintf("%.0f chunks/s (%d chunks)", r.Pipeline.ChunksPerSec, r.Pipeline.Chunks)
		}
		built := ""
		switch {
		case r.Build.Cached && r.Build.VectorsBuilt:
			built = ", SQLite from an earlier run"
		case r.Build.Cached:
			built = ", an earlier run's"
		}
		fmt.Fprintf(&b, "| %s chunks | %.1fM | %.0f chunks/s (%.0f s: SQLite %.0f s, vectors %.0f s%s) | %s | %s | %s | %s, %.0f MB | %.0f MB | %s, load %s |\n",
			SizeName(r.Chunks), float64(r.Words)/1e6, float64(r.Build.Chunks)/r.Build.Seconds, r.Build.Seconds,
			r.Build.StoreSeconds, r.Build.VectorSeconds, built, pipe, mb(r.DiskBytes.SQLite), mb(r.DiskBytes.Vectors),
			mbOrDash(r.Memory.IndexesRSSMB), r.Memory.RSSMB, r.Memory.HeapMB, r.Machine, r.Load)
	}
	b.WriteString("\n| measure | engine |")
	for _, r := range rs {
		n := SizeName(r.Chunks)
		fmt.Fprintf(&b, " %s p50 ms | %s p95 ms | %s recall@10 |", n, n, n)
	}
	b.WriteString(" notes |\n| --- | --- |")
	for range rs {
		b.WriteString(" --- | --- | --- |")
	}
	b.WriteString(" --- |\n")
	type key struct{ measure, engine string }
	var keys []key
	seen := map[key]bool{}
	for _, r := range rs {
		for _, row := range r.Rows {
			if k := (key{row.Measure, row.Engine}); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %s |", k.measure, k.engine)
		var notes, rss []string
		for _, r := range rs {
			i := slices.IndexFunc(r.Rows, func(x Row) bool { return x.Measure == k.measure && x.Engine == k.engine })
			if i < 0 {
				b.WriteString(" | | |")
				continue
			}
			row := r.Rows[i]
			fmt.Fprintf(&b, " %s | %s | %s |", num(row.P50MS), num(row.P95MS), num(row.Recall))
			if row.Note != "" && !slices.Contains(notes, row.Note) {
				notes = append(notes, row.Note)
			}
			if row.RSSMB > 0 {
				rss = append(rss, fmt.Sprintf("%s %.0f MB", SizeName(r.Chunks), row.RSSMB))
			}
		}
		if len(rss) > 0 {
			notes = append(notes, "RSS "+strings.Join(rss, ", "))
		}
		fmt.Fprintf(&b, " %s |\n", strings.Join(notes, "; "))
	}
	return b.String()
}

// Markers delimit the generated table in docs/benchmarks.md.
const (
	BeginMarker = "<!-- scale:begin -->"
	EndMarker   = "<!-- scale:end -->"
)

// ErrNoMarkers is returned when a document lacks the markers.
var ErrNoMarkers = errors.New("scale table markers not found")

// ReplaceTable puts table between the markers of doc, replacing what was
// there, and keeps the rest of doc byte for byte.
func ReplaceTable(doc, table string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return "", fmt.Errorf("%w (want %s ... %s in that order)", ErrNoMarkers, BeginMarker, EndMarker)
	}
	if strings.Count(doc, BeginMarker) != 1 || strings.Count(doc, EndMarker) != 1 {
		return "", fmt.Errorf("%w exactly once each", ErrNoMarkers)
	}
	head := doc[:i+len(BeginMarker)]
	return head + "\n" + strings.TrimRight(table, "\n") + "\n" + doc[j:], nil
}

// CurrentTable is the table between doc's markers ("" when it has none).
func CurrentTable(doc string) string {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return ""
	}
	return doc[i+len(BeginMarker) : j]
}
