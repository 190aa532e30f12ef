package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/watch"
	"github.com/rs/zerolog"
)

func newTraceID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// ingestReport is what ingest prints with --json.
type ingestReport struct {
	TraceID      string            `json:"trace_id"`
	Files        files.SyncStats   `json:"files"`
	FileErrors   []files.FileError `json:"file_errors,omitempty"`
	Warnings     []files.FileError `json:"warnings,omitempty"`
	DeadLettered []deadLetterView  `json:"dead_lettered,omitempty"`
	Documents    int               `json:"documents"`
	Chunks       int               `json:"chunks"`
	Seconds      float64           `json:"seconds"`
}

// exitPartial is ingest's exit code when some files failed (or their events
// were dead-lettered) and the others were ingested; a total failure exits 1.
const exitPartial = 3

// partialError is an ingest that indexed some files and not others.
type partialError struct{ msg string }

func (e *partialError) Error() string { return e.msg }

func cmdIngest(ctx context.Context, args []string) error {
	err := ingest(ctx, args)
	var lost *lostError
	if errors.As(err, &lost) {
		fmt.Fprintf(os.Stderr, "exocortex ingest: %v\n", err)
		os.Exit(exitLost)
	}
	var partial *partialError
	if errors.As(err, &partial) {
		// Everything is closed by now; only the exit code differs from 1.
		fmt.Fprintf(os.Stderr, "exocortex ingest: %v\n", err)
		os.Exit(exitPartial)
	}
	return err
}

// ingestFlags are ingest's command-line flags.
type ingestFlags struct {
	c                          common
	n                          neural
	force, asJSON, quiet, once *bool
	maxMB                      *int
}

func ingest(ctx context.Context, args []string) (rerr error) {
	fs := newFlags("ingest")
	f := &ingestFlags{}
	f.c.register(fs, "warn")
	f.force = fs.Bool("force", false, "republish every document and every one of its chunks, even unchanged ones (brings back chunks lost from the index)")
	f.asJSON = fs.Bool("json", false, "print a JSON report")
	f.quiet = fs.Bool("quiet", false, "no progress lines")
	f.once = fs.Bool("once", false, "ingest the folders this once: do not add them to the watch list that exocortex up follows live")
	f.maxMB = fs.Int("max-file-mb", notes.DefaultMaxFileBytes>>20, "skip (and report) files larger than this many MiB")
	f.n.register(fs)
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return errors.New("give one or more files or folders (Markdown, SiYuan notebooks)")
	}
	if *f.maxMB <= 0 {
		return fmt.Errorf("--max-file-mb %d: give a positive number of MiB", *f.maxMB)
	}
	start := time.Now()
	cfg := system.Config{DataDir: f.c.data, NATSURL: f.c.nats, Creds: f.c.natsCreds(), TLS: f.c.natsTLS(), Log: f.c.logger()}
	if err := f.n.apply(&cfg); err != nil {
		return err
	}
	b, local, closeFn, err := system.Attach(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeFn()
	if !local {
		if !*f.quiet {
			fmt.Fprintf(os.Stderr, "ingest: feeding the running system at %s\n", b.URL())
		}
		// A system that goes away is said so within seconds, not after a
		// publish's or a KV write's timeout.
		var stopWatch func()
		ctx, stopWatch = watchSystem(ctx, b)
		defer stopWatch()
		url := b.URL()
		defer func() {
			if rerr != nil && errors.Is(context.Cause(ctx), errSystemGone) {
				rerr = &lostError{url: url}
			}
		}()
	}
	run := &ingestRun{f: f, b: b, log: cfg.Log, rep: ingestReport{TraceID: newTraceID("ingest")}, pr: newProgress(*f.quiet)}
	if err := run.ingest(ctx, paths); err != nil {
		return err
	}
	run.rep.Documents, run.rep.Chunks = countIndexed(ctx, f.c.data)
	run.rep.Seconds = time.Since(start).Seconds()
	if *f.asJSON {
		if err := printJSON(run.rep); err != nil {
			return err
		}
	} else {
		printIngest(run.rep)
	}
	return ingestOutcome(run.rep.Files, len(run.rep.DeadLettered))
}

// ingestRun is one ingest on a bus: it fills rep.
type ingestRun struct {
	f   *ingestFlags
	b   *bus.Bus
	log zerolog.Logger
	pr  *progress
	rep ingestReport
	// patience pauses on a full disk rather than failing: ingest goes on
	// when space returns.
	patience *diskPatience
}

