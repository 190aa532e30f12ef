package store

import (
	"context"
	"fmt"

	"github.com/exocortex/exocortex/analysis"
)

// Weights are BM25 weights of the full-text columns; a larger weight makes a
// match in that column count for more.
type Weights struct {
	Body, Lemmas, Title, Section, Heads float64
}

// DefaultWeights are the weights of an index with lemmas (analyzers stem
// and full), tuned on the dev part of XQuAD ru+en (eval.PartDev; see
// eval/tune_test.go): a lemma match counts most, a title or heading match
// more than a body word.
var DefaultWeights = Weights{Body: 0.25, Lemmas: 3, Title: 1, Section: 0.75, Heads: 1}

// PlainWeights are the weights of an index without lemmas (analyzer plain).
var PlainWeights = Weights{Body: 1, Title: 2, Section: 1.5}

// WeightsFor returns the default weights for an analysis mode.
func WeightsFor(mode analysis.Mode) Weights {
	if mode == analysis.Plain {
		return PlainWeights
	}
	return DefaultWeights
}

// Search defaults and limits.
const (
	DefaultK             = 10
	MaxK                 = 1000
	DefaultSnippetTokens = 16
	DefaultMarkStart     = "["
	DefaultMarkEnd       = "]"
	DefaultEllipsis      = "…"
)

// SearchOptions tune Search; the zero value gives the defaults.
type SearchOptions struct {
	// K is how many hits to return (DefaultK when 0, at most MaxK).
	K int
	// Lang, when set ("ru", "en"), keeps chunks in that language and chunks
	// whose language is undetermined.
	Lang string
	// Weights override the store's Weights when not zero.
	Weights Weights
	// MarkStart and MarkEnd surround each matched word in the snippet
	// (DefaultMarkStart and DefaultMarkEnd when both are empty).
	MarkStart, MarkEnd string
	// SnippetTokens is the snippet's length in words (DefaultSnippetTokens
	// when 0, at most 64); negative leaves Hit.Snippet empty.
	SnippetTokens int
}

// Hit is one matching chunk.
type Hit struct {
	ChunkID string
	DocID   string
	// Title and Path are the document's; empty until its structure arrives.
	Title       string
	Path        string
	SectionPath []string
	// BlockID is the block a citation of the chunk points at (the first of BlockIDs).
	BlockID  string
	BlockIDs []string
	Lang     string
	// Score is the negated BM25: higher is better. Scores compare within
	// one query only.
	Score float64
	// Snippet is the window of the chunk's text that matches best, cut from
	// the original text (case, ё and punctuation kept), matched words between
	// the marks.
	Snippet string
	// Text is the chunk's text as stored.
	Text string
}

// Search ranks chunks against the user's text with BM25. Any text is a valid
// query: it is split into words, so operators and punctuation have no special
// meaning, and any of the words may match. Text without words gives no hits.
func (s *Store) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	a, err := s.queryAnalyzer(ctx)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	aq := a.Query(query)
	expr := matchExpr(aq)
	if expr == "" {
		return nil, nil
	}
	k := opts.K
	if k <= 0 {
		k = DefaultK
	}
	k = min(k, MaxK)
	w := opts.Weights
	if w == (Weights{}) {
		w = s.Weights
	}
	if w == (Weights{}) {
		w = WeightsFor(a.Mode())
	}
	start, end := opts.MarkStart, opts.MarkEnd
	if start == "" && end == "" {
		start, end = DefaultMarkStart, DefaultMarkEnd
	}
	tokens := opts.SnippetTokens
	if tokens == 0 {
		tokens = DefaultSnippetTokens
	}
	tokens = min(tokens, 64)

	q := `
SELECT c.chunk_id, c.doc_id, coalesce(d.title, ''), coalesce(d.path, ''), c.section_path, c.block_ids, c.lang,
	-f.rank, c.text
FROM chunks_fts f
JOIN chunks c ON c.id = f.rowid
LEFT JOIN documents d ON d.doc_id = c.doc_id
WHERE chunks_fts MATCH ? AND f.rank MATCH ?`
	args := []any{expr, fmt.Sprintf("bm25(%g, %g, %g, %g, %g)", w.Body, w.Lemmas, w.Title, w.Section, w.Heads)}
	if opts.Lang != "" {
		q += ` AND c.lang IN (?, '')`
		args = append(args, opts.Lang)
	}
	q += ` ORDER BY f.rank LIMIT ?`
	args = append(args, k)

	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var section, blocks string
		if err := rows.Scan(&h.ChunkID, &h.DocID, &h.Title, &h.Path, &section, &blocks, &h.Lang,
			&h.Score, &h.Text); err != nil {
			return nil, fmt.Errorf("search %q: %w", query, err)
		}
		h.SectionPath, h.BlockIDs = parseList(section), parseList(blocks)
		if len(h.BlockIDs) > 0 {
			h.BlockID = h.BlockIDs[0]
		}
		if tokens > 0 {
			h.Snippet = a.Snippet(h.Text, aq, analysis.SnippetOptions{
				Tokens: tokens, MarkStart: start, MarkEnd: end, Ellipsis: DefaultEllipsis})
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	return hits, nil
}
