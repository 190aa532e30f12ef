// Command benchtable writes the scale benchmark's Markdown table (see
// internal/scalebench) from its JSON results into a Markdown file
// (docs/benchmarks.md by default), between the lines <!-- scale:begin -->
// and <!-- scale:end -->, leaving the rest of the file as it was. With
// -print it only prints the table.
//
//	go run ./internal/tools/benchtable -doc docs/benchmarks.md .cache/scale/scale-100k.json .cache/scale/scale-1M.json
//
// With no result files it reads every scale-*.json in -dir (default
// .cache/scale, where `./task bench:scale` writes them). With -keep what
// the document's table has and the results do not stays: other sizes'
// corpus rows and columns (a run at 100k leaves the 1M measurements), and
// the cells of rows a partial run left out (hnswlib, rerank).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/exocortex/exocortex/internal/scalebench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	doc := fs.String("doc", filepath.Join("docs", "benchmarks.md"), "the Markdown file whose table to replace")
	dir := fs.String("dir", filepath.Join(".cache", "scale"), "where to find scale-*.json when no files are given")
	print := fs.Bool("print", false, "print the table instead of writing it into -doc")
	keep := fs.Bool("keep", false, "keep what -doc's table has and the results do not: other sizes' rows and columns, rows a partial run left out")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = filepath.Glob(filepath.Join(*dir, "scale-*.json")); err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no scale-*.json in %s: run ./task bench:scale first, or name the result files", *dir)
		}
	}
	var rs []*scalebench.Result
	for _, f := range files {
		r, err := scalebench.ReadResult(f)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	table := scalebench.Markdown(rs)
	raw, err := os.ReadFile(*doc)
	if err != nil && (*keep || !*print) {
		return fmt.Errorf("read %s: %w", *doc, err)
	}
	if *keep {
		table = scalebench.MergeTables(scalebench.CurrentTable(string(raw)), table)
	}
	if *print {
		_, err := io.WriteString(stdout, table)
		return err
	}
	out, err := scalebench.ReplaceTable(string(raw), table)
	if err != nil {
		if errors.Is(err, scalebench.ErrNoMarkers) {
			return fmt.Errorf("%s: %w", *doc, err)
		}
		return err
	}
	if out == string(raw) {
		fmt.Fprintf(stdout, "%s: the table is up to date (%d results)\n", *doc, len(rs))
		return nil
	}
	if err := os.WriteFile(*doc, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", *doc, err)
	}
	fmt.Fprintf(stdout, "%s: table written from %d results\n", *doc, len(rs))
	return nil
}