// ingest sends the paths' notes, waits until the pipeline has indexed
// them and collects this ingest's dead letters.
func (r *ingestRun) ingest(ctx context.Context, paths []string) error {
	state, err := r.b.KV(ctx, stage.BucketSources)
	if err != nil {
		return err
	}
	r.patience = newDiskPatience(ctx, r.b, r.pr)
	state = r.patience.kv(state)
	if err := r.sync(ctx, paths, state); err != nil {
		return err
	}
	r.remember(ctx, paths, state)
	if err := r.waitIndexed(ctx); err != nil {
		return fmt.Errorf("waiting for the pipeline: %w", err)
	}
	letters, err := r.b.DeadLetters(ctx, "")
	if err != nil {
		return err
	}
	for _, dl := range letters {
		if dl.TraceID == r.rep.TraceID {
			r.rep.DeadLettered = append(r.rep.DeadLettered, viewDeadLetter(dl))
		}
	}
	return nil
}

// sync publishes the paths' changed notes and says which files failed or
// were read with a repair.
func (r *ingestRun) sync(ctx context.Context, paths []string, state bus.KV) error {
	limit, err := system.StoreLimit(ctx, r.b)
	if err != nil {
		return err
	}
	publish := func(ctx context.Context, ev *schemas.DocChanged) error {
		if err := fitsStore(ev, limit); err != nil {
			return err
		}
		// files.Sync names the file.
		return r.patience.retry(ctx, "", func(ctx context.Context) error {
			_, err := r.b.Publish(ctx, ev, r.rep.TraceID)
			return err
		})
	}
	stats, ferrs, err := files.Sync(ctx, paths, state, publish, files.SyncOptions{
		Force:        *r.f.force,
		MaxFileBytes: int64(*r.f.maxMB) << 20,
		Progress: func(s files.SyncStats) {
			r.pr.line(fmt.Sprintf("scanned %s: %d sent, %d unchanged, %d deleted, %d failed", plural(s.Seen, "document", "documents"), s.Sent, s.Unchanged, s.Deleted, s.Failed))
		},
		OnWarning: func(w files.FileError) { r.rep.Warnings = append(r.rep.Warnings, w) },
	})
	r.pr.flush() // the scan's final counts
	r.rep.Files, r.rep.FileErrors = stats, ferrs
	// One line per file for the user ("path: reason"); the log has the same
	// at info level (with the trace id), so the default level shows it once.
	for _, fe := range ferrs {
		r.log.Info().Str("path", fe.Path).Str("error", fe.Err).Str("trace_id", r.rep.TraceID).Msg("file skipped")
		if !*r.f.asJSON {
			r.pr.println(fmt.Sprintf("%s: %s", fe.Path, fe.Err))
		}
	}
	for _, w := range r.rep.Warnings {
		r.log.Info().Str("path", w.Path).Str("warning", w.Err).Str("trace_id", r.rep.TraceID).Msg("file read with a repair")
		if !*r.f.asJSON {
			r.pr.println(fmt.Sprintf("%s: %s", w.Path, w.Err))
		}
	}
	return err
}

// remember records what was ingested, so that 'exocortex check' knows
// what to compare, and (without --once) adds the folders to the watch list.
func (r *ingestRun) remember(ctx context.Context, paths []string, state bus.KV) {
	if err := files.RecordRoots(ctx, state, paths); err != nil {
		r.log.Warn().Err(err).Str("trace_id", r.rep.TraceID).Msg("could not record the ingested paths for exocortex check")
	}
	if *r.f.once {
		return
	}
	added, err := watch.AddToList(r.f.c.data, paths)
	if err != nil {
		r.log.Warn().Err(err).Str("trace_id", r.rep.TraceID).Msg("could not add the folders to the watch list")
	}
	for _, p := range added {
		if !*r.f.quiet && !*r.f.asJSON {
			r.pr.println(fmt.Sprintf("watch list: added %s (exocortex up follows it live from its next start; --once leaves it out)", p))
		}
	}
}

// waitIndexed waits until every stage is idle, with a progress line.
func (r *ingestRun) waitIndexed(ctx context.Context) error {
	stages := system.StageSpecs()
	sent := r.rep.Files.Sent + r.rep.Files.Deleted
	err := r.patience.retry(ctx, "wait for the pipeline", func(ctx context.Context) error {
		return system.WaitIdle(ctx, r.b, stages, 250*time.Millisecond, func(states []bus.StageState) {
			var parts []string
			for _, s := range states {
				parts = append(parts, fmt.Sprintf("%s %d pending", s.Stage, s.Pending+uint64(s.AckPending)))
			}
			line := fmt.Sprintf("sent %s; %s", plural(sent, "document", "documents"), strings.Join(parts, ", "))
			if d, ok := r.b.DiskState(ctx); ok && d.Full {
				line += "; paused: " + d.Message()
			}
			r.pr.line(line)
		})
	})
	r.pr.done()
	return err
}

