package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/exocortex/exocortex/internal/maintenance"
	"github.com/exocortex/exocortex/internal/system"
)

// exitDifferences is check's exit code when the index differs from its
// sources (0: it does not; 1: the check failed).
const exitDifferences = 4

// errDifferences is a check that found differences (printed already).
var errDifferences = errors.New("differences found")

func cmdCheck(ctx context.Context, args []string) error {
	err := check(ctx, args)
	if errors.Is(err, errDifferences) {
		os.Exit(exitDifferences)
	}
	return err
}

func check(ctx context.Context, args []string) error {
	fs := newFlags("check")
	var c common
	c.register(fs, "warn")
	var n neural
	n.register(fs)
	var br bridge
	fs.StringVar(&br.url, "siyuan", "", "SiYuan kernel to compare, such as http://127.0.0.1:6806 (the API token from EXOCORTEX_SIYUAN_TOKEN); "+
		"default: the kernel the system's bridge last used")
	fs.StringVar(&br.config, "siyuan-config", "", "SiYuan bridge settings, a JSON file (as for up): the kernel to compare and its notebooks")
	var forget multiFlag
	fs.Var(&forget, "forget", "an ingested folder removed for good (repeatable): its documents count as gone, and --repair deletes them and forgets the folder")
	repair := fs.Bool("repair", false, "resend what is missing or stale, delete what should be gone, wait until the pipeline settles and check again")
	asJSON := fs.Bool("json", false, "print a JSON report")
	quiet := fs.Bool("quiet", false, "no progress lines")
	settle := fs.Duration("timeout", 10*time.Minute, "how long to wait for the pipeline to settle, before the check and after a repair")
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := c.requireData(); err != nil {
		return err
	}
	if _, err := os.Stat(system.DBPath(c.data)); err != nil {
		return fmt.Errorf("no index at %s: run 'exocortex ingest PATH --data %s' first", system.DBPath(c.data), c.data)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
	}
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: c.logger()}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	sy, err := br.roleConfig()
	if err != nil {
		return err
	}
	opts := maintenance.CheckOptions{Paths: paths, Forget: forget, Settle: *settle}
	if sy != nil {
		opts.Sources = append(opts.Sources, &sy.Config)
	}
	// The first line after a second: a small check shows none.
	pr := &checkProgress{quiet: *quiet, last: time.Now().Add(500 * time.Millisecond)}
	opts.Progress = pr.update
	if !*repair {
		return runCheck(ctx, cfg, opts, pr, *asJSON)
	}
	return runRepair(ctx, cfg, opts, pr, *asJSON)
}

// runCheck checks and prints the report.
func runCheck(ctx context.Context, cfg system.Config, opts maintenance.CheckOptions, pr *checkProgress, asJSON bool) error {
	rep, err := maintenance.Check(ctx, cfg, opts)
	pr.done()
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(rep); err != nil {
			return err
		}
	} else {
		printCheck(rep)
	}
	if !rep.Clean() {
		return errDifferences
	}
	return nil
}

// runRepair repairs and prints the checks before and after, and what it did.
func runRepair(ctx context.Context, cfg system.Config, opts maintenance.CheckOptions, pr *checkProgress, asJSON bool) error {
	res, err := maintenance.Repair(ctx, cfg, opts)
	pr.done()
	if err != nil {
		if res != nil && res.Before != nil && !asJSON {
			printCheck(res.Before)
		}
		return err
	}
	if asJSON {
		if err := printJSON(res); err != nil {
			return err
		}
	} else {
		if res.Before.Clean() {
			printCheck(res.Before)
			return nil
		}
		printRepair(res)
	}
	if !res.After.Clean() {
		return errDifferences
	}
	return nil
}

// printRepair prints the check before, what the repair did, and the check after.
func printRepair(res *maintenance.RepairResult) {
	printCheck(res.Before)
	fmt.Printf("repair: %d ingested, %d resent, %d deleted, %d orphans removed", res.Ingested, res.Resent, res.Deleted, res.Dropped)
	if res.Rewritten > 0 {
		fmt.Printf(", %s rewritten", plural(res.Rewritten, "point's lexical vector", "points' lexical vectors"))
	}
	if res.Unrepaired > 0 {
		fmt.Printf(", %s left for you", plural(res.Unrepaired, "difference", "differences"))
	}
	fmt.Println("; checked again after the pipeline settled:")
	printCheck(res.After)
}

// printCheck prints a report: one line per difference, notes, a summary.
func printCheck(rep *maintenance.CheckReport) {
	for _, d := range rep.Differences {
		fmt.Println(d.String())
	}
	for _, n := range rep.Notes {
		fmt.Println("note: " + n)
	}
	var src []string
	if len(rep.Roots) > 0 {
		src = append(src, strings.Join(rep.Roots, ", "))
	}
	if rep.SiYuan != "" {
		src = append(src, "SiYuan at "+rep.SiYuan)
	}
	from := "the sources hold " + plural(rep.SourceDocs, "document", "documents")
	if len(src) > 0 {
		from += " (" + strings.Join(src, "; ") + ")"
	}
	held := fmt.Sprintf("the index holds %s, %s", plural(rep.Documents, "document", "documents"), plural(rep.Chunks, "chunk", "chunks"))
	if rep.Vectors >= 0 {
		held += ", " + plural(rep.Vectors, "vector", "vectors")
	}
	if rep.Clean() {
		fmt.Printf("no differences: %s; %s\n", from, held)
		return
	}
	docs := map[string]bool{}
	for _, d := range rep.Differences {
		docs[d.Where] = true
	}
	fmt.Printf("%s in %s: %s; %s\n", plural(len(rep.Differences), "difference", "differences"), plural(len(docs), "document", "documents"), from, held)
}

// checkProgress prints check's progress on stderr at most every half
// second ("check: ..."), on one line when stderr is a terminal.
type checkProgress struct {
	mu    sync.Mutex
	quiet bool
	last  time.Time
	shown bool
	tty   *bool
}

func (p *checkProgress) update(cp maintenance.CheckProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet || time.Since(p.last) < 500*time.Millisecond {
		return
	}
	if p.tty == nil {
		fi, err := os.Stderr.Stat()
		tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
		p.tty = &tty
	}
	var line string
	switch cp.Phase {
	case "settling":
		var parts []string
		for _, s := range cp.States {
			if n := s.Pending + uint64(s.AckPending); n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d pending", s.Stage, n))
			}
		}
		if len(parts) == 0 {
			return
		}
		line = "waiting for the pipeline: " + strings.Join(parts, ", ")
	case "sources":
		line = fmt.Sprintf("reading the sources: %s", plural(cp.Done, "document", "documents"))
	case "index":
		line = fmt.Sprintf("reading the index: %s", plural(cp.Done, "chunk", "chunks"))
	case "manifests":
		line = fmt.Sprintf("reading chunk manifests: %d of %d", cp.Done, cp.Total)
	case "vectors":
		line = fmt.Sprintf("listing vectors: %d", cp.Done)
	case "repair":
		line = fmt.Sprintf("repairing: %d sent", cp.Done)
	default:
		return
	}
	p.last = time.Now()
	p.shown = true
	if *p.tty {
		fmt.Fprintf(os.Stderr, "\r\033[Kcheck: %s", line)
	} else {
		fmt.Fprintf(os.Stderr, "check: %s\n", line)
	}
}

func (p *checkProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && p.tty != nil && *p.tty {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}

// multiFlag is a flag given any number of times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
