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

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/notes"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/files"
	"github.com/exocortex/exocortex/workers/stage"
	"github.com/exocortex/exocortex/workers/watch"
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

func ingest(ctx context.Context, args []string) (rerr error) {
	fs := newFlags("ingest")
	var c common
	c.register(fs, "warn")
	force := fs.Bool("force", false, "republish every document and every one of its chunks, even unchanged ones (brings back chunks lost from the index)")
	asJSON := fs.Bool("json", false, "print a JSON report")
	quiet := fs.Bool("quiet", false, "no progress lines")
	once := fs.Bool("once", false, "ingest the folders this once: do not add them to the watch list that exocortex up follows live")
	maxMB := fs.Int("max-file-mb", notes.DefaultMaxFileBytes>>20, "skip (and report) files larger than this many MiB")
	var n neural
	n.register(fs)
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return errors.New("give one or more files or folders (Markdown, SiYuan notebooks)")
	}
	if *maxMB <= 0 {
		return fmt.Errorf("--max-file-mb %d: give a positive number of MiB", *maxMB)
	}
	log := c.logger()
	start := time.Now()
	cfg := system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: log}
	if err := n.apply(&cfg); err != nil {
		return err
	}
	b, local, closeFn, err := system.Attach(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeFn()
	if !local {
		if !*quiet {
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
	state, err := b.KV(ctx, stage.BucketSources)
	if err != nil {
		return err
	}
	rep := ingestReport{TraceID: newTraceID("ingest")}
	pr := newProgress(*quiet)
	// A full disk pauses ingest rather than failing it: it goes on when
	// space returns.
	patience := newDiskPatience(ctx, b, pr)
	state = patience.kv(state)
	limit, err := system.StoreLimit(ctx, b)
	if err != nil {
		return err
	}
	publish := func(ctx context.Context, ev *schemas.DocChanged) error {
		if err := fitsStore(ev, limit); err != nil {
			return err
		}
		// files.Sync names the file.
		return patience.retry(ctx, "", func(ctx context.Context) error {
			_, err := b.Publish(ctx, ev, rep.TraceID)
			return err
		})
	}
	stats, ferrs, err := files.Sync(ctx, paths, state, publish, files.SyncOptions{
		Force:        *force,
		MaxFileBytes: int64(*maxMB) << 20,
		Progress: func(s files.SyncStats) {
			pr.line(fmt.Sprintf("scanned %s: %d sent, %d unchanged, %d deleted, %d failed", plural(s.Seen, "document", "documents"), s.Sent, s.Unchanged, s.Deleted, s.Failed))
		},
		OnWarning: func(w files.FileError) { rep.Warnings = append(rep.Warnings, w) },
	})
	pr.flush() // the scan's final counts
	rep.Files, rep.FileErrors = stats, ferrs
	// One line per file for the user ("path: reason"); the log has the same
	// at info level (with the trace id), so the default level shows it once.
	for _, fe := range ferrs {
		log.Info().Str("path", fe.Path).Str("error", fe.Err).Str("trace_id", rep.TraceID).Msg("file skipped")
		if !*asJSON {
			pr.println(fmt.Sprintf("%s: %s", fe.Path, fe.Err))
		}
	}
	for _, w := range rep.Warnings {
		log.Info().Str("path", w.Path).Str("warning", w.Err).Str("trace_id", rep.TraceID).Msg("file read with a repair")
		if !*asJSON {
			pr.println(fmt.Sprintf("%s: %s", w.Path, w.Err))
		}
	}
	if err != nil {
		return err
	}
	// What was ingested, so that 'exocortex check' knows what to compare.
	if err := files.RecordRoots(ctx, state, paths); err != nil {
		log.Warn().Err(err).Str("trace_id", rep.TraceID).Msg("could not record the ingested paths for exocortex check")
	}
	if !*once {
		added, err := watch.AddToList(c.data, paths)
		if err != nil {
			log.Warn().Err(err).Str("trace_id", rep.TraceID).Msg("could not add the folders to the watch list")
		}
		for _, p := range added {
			if !*quiet && !*asJSON {
				pr.println(fmt.Sprintf("watch list: added %s (exocortex up follows it live from its next start; --once leaves it out)", p))
			}
		}
	}
	stages := system.StageSpecs()
	err = patience.retry(ctx, "wait for the pipeline", func(ctx context.Context) error {
		return system.WaitIdle(ctx, b, stages, 250*time.Millisecond, func(states []bus.StageState) {
			var parts []string
			for _, s := range states {
				parts = append(parts, fmt.Sprintf("%s %d pending", s.Stage, s.Pending+uint64(s.AckPending)))
			}
			line := fmt.Sprintf("sent %s; %s", plural(stats.Sent+stats.Deleted, "document", "documents"), strings.Join(parts, ", "))
			if d, ok := b.DiskState(ctx); ok && d.Full {
				line += "; paused: " + d.Message()
			}
			pr.line(line)
		})
	})
	pr.done()
	if err != nil {
		return fmt.Errorf("waiting for the pipeline: %w", err)
	}
	letters, err := b.DeadLetters(ctx, "")
	if err != nil {
		return err
	}
	for _, dl := range letters {
		if dl.TraceID == rep.TraceID {
			rep.DeadLettered = append(rep.DeadLettered, viewDeadLetter(dl))
		}
	}
	rep.Documents, rep.Chunks = countIndexed(ctx, c.data)
	rep.Seconds = time.Since(start).Seconds()
	if *asJSON {
		if err := printJSON(rep); err != nil {
			return err
		}
	} else {
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
	return ingestOutcome(stats, len(rep.DeadLettered))
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
			files.ErrRefused, system.HumanBytes(n), system.HumanBytes(limit))
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
