package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/lexical"
	"github.com/exocortex/exocortex/schemas"
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
	// Chunks, when not nil, keeps only the chunks it holds (a scope:
	// AllowedChunks). The memory engine applies it inside its top-k pass;
	// FTS5 reads its ranked matches until K allowed ones are found. Either
	// way a narrow scope still gets K hits when K of its chunks match.
	Chunks *ChunkSet
}

// Hit is one matching chunk.
type Hit struct {
	ChunkID string
	DocID   string
	// Title and Path are the document's. A chunk whose document's
	// structure has not arrived is not found.
	Title       string
	Path        string
	SectionPath []string
	// IndexTitle is what the full-text index's title and heads columns
	// hold of the document: its title and labels (aliases, tags). Set by
	// Passages only (the index stage makes lexical vectors of it).
	IndexTitle string
	// BlockID is the block a citation of the chunk points at (the first of BlockIDs).
	BlockID  string
	BlockIDs []string
	// BlockSpans place each block's text in Text (nil for a chunk indexed
	// before block spans existed).
	BlockSpans []schemas.BlockSpan
	Lang       string
	// Score is the negated BM25: higher is better. Scores compare within
	// one query only.
	Score float64
	// Snippet is the window of the chunk's text that matches best, cut from
	// the original text (case, ё and punctuation kept) as plain text (its
	// Markdown marks dropped: analysis.PlainText), matched words between the
	// marks.
	Snippet string
	// Text is the chunk's text as stored.
	Text string
	// Report marks a chunk of a saved research report (see ReportDocs).
	Report bool
}

// Search ranks chunks against the user's text with BM25. Any text is a valid
// query: it is split into words, so operators and punctuation have no special
// meaning, and any of the words may match. Text without words gives no hits.
func (s *Store) Search(ctx context.Context, query string, opts SearchOptions) ([]Hit, error) {
	a, err := s.queryAnalyzer(ctx)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	idx, err := s.lexicalRanker(ctx)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	aq, err := s.dropCommon(ctx, a.Query(query), s.docFreqOf(idx))
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	expr := matchExpr(aq)
	if expr == "" {
		return nil, nil
	}
	p := s.withDefaults(opts, a.Mode())
	if opts.Chunks != nil && opts.Chunks.Len() == 0 {
		return nil, nil
	}
	if idx == nil {
		if opts.Chunks != nil {
			return s.searchFTSIn(ctx, query, a, aq, expr, opts.Lang, opts.Chunks, p)
		}
		return s.searchFTS(ctx, query, a, aq, expr, opts.Lang, p)
	}
	w := p.weights
	ranked := idx.SearchWith(lexical.Query{Words: aq.Words, Terms: aq.Terms}, p.k,
		lexical.Weights{w.Body, w.Lemmas, w.Title, w.Section, w.Heads},
		lexical.SearchOptions{Lang: opts.Lang, Allow: opts.Chunks.Allow()})
	if err := idx.Err(); err != nil {
		// A list of the snapshot it was read from is damaged (found
		// when first searched): search again without it.
		if err := s.lexDamaged(ctx, idx, err); err != nil {
			return nil, fmt.Errorf("search %q: %w", query, err)
		}
		return s.Search(ctx, query, opts)
	}
	return s.hitsByID(ctx, query, a, aq, ranked, p.tokens, p.start, p.end)
}

// docFreqOf counts terms' rows in the memory index idx, or in the FTS5
// vocabulary when idx is nil.
func (s *Store) docFreqOf(idx *lexical.Index) docFreq {
	if idx == nil {
		return s.vocabDocFreq
	}
	return func(_ context.Context, terms []string, limit int) (map[string]int, error) {
		out := make(map[string]int, len(terms))
		for _, t := range terms {
			if idx.DocFreqAbove(t, limit) {
				out[t] = limit + 1
			}
		}
		return out, nil
	}
}

// LexicalQuery is text as Search ranks it on the memory index idx
// (LexicalIndex): the analyzer's words and terms with the common ones
// dropped, and the column weights opts gives or the store's. With
// idx.SearchWith it is Search's ranking before any K or scope: the brute
// force a scoped search is checked against (the scale suite).
func (s *Store) LexicalQuery(ctx context.Context, idx *lexical.Index, text string, opts SearchOptions) (lexical.Query, lexical.Weights, error) {
	a, err := s.queryAnalyzer(ctx)
	if err != nil {
		return lexical.Query{}, lexical.Weights{}, fmt.Errorf("lexical query %q: %w", text, err)
	}
	aq, err := s.dropCommon(ctx, a.Query(text), s.docFreqOf(idx))
	if err != nil {
		return lexical.Query{}, lexical.Weights{}, fmt.Errorf("lexical query %q: %w", text, err)
	}
	w := s.withDefaults(opts, a.Mode()).weights
	return lexical.Query{Words: aq.Words, Terms: aq.Terms}, lexical.Weights{w.Body, w.Lemmas, w.Title, w.Section, w.Heads}, nil
}

