package vectors

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/analysis"
)

// SparseVector is a lexical vector: term ids (LexicalTermID) and their
// weights, indices strictly increasing.
type SparseVector struct {
	Indices []uint32
	Values  []float32
}

// Empty reports whether v has no terms.
func (v SparseVector) Empty() bool { return len(v.Indices) == 0 }

// LexicalStore is implemented by a store that also searches the chunks'
// lexical vectors (the Qdrant store over a collection with its sparse
// vector), so a retrieve worker needs no SQLite file. Check HasLexical: a
// collection created before the sparse vector existed has none.
type LexicalStore interface {
	Store
	// HasLexical reports whether the store keeps and searches Point.Sparse;
	// when not, the string says why.
	HasLexical() (bool, string)
	// SearchLexical returns up to K points scored by the sparse dot product
	// with q, each query term weighted by its IDF over the store
	// (ln(1 + (N - n + 0.5)/(n + 0.5)), N points in the collection, n of
	// them holding the term), best first, with their Passage. Only points sharing a term
	// with q are returned. Filter.Lang keeps points in that language and
	// points whose language is undetermined, as the SQLite lexical search
	// does.
	SearchLexical(ctx context.Context, q SparseVector, opts SearchOptions) ([]Result, error)
	// Passages returns the stored Passage of each of ids that is stored
	// (by id; unknown ids are left out).
	Passages(ctx context.Context, ids []string) (map[string]string, error)
	// CountWhere is the number of points the filter matches (Filter.Lang
	// exactly: "" matches every point).
	CountWhere(ctx context.Context, f Filter) (int, error)
}

// LexicalWeights weigh a term's occurrences in each field of a chunk, as
// the SQLite full-text index's column weights do (store.Weights): Body,
// Title and Section hold the words, Lemmas and Heads the lemmas.
type LexicalWeights struct {
	Body, Lemmas, Title, Section, Heads float64
}

// Lexical vector parameters. The weights are those of the SQLite index
// (store.DefaultWeights and store.PlainWeights; a test keeps them equal);
// K1 and B are FTS5's BM25 constants. AvgLen is the average length in
// terms of a chunk's five fields together: FTS5 reads the real average at
// query time; a sparse vector is written once, so its length
// normalisation uses this constant, the average measured on the test
// corpora (252 terms per chunk on the SiYuan user guide, 211 on XQuAD ru+en
// paragraphs; with 250 the Qdrant lexical top 10 overlaps the SQLite one
// by 0.986 and 0.987, with 400 by 0.946 and 0.966).
var (
	LexicalDefaultWeights = LexicalWeights{Body: 0.25, Lemmas: 3, Title: 1, Section: 0.75, Heads: 1}
	LexicalPlainWeights   = LexicalWeights{Body: 1, Title: 2, Section: 1.5}
)

// LexicalFormat marks how a point's lexical vector and passage were made
// (the payload field lex_format): exocortex check reports the points of
// an older format, and check --repair rewrites them in place. Raise it
// whenever LexicalDoc's output for the same chunk changes.
//
//   - 1 (no marker): the first format; its title field held the
//     document's title alone.
//   - 2: the title field holds the title and the document's labels
//     (aliases, tags), as the full-text index's title and heads columns
//     do (store.Hit.IndexTitle).
//   - 3: the point carries its document's scope metadata (PointMeta:
//     notebook, dirs, tags, time), so payload filters see it; check
//     --repair rewrites older points with it.
const LexicalFormat = 3

const (
	LexicalK1     = 1.2
	LexicalB      = 0.75
	LexicalAvgLen = 250.0
)

// Term id fields: a word (the body, title and section columns) and a lemma
// or stem (the lemmas and heads columns) are different dimensions, as the
// SQLite query matches words and lemmas in different columns.
const (
	lexFieldWord  = "w:"
	lexFieldLemma = "l:"
)

