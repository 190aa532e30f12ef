package gateway

import (
	"fmt"
	"sync"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/answer"
	"github.com/exocortex/exocortex/schemas"
)

// snippetAnalyzer is the full analysis snippets are cut with (loaded once:
// it holds the lemmatizer's dictionaries).
var snippetAnalyzer = sync.OnceValues(func() (*analysis.Analyzer, error) { return analysis.New(analysis.Full) })

// Marks enclose the matched words of a snippet.
type Marks struct{ Start, End string }

var (
	// CLIMarks are the terminal's: [word].
	CLIMarks = Marks{"[", "]"}
	// APIMarks are POST /v1/search's: **word** (snippets are plain text, so
	// ** only ever marks a match).
	APIMarks = Marks{"**", "**"}
)

// BuildSearchResult turns the contexts a search query got from the running
// system (kb.query.reranked of a query with NoAnswer) into the hits `exocortex
// search --json` prints (matches in [ ]) and POST /v1/search returns (in
// ** **): plain-text snippets, the block's link, each retriever's rank.
func BuildSearchResult(query string, res *schemas.QueryReranked, marks Marks) (*SearchResult, error) {
	an, err := snippetAnalyzer()
	if err != nil {
		return nil, fmt.Errorf("search snippets: %w", err)
	}
	aq := an.Query(query)
	out := &SearchResult{Query: query, Scope: res.Options.Scope, Mode: res.Mode, Reasons: res.Reasons, TimingsMS: res.TimingsMS, Results: make([]SearchHit, 0, len(res.Contexts)),
		Facets: res.Facets}
	for _, cx := range res.Contexts {
		h := SearchHit{
			Rank: cx.Rank, Score: cx.Score, ScoreKind: scoreKind(cx.Source), Title: cx.Title, SectionPath: cx.SectionPath,
			BlockID: cx.BlockID, BlockIDs: cx.BlockIDs, DocID: cx.DocID, ChunkID: cx.ChunkID, Lang: cx.Lang, Path: cx.Path,
			Link:    answer.Link(cx.BlockID, cx.Path),
			Snippet: an.Snippet(analysis.PlainText(cx.Text), aq, analysis.SnippetOptions{Tokens: 32, MarkStart: marks.Start, MarkEnd: marks.End, Ellipsis: "…"}),
			Source:  cx.Source,
			Lexical: cx.Lexical, Vector: cx.Vector, Report: cx.Report, Updated: cx.Updated,
		}
		if h.SectionPath == nil {
			h.SectionPath = []string{}
		}
		if h.BlockIDs == nil {
			h.BlockIDs = []string{}
		}
		out.Results = append(out.Results, h)
	}
	return out, nil
}

// scoreKind names what a hit's score is: bm25 (lexical), cosine (vector),
// rrf (fused), cross-encoder (rerank); a graph neighbour has none.
func scoreKind(source string) string {
	switch source {
	case "lexical":
		return "bm25"
	case "vector":
		return "cosine"
	case "fused":
		return "rrf"
	case "rerank":
		return "cross-encoder"
	}
	return ""
}
