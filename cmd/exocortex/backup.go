package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/exocortex/exocortex/internal/maintenance"
	"github.com/exocortex/exocortex/internal/system"
)

// stepPrinter prints a command's progress lines on stderr ("backup: ...").
func stepPrinter(cmd string, quiet bool) func(string) {
	if quiet {
		return nil
	}
	return func(s string) { fmt.Fprintf(os.Stderr, "%s: %s\n", cmd, s) }
}

func cmdBackup(ctx context.Context, args []string) error {
	fs := newFlags("backup")
	var c common
	c.register(fs, "warn")
	wait := fs.Duration("wait", 10*time.Minute, "how long to wait for the ingest stages to be idle (the backup is taken at such a moment)")
	asJSON := fs.Bool("json", false, "print the backup's manifest as JSON")
	quiet := fs.Bool("quiet", false, "no progress lines")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{cmd: "backup", msg: "give one backup directory (new or empty)"}
	}
	if err := c.requireData(); err != nil {
		return err
	}
	log := c.logger()
	b, _, closeFn, err := system.Attach(ctx, system.Config{DataDir: c.data, NATSURL: c.nats, Creds: c.natsCreds(), TLS: c.natsTLS(), Log: log}, false)
	if err != nil {
		return err
	}
	defer closeFn()
	_, running := system.Running(c.data)
	m, err := maintenance.Backup(ctx, b, maintenance.BackupOptions{
		DataDir: c.data, Dir: pos[0], Wait: *wait, Progress: stepPrinter("backup", *quiet),
		NothingRuns: !running && c.nats == "", Log: log,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(m)
	}
	fmt.Printf("backed up %s into %s: %s, %s; %s; %s, %s\n", c.data, pos[0],
		plural(m.Documents, "document", "documents"), plural(m.Chunks, "chunk", "chunks"), bucketCounts(m),
		plural(len(m.Files), "file", "files"), humanize.IBytes(uint64(m.TotalSize())))
	for _, n := range m.Notes {
		fmt.Printf("note: %s\n", n)
	}
	return nil
}

func cmdRestore(ctx context.Context, args []string) error {
	fs := newFlags("restore")
	var c common
	c.register(fs, "warn")
	asJSON := fs.Bool("json", false, "print the restored backup's manifest as JSON")
	quiet := fs.Bool("quiet", false, "no progress lines")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{cmd: "restore", msg: "give one backup directory (made by exocortex backup)"}
	}
	if c.nats != "" {
		return &usageError{cmd: "restore", msg: "--nats: restore loads the KV buckets into the embedded server of the new data directory; leave --nats out"}
	}
	if _, running := system.Running(c.data); running {
		return fmt.Errorf("a system runs on %s: stop it, and restore into a new or empty data directory", c.data)
	}
	m, err := maintenance.Restore(ctx, maintenance.RestoreOptions{Dir: pos[0], DataDir: c.data, Progress: stepPrinter("restore", *quiet), Log: c.logger()})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(m)
	}
	fmt.Printf("restored %s (taken %s) into %s: %s, %s; %s\n", pos[0], m.Created.Local().Format("2006-01-02 15:04:05"), c.data,
		plural(m.Documents, "document", "documents"), plural(m.Chunks, "chunk", "chunks"), bucketCounts(m))
	return nil
}

func bucketCounts(m maintenance.BackupManifest) string {
	var parts []string
	for _, n := range m.BucketNames() {
		parts = append(parts, fmt.Sprintf("%s %d", n, m.Buckets[n]))
	}
	return "keys: " + strings.Join(parts, ", ")
}