// lexicalRanker returns the in-memory index to rank with, or nil when the
// store ranks in FTS5 (by choice, or because the index is cold).
func (s *Store) lexicalRanker(ctx context.Context) (*lexical.Index, error) {
	if s.LexicalEngine() != LexicalMemory {
		return nil, nil
	}
	idx, err := s.LexicalIndex(ctx)
	if errors.Is(err, ErrLexicalCold) {
		// A store that leaves its files untouched and has no index to
		// load cheaply: FTS5 ranks the same rows by the same BM25.
		zerolog.Ctx(ctx).Debug().Err(err).Msg("lexical search on FTS5")
		return nil, nil
	}
	return idx, err
}

// searchParams are a search's options with their defaults filled in.
type searchParams struct {
	k          int
	weights    Weights
	start, end string // snippet marks
	tokens     int    // snippet length
}

// withDefaults fills in opts' defaults: the store's weights, then the
// analyzer mode's (mode), when opts gives none.
func (s *Store) withDefaults(opts SearchOptions, mode analysis.Mode) searchParams {
	p := searchParams{k: opts.K, weights: opts.Weights, start: opts.MarkStart, end: opts.MarkEnd, tokens: opts.SnippetTokens}
	if p.k <= 0 {
		p.k = DefaultK
	}
	p.k = min(p.k, MaxK)
	if p.weights == (Weights{}) {
		p.weights = s.Weights
	}
	if p.weights == (Weights{}) {
		p.weights = WeightsFor(mode)
	}
	if p.start == "" && p.end == "" {
		p.start, p.end = DefaultMarkStart, DefaultMarkEnd
	}
	if p.tokens == 0 {
		p.tokens = DefaultSnippetTokens
	}
	p.tokens = min(p.tokens, 64)
	return p
}

// searchFTS ranks in the full-text index alone, then joins the top k: the
// join and the text are paid for k rows, not for every row that matches.
func (s *Store) searchFTS(ctx context.Context, query string, a *analysis.Analyzer, aq analysis.Query,
	expr, lang string, p searchParams) ([]Hit, error) {
	w := p.weights
	rank := fmt.Sprintf("bm25(%g, %g, %g, %g, %g)", w.Body, w.Lemmas, w.Title, w.Section, w.Heads)
	inner := `SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?`
	args := []any{expr, rank, p.k}
	if lang != "" {
		// A language filter needs the chunk's row; rank over the join then.
		inner = `SELECT f.rowid, f.rank FROM chunks_fts f JOIN chunks c ON c.id = f.rowid
WHERE chunks_fts MATCH ? AND f.rank MATCH ? AND c.lang IN (?, '') ORDER BY f.rank LIMIT ?`
		args = []any{expr, rank, lang, p.k}
	}
	q := `
SELECT c.chunk_id, c.doc_id, coalesce(d.title, ''), coalesce(d.path, ''), c.section_path, c.block_ids, c.lang,
	-f.rank, c.text, c.block_spans, exists(SELECT 1 FROM report_docs r WHERE r.doc_id = c.doc_id)
FROM (` + inner + `) f
JOIN chunks c ON c.id = f.rowid
JOIN documents d ON d.doc_id = c.doc_id
ORDER BY f.rank`

	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var section, blocks string
		var spans sql.NullString
		if err := rows.Scan(&h.ChunkID, &h.DocID, &h.Title, &h.Path, &section, &blocks, &h.Lang,
			&h.Score, &h.Text, &spans, &h.Report); err != nil {
			return nil, fmt.Errorf("search %q: %w", query, err)
		}
		finishHit(&h, section, blocks, spans, a, aq, p.tokens, p.start, p.end)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	return hits, nil
}