// LexicalTermID is the sparse dimension of a term in a field: the 32-bit
// FNV-1a hash of field + term. A hash needs no vocabulary shared between
// the index writer and the retrieve workers (stateless on every machine,
// stable across restarts and collections); two terms colliding merge their
// postings, which at a million distinct terms happens to a few hundred rare
// pairs and costs only a little precision on them.
func LexicalTermID(field, term string) uint32 {
	// hash/fnv's New32a, inlined: no allocation per term.
	const offset32, prime32 = 2166136261, 16777619
	h := uint32(offset32)
	for i := 0; i < len(field); i++ {
		h ^= uint32(field[i])
		h *= prime32
	}
	for i := 0; i < len(term); i++ {
		h ^= uint32(term[i])
		h *= prime32
	}
	return h
}

// LexicalFields are the texts of one chunk a lexical vector is made of
// (store.Store's full-text row: the chunk's text, its document's title,
// its section path).
type LexicalFields struct {
	Text    string
	Title   string
	Section []string
}

// LexicalDoc is a chunk's lexical vector: for each word (and each lemma),
// its BM25 term-frequency part, f·(K1+1) / (f + K1·(1 - B + B·len/AvgLen)),
// where f sums the term's occurrences weighted by field. With the IDF that
// the store applies at query time, the sparse dot product with
// LexicalQuery's vector is the BM25 score of the SQLite index, up to the
// length normalisation's constant AvgLen and Qdrant's IDF, which adds 1
// inside the logarithm.
func LexicalDoc(a *analysis.Analyzer, f LexicalFields) SparseVector {
	w := LexicalDefaultWeights
	if a.Mode() == analysis.Plain {
		w = LexicalPlainWeights
	}
	section := strings.Join(f.Section, " / ")
	body, lemmas := a.Index(f.Text)
	cols := []struct {
		field  string
		weight float64
		text   string
	}{
		{lexFieldWord, w.Body, body},
		{lexFieldLemma, w.Lemmas, lemmas},
		{lexFieldWord, w.Title, a.Words(f.Title)},
		{lexFieldWord, w.Section, a.Words(section)},
		{lexFieldLemma, w.Heads, a.Lemmas(f.Title + " / " + section)},
	}
	tf := make(map[uint32]float64, 256)
	n := 0
	for _, c := range cols {
		for _, t := range strings.Fields(c.text) {
			n++
			if c.weight > 0 {
				tf[LexicalTermID(c.field, t)] += c.weight
			}
		}
	}
	norm := LexicalK1 * (1 - LexicalB + LexicalB*float64(n)/LexicalAvgLen)
	return sparseOf(tf, func(f float64) float64 { return f * (LexicalK1 + 1) / (f + norm) })
}

// LexicalQuery is a query's lexical vector: weight 1 for each of its words
// and terms (analysis.Analyzer.Query), as the SQLite search ORs them.
func LexicalQuery(q analysis.Query) SparseVector {
	tf := map[uint32]float64{}
	for _, t := range q.Words {
		tf[LexicalTermID(lexFieldWord, t)] = 1
	}
	for _, t := range q.Terms {
		tf[LexicalTermID(lexFieldLemma, t)] = 1
	}
	return sparseOf(tf, func(f float64) float64 { return f })
}

func sparseOf(tf map[uint32]float64, value func(float64) float64) SparseVector {
	v := SparseVector{Indices: make([]uint32, 0, len(tf)), Values: make([]float32, 0, len(tf))}
	for id := range tf {
		v.Indices = append(v.Indices, id)
	}
	slices.Sort(v.Indices)
	for _, id := range v.Indices {
		v.Values = append(v.Values, float32(value(tf[id])))
	}
	return v
}

// checkSparse rejects a sparse vector Qdrant would refuse: lengths that
// differ, repeated indices, non-finite values.
func checkSparse(v SparseVector) error {
	if len(v.Indices) != len(v.Values) {
		return fmt.Errorf("sparse vector has %d indices and %d values: %w", len(v.Indices), len(v.Values), ErrInvalid)
	}
	seen := make(map[uint32]bool, len(v.Indices))
	for i, id := range v.Indices {
		if seen[id] {
			return fmt.Errorf("sparse vector repeats index %d: %w", id, ErrInvalid)
		}
		seen[id] = true
		if f := float64(v.Values[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("sparse vector has a non-finite value at index %d: %w", id, ErrInvalid)
		}
	}
	return nil
}