func printIngest(rep ingestReport) {
	stats := rep.Files
	fmt.Printf("ingested %s (%d unchanged, %d deleted, %d failed, %d read with repairs) in %.1fs; index holds %s, %s\n",
		plural(stats.Sent, "document", "documents"), stats.Unchanged, stats.Deleted, stats.Failed, stats.Warned, rep.Seconds,
		plural(rep.Documents, "document", "documents"), plural(rep.Chunks, "chunk", "chunks"))
	if n := len(rep.DeadLettered); n > 0 {
		fmt.Printf("%s dead-lettered (see 'exocortex dlq list'):\n", plural(n, "message was", "messages were"))
		for _, dl := range rep.DeadLettered {
			fmt.Printf("  [%s] %s: %s\n", dl.Stage, dl.Subject, dl.Reason)
		}
	}
}

// storeShare is how much of the JetStream store one note may take: its
// event and its chunks' events are both held until the stages take them,
// so a note needs about twice its size.
const storeShare = 2

// fitsStore refuses (files.ErrRefused) a document whose event the store
// can never hold: ingest would otherwise wait for room that cannot come.
func fitsStore(ev *schemas.DocChanged, limit int64) error {
	if limit <= 0 || ev.Deleted {
		return nil
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode %s: %w", ev.Path, err)
	}
	if n := int64(len(raw)); n*storeShare > limit {
		return fmt.Errorf("%w: the note takes %s and its chunks as much again, more than the JetStream store's limit of %s (up --max-store); raise --max-store or split the note",
			files.ErrRefused, humanize.IBytes(uint64(n)), humanize.IBytes(uint64(limit)))
	}
	return nil
}

// ingestOutcome is nil when every file was ingested, a partialError when
// some failed (or had events dead-lettered) and others were read, and a plain
// error when files failed and none could be read.
func ingestOutcome(st files.SyncStats, deadLettered int) error {
	switch {
	case st.Failed > 0 && st.Seen == 0:
		return fmt.Errorf("no file could be ingested: %s (listed above)", plural(st.Failed, "file failed", "files failed"))
	case st.Failed > 0 && deadLettered > 0:
		return &partialError{fmt.Sprintf("%d of %s failed (listed above) and %s dead-lettered; the rest was ingested", st.Failed, plural(st.Seen+st.Failed, "file", "files"), plural(deadLettered, "message was", "messages were"))}
	case st.Failed > 0:
		return &partialError{fmt.Sprintf("%d of %s failed (listed above); the other %s ingested", st.Failed, plural(st.Seen+st.Failed, "file", "files"), plural(st.Seen, "was", "were"))}
	case deadLettered > 0:
		return &partialError{fmt.Sprintf("%s dead-lettered (listed above); the rest was ingested", plural(deadLettered, "message was", "messages were"))}
	}
	return nil
}

// countIndexed reads the document and chunk counts (read-only, so it works
// while another process writes).
func countIndexed(ctx context.Context, dataDir string) (docs, chunks int) {
	st, err := store.OpenReadOnly(system.DBPath(dataDir))
	if err != nil {
		return 0, 0
	}
	defer st.Close()
	docs, chunks, _ = st.Counts(ctx)
	return docs, chunks
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// progress prints a status line at most every half second, on one line when
// stderr is a terminal. A line held back by the throttle is printed by flush
// (at the end of a phase) or done, so the last line shown is the final state.
type progress struct {
	mu    sync.Mutex
	quiet bool
	tty   bool
	last  time.Time
	text  string // the latest line
	shown string // the line last printed
}

func newProgress(quiet bool) *progress {
	fi, err := os.Stderr.Stat()
	return &progress{quiet: quiet, tty: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text = s
	if p.quiet || s == p.shown || time.Since(p.last) < 500*time.Millisecond {
		return
	}
	p.print(false)
}

// print writes p.text (p.mu held); end finishes the line on a terminal.
func (p *progress) print(end bool) {
	p.shown, p.last = p.text, time.Now()
	switch {
	case p.tty && end:
		fmt.Fprintf(os.Stderr, "\r\033[Kingest: %s\n", p.text)
	case p.tty:
		fmt.Fprintf(os.Stderr, "\r\033[Kingest: %s", p.text)
	default:
		fmt.Fprintf(os.Stderr, "ingest: %s\n", p.text)
	}
}

// flush prints the latest line if the throttle held it back, ending it on a
// terminal, so a phase's final state stays on screen.
func (p *progress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet || p.text == "" {
		return
	}
	if p.text != p.shown || p.tty {
		p.print(true)
	}
	p.text, p.shown = "", ""
}

// println prints a line of its own, clearing a progress line on a terminal.
func (p *progress) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && !p.quiet {
		fmt.Fprint(os.Stderr, "\r\033[K")
		p.shown = "" // cleared: flush prints it again
	}
	fmt.Fprintln(os.Stderr, s)
}

func (p *progress) done() { p.flush() }