// searchFTSIn is searchFTS within a chunk set: FTS5 ranks every match
// (as it does for ORDER BY rank anyway), and the rows are read in rank
// order until k of them are in the set; only those are joined.
func (s *Store) searchFTSIn(ctx context.Context, query string, a *analysis.Analyzer, aq analysis.Query,
	expr, lang string, set *ChunkSet, p searchParams) ([]Hit, error) {
	w := p.weights
	rank := fmt.Sprintf("bm25(%g, %g, %g, %g, %g)", w.Body, w.Lemmas, w.Title, w.Section, w.Heads)
	q := `SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH ? ORDER BY rank`
	args := []any{expr, rank}
	if lang != "" {
		q = `SELECT f.rowid, f.rank FROM chunks_fts f JOIN chunks c ON c.id = f.rowid
WHERE chunks_fts MATCH ? AND f.rank MATCH ? AND c.lang IN (?, '') ORDER BY f.rank`
		args = append(args, lang)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	var ranked []lexical.Hit
	for rows.Next() && len(ranked) < p.k {
		var id int64
		var r float64
		if err := rows.Scan(&id, &r); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search %q: %w", query, err)
		}
		if set.HasRow(id) {
			ranked = append(ranked, lexical.Hit{ID: id, Score: -r})
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	return s.hitsByID(ctx, query, a, aq, ranked, p.tokens, p.start, p.end)
}

// finishHit decodes a hit's lists and cuts its snippet.
func finishHit(h *Hit, section, blocks string, spans sql.NullString, a *analysis.Analyzer, aq analysis.Query, tokens int, start, end string) {
	h.SectionPath, h.BlockIDs = parseList(section), parseList(blocks)
	h.BlockSpans = parseSpans(spans)
	if len(h.BlockIDs) > 0 {
		h.BlockID = h.BlockIDs[0]
	}
	if tokens > 0 {
		h.Snippet = a.Snippet(analysis.PlainText(h.Text), aq, analysis.SnippetOptions{
			Tokens: tokens, MarkStart: start, MarkEnd: end, Ellipsis: DefaultEllipsis})
	}
}

// hitsByID looks up ranked rows (the in-memory index's top k) in rank
// order. A row whose chunk or document is gone by now is left out.
func (s *Store) hitsByID(ctx context.Context, query string, a *analysis.Analyzer, aq analysis.Query, ranked []lexical.Hit,
	tokens int, start, end string) ([]Hit, error) {
	if len(ranked) == 0 {
		return nil, nil
	}
	args := make([]any, len(ranked))
	for i, r := range ranked {
		args[i] = r.ID
	}
	rows, err := s.r.QueryContext(ctx, `
SELECT c.id, c.chunk_id, c.doc_id, coalesce(d.title, ''), coalesce(d.path, ''), c.section_path, c.block_ids, c.lang,
	c.text, c.block_spans, exists(SELECT 1 FROM report_docs r WHERE r.doc_id = c.doc_id)
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.id IN (`+strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	defer rows.Close()
	byID := make(map[int64]*Hit, len(ranked))
	for rows.Next() {
		var id int64
		var h Hit
		var section, blocks string
		var spans sql.NullString
		if err := rows.Scan(&id, &h.ChunkID, &h.DocID, &h.Title, &h.Path, &section, &blocks, &h.Lang,
			&h.Text, &spans, &h.Report); err != nil {
			return nil, fmt.Errorf("search %q: %w", query, err)
		}
		finishHit(&h, section, blocks, spans, a, aq, tokens, start, end)
		byID[id] = &h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	hits := make([]Hit, 0, len(ranked))
	for _, r := range ranked {
		if h := byID[r.ID]; h != nil {
			h.Score = r.Score
			hits = append(hits, *h)
		}
	}
	return hits, nil
}

// CommonFraction and CommonMin decide when a query term is too common to
// match on: it occurs in more than CommonFraction of the chunks and in more
// than CommonMin of them. Ranking cost grows with the rows that match, and
// such a term matches a large part of the index while adding little to BM25
// (its IDF is low); it is left out when the query has rarer terms. Small
// indexes (under CommonMin/CommonFraction chunks) are never affected.
var (
	CommonFraction = 0.05
	CommonMin      = 2000.0
)

// dropCommon removes the query's common terms (see CommonFraction), unless
// that would leave nothing to match.
// docFreq counts the rows holding each term in any column; a count may be
// left out, or capped at limit+1, when it is at most limit or above it.
type docFreq func(ctx context.Context, terms []string, limit int) (map[string]int, error)

func (s *Store) dropCommon(ctx context.Context, q analysis.Query, df docFreq) (analysis.Query, error) {
	n, err := s.chunkCount(ctx)
	if err != nil || float64(n)*CommonFraction <= CommonMin || CommonFraction <= 0 {
		return q, err
	}
	limit := int(float64(n) * CommonFraction)
	all := append(append([]string(nil), q.Words...), q.Terms...)
	if len(all) < 2 {
		return q, nil
	}
	counts, err := df(ctx, all, limit)
	if err != nil {
		return q, err
	}
	common := map[string]bool{}
	for term, docs := range counts {
		if docs > limit {
			common[term] = true
		}
	}
	if len(common) == 0 {
		return q, nil
	}
	keep := func(ts []string) []string {
		var out []string
		for _, t := range ts {
			if !common[t] {
				out = append(out, t)
			}
		}
		return out
	}
	out := analysis.Query{Words: keep(q.Words), Terms: keep(q.Terms)}
	if out.Empty() {
		return q, nil
	}
	return out, nil
}

// vocabDocFreq reads the terms' row counts from the FTS5 vocabulary.
func (s *Store) vocabDocFreq(ctx context.Context, terms []string, _ int) (map[string]int, error) {
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := s.r.QueryContext(ctx, `SELECT term, doc FROM chunks_vocab WHERE term IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(terms)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var term string
		var docs int
		if err := rows.Scan(&term, &docs); err != nil {
			return nil, err
		}
		out[term] = docs
	}
	return out, rows.Err()
}

// chunkCount is the number of chunks, re-read at most every 10 seconds.
func (s *Store) chunkCount(ctx context.Context) (int, error) {
	if c := s.count.Load(); c != nil && time.Since(c.at) < 10*time.Second {
		return c.n, nil
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count chunks: %w", err)
	}
	s.count.Store(&countAt{n: n, at: time.Now()})
	return n, nil
}

type countAt struct {
	n  int
	at time.Time
}
