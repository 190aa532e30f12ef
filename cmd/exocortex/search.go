package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/gateway"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/vectors"
	"github.com/exocortex/exocortex/workers/rerank"
	"github.com/exocortex/exocortex/workers/retrieve"
)

// searchFlags are search's command-line flags.
type searchFlags struct {
	c              common
	n              neural
	k              *int
	lang, mode     *string
	expand, asJSON *bool
	includeReports *bool
	facets         *bool
	timeout        *time.Duration
	scope          scopeFlags
}

func cmdSearch(ctx context.Context, args []string) error {
	fs := newFlags("search")
	f := &searchFlags{}
	f.c.register(fs, "warn")
	f.n.register(fs)
	f.k = fs.Int("k", 10, "number of results")
	f.lang = fs.String("lang", "", "only chunks in this language (ru, en)")
	f.mode = fs.String("mode", "", "retrieval mode: lexical, vector, hybrid or rerank (default: the fullest the installed models allow)")
	f.expand = fs.Bool("expand", false, "add graph neighbours (parent, ref, sibling, next; a link to a whole note adds its best chunk) after the results, as an answer's contexts would")
	f.timeout = fs.Duration("timeout", 60*time.Second, "how long to wait for the result")
	f.asJSON = fs.Bool("json", false, "print results as JSON")
	f.includeReports = fs.Bool("include-reports", false, includeReportsUsage)
	f.facets = fs.Bool("facets", false, facetsUsage)
	f.scope.register(fs)
	words, err := parse(fs, args)
	if err != nil {
		return err
	}
	query := strings.Join(words, " ")
	if err := f.check(query); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	ex := -1
	if *f.expand {
		ex = 0
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: newTraceID("q"), Question: query, Lang: *f.lang,
		Options: schemas.QueryOptions{Mode: *f.mode, K: *f.k, Lang: *f.lang, Expand: ex, NoAnswer: true,
			IncludeReports: *f.includeReports, Facets: *f.facets}}}
	scopeNotes, err := f.scope.scopeQuery("search", q, false)
	if err != nil {
		return err
	}
	cl, err := system.OpenClient(ctx, cfg, system.LocalOptions{Mode: *f.mode}, client.Options{SearchTimeout: *f.timeout, Log: f.c.logger(), Notice: printNote})
	if err != nil {
		return err
	}
	defer cl.Close()
	var notes []string
	if st, who, running := cl.Running(); running {
		notes = runningSettingsNotes(f.c, f.n, who, st, false)
		for _, note := range notes {
			printNote(note)
		}
	}
	res, err := cl.Search(ctx, q)
	if err != nil {
		return err
	}
	out, err := gateway.BuildSearchResult(q.Question, res, gateway.CLIMarks)
	if err != nil {
		return err
	}
	if *f.asJSON {
		out.Reasons = append(out.Reasons, scopeNotes...)
		out.Reasons = append(out.Reasons, notes...)
		return printJSON(out)
	}
	printSearch(res, out.Results)
	printFacets(out.Facets)
	return nil
}

// check refuses a bad query or flags; --no-models makes the mode lexical.
func (f *searchFlags) check(query string) error {
	if strings.TrimSpace(query) == "" && f.scope.isZero() {
		return errors.New(`give a query: exocortex search "database view" (or a scope to list: exocortex search --tag recipe)`)
	}
	if *f.k <= 0 {
		return &usageError{cmd: "search", msg: fmt.Sprintf("--k %d: want a positive number of results", *f.k)}
	}
	if err := checkLang(*f.lang); err != nil {
		return err
	}
	if f.n.noModels {
		// Applies to this query also when a running system answers it.
		if *f.mode != "" && *f.mode != schemas.ModeLexical {
			return &usageError{cmd: "search", msg: fmt.Sprintf("--no-models searches lexically: it cannot run --mode %s", *f.mode)}
		}
		*f.mode = schemas.ModeLexical
	}
	if !schemas.ValidMode(*f.mode) {
		return fmt.Errorf("--mode %q: want lexical, vector, hybrid or rerank", *f.mode)
	}
	return nil
}

// config is the system configuration search reads: the data directory's
// index, or, without one, the Qdrant collection alone.
func (f *searchFlags) config() (system.Config, error) {
	c := f.c
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}
	if err := f.n.apply(&cfg); err != nil {
		return cfg, err
	}
	if _, err := os.Stat(system.DBPath(c.data)); err != nil && c.nats == "" {
		if _, running := system.Running(c.data); running || f.n.store != vectors.KindQdrant {
			return cfg, fmt.Errorf("no index at %s: run 'exocortex ingest PATH --data %s' first", system.DBPath(c.data), c.data)
		}
		// The notes are on Qdrant (indexed from another machine): search
		// them as a retrieve worker without the SQLite file does, lexically
		// on the collection's lexical vectors.
		if *f.expand {
			return cfg, fmt.Errorf("--expand adds graph neighbours, which need the index at %s; with --vectors qdrant and no index file, leave it out", system.DBPath(c.data))
		}
		cfg.Stages, cfg.NoIndexFile = []string{retrieve.Stage().Name, rerank.Stage().Name}, true
		fmt.Fprintf(os.Stderr, "note: no index at %s: searching the Qdrant collection alone (lexically on its lexical vectors, no graph neighbours)\n", system.DBPath(c.data))
	}
	return cfg, nil
}

// printSearch prints the mode and the results, one block each.
func printSearch(res *schemas.QueryReranked, results []gateway.SearchHit) {
	fmt.Printf("mode %s", res.Mode)
	for _, r := range res.Reasons {
		fmt.Printf("  (%s)", r)
	}
	fmt.Println()
	if len(results) == 0 {
		fmt.Println("no results")
		return
	}
	for _, r := range results {
		report := ""
		if r.Report {
			report = "  [saved research report]"
		}
		fmt.Printf("%2d. %s  (%s)%s\n", r.Rank, strings.Join(r.SectionPath, " > "), scoreNote(r), report)
		fmt.Printf("    %s\n", oneLine(r.Snippet))
		fmt.Printf("    block %s", r.BlockID)
		if r.Link != "" {
			fmt.Printf("  %s", r.Link)
		}
		fmt.Println()
	}
}

// scoreNote says what ranked a result: the BM25 score (lexical mode), the
// cosine (vector), the RRF score with each retriever's rank and score
// (hybrid), the cross-encoder's score (rerank); a graph neighbour has none.
func scoreNote(r gateway.SearchHit) string {
	if strings.HasPrefix(r.Source, "graph:") {
		return "neighbour by " + strings.TrimPrefix(r.Source, "graph:")
	}
	kind := map[string]string{"lexical": "bm25", "vector": "cosine", "fused": "rrf", "rerank": "cross-encoder"}[r.Source]
	if kind == "" {
		kind = r.Source
	}
	note := fmt.Sprintf("%s %.4g", kind, r.Score)
	if r.Source == "fused" || r.Source == "rerank" {
		var parts []string
		if r.Lexical != nil {
			parts = append(parts, fmt.Sprintf("bm25 #%d %.4g", r.Lexical.Rank, r.Lexical.Score))
		}
		if r.Vector != nil {
			parts = append(parts, fmt.Sprintf("cosine #%d %.3f", r.Vector.Rank, r.Vector.Score))
		}
		if len(parts) > 0 {
			note += ": " + strings.Join(parts, ", ")
		}
	}
	return note
}

// includeReportsUsage is the help of search's, ask's and research's
// --include-reports.
const includeReportsUsage = "also search saved research reports (documents written by 'research --save', marked by their front matter or SiYuan attribute); by default they are left out, so results cite the notes themselves"

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
