package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/store"
)

// searchResult is one hit as search prints it.
type searchResult struct {
	Rank        int      `json:"rank"`
	Score       float64  `json:"score"`
	Title       string   `json:"title"`
	SectionPath []string `json:"section_path"`
	BlockID     string   `json:"block_id"`
	BlockIDs    []string `json:"block_ids"`
	DocID       string   `json:"doc_id"`
	ChunkID     string   `json:"chunk_id"`
	Lang        string   `json:"lang,omitempty"`
	Snippet     string   `json:"snippet"`
	Path        string   `json:"path,omitempty"`
	Link        string   `json:"link,omitempty"`
}

var siyuanID = regexp.MustCompile(`^\d{14}-[0-9a-z]+$`)

// deepLink points at the cited block: siyuan://blocks/<id> for SiYuan
// blocks, the file path otherwise.
func deepLink(h store.Hit) string {
	if siyuanID.MatchString(h.BlockID) {
		return "siyuan://blocks/" + h.BlockID
	}
	if h.Path != "" && !strings.HasPrefix(h.Path, "squad") {
		return "file://" + h.Path
	}
	return ""
}

func cmdSearch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	var c common
	c.register(fs, "warn")
	k := fs.Int("k", 10, "number of results")
	lang := fs.String("lang", "", "only chunks in this language (ru, en)")
	asJSON := fs.Bool("json", false, "print results as JSON")
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	query := strings.Join(words, " ")
	if strings.TrimSpace(query) == "" {
		return errors.New(`give a query: exocortex search "database view"`)
	}
	path := pipeline.DBPath(c.data)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no index at %s: run 'exocortex ingest PATH --data %s' first", path, c.data)
	}
	st, err := store.OpenReadOnly(path)
	if err != nil {
		return err
	}
	defer st.Close()
	hits, err := st.Search(ctx, query, store.SearchOptions{K: *k, Lang: *lang})
	if err != nil {
		return err
	}
	results := make([]searchResult, 0, len(hits))
	for i, h := range hits {
		results = append(results, searchResult{
			Rank: i + 1, Score: h.Score, Title: h.Title, SectionPath: h.SectionPath, BlockID: h.BlockID,
			BlockIDs: h.BlockIDs, DocID: h.DocID, ChunkID: h.ChunkID, Lang: h.Lang, Snippet: h.Snippet,
			Path: h.Path, Link: deepLink(h),
		})
	}
	if *asJSON {
		return printJSON(results)
	}
	if len(results) == 0 {
		fmt.Println("no results")
		return nil
	}
	for _, r := range results {
		fmt.Printf("%2d. %s  (score %.2f)\n", r.Rank, strings.Join(r.SectionPath, " > "), r.Score)
		fmt.Printf("    %s\n", oneLine(r.Snippet))
		fmt.Printf("    block %s", r.BlockID)
		if r.Link != "" {
			fmt.Printf("  %s", r.Link)
		}
		fmt.Println()
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
