package maintenance

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/workers/stage"
)

// A backup is a directory:
//
//	manifest.json          written last: format, version, time, counts, every file's size and sha256
//	exocortex.db           the SQLite index (VACUUM INTO: one consistent read)
//	answers.db             the answer cache, when there is one
//	vectors/<model>/...    the embedded vector index's files (snapshot, op log, raw vectors)
//	kv/<bucket>.jsonl      each KV bucket of the catalog: {"key": ..., "value": base64} per line
//	files/<name>           the data directory's settings files (calibration.json, ...)
//
// Consistency: the index stage is the one writer of the index and the
// vectors, and every ingest stage acks a message only once its effect is
// durable. Backup waits until no ingest stage (chunk, index, embed) has a
// message pending or in flight, notes the last stream sequence each one
// delivered, copies everything, then reads the stages again: when any of
// them delivered something meanwhile (or has something pending), the copy
// may mix two moments, so it is thrown away and taken again. A backup thus
// holds a moment when the ingest pipeline was empty: the source hashes,
// chunk manifests, embedding cache, index and vectors agree, and no message
// of KB_INGEST is in flight (streams are not backed up). Query and research
// messages in flight, dead letters and the per-stage counters are not kept.
const (
	BackupFormat   = "exocortex-backup"
	BackupVersion  = 1
	ManifestFile   = "manifest.json"
	backupKVDir    = "kv"
	backupFilesDir = "files"
)

// BackupManifest describes a backup; restore checks every file against it.
type BackupManifest struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// DataDir is the data directory that was backed up.
	DataDir   string `json:"data_dir"`
	Documents int    `json:"documents"`
	Chunks    int    `json:"chunks"`
	// Buckets counts the keys saved of each KV bucket.
	Buckets map[string]int `json:"buckets"`
	// Delivered is the last KB_INGEST sequence each ingest stage had
	// handled at the moment the backup holds.
	Delivered map[string]uint64 `json:"delivered"`
	// Attempts is how many copies were taken before one held a quiet moment.
	Attempts int          `json:"attempts"`
	Files    []BackupFile `json:"files"`
	Notes    []string     `json:"notes,omitempty"`
}

// BackupFile is one file of a backup, its path relative to the backup's
// directory with forward slashes.
type BackupFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// kvEntry is one line of a kv/<bucket>.jsonl file.
type kvEntry struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// BackupOptions say what to back up, where, and how long to wait for a
// quiet moment.
type BackupOptions struct {
	DataDir string
	// Dir is the backup's directory: it must not exist, or be empty.
	Dir string
	// Wait bounds the wait for the ingest stages to be idle (default 10m).
	Wait time.Duration
	// Progress, when set, is told what is being done (a line each).
	Progress func(string)
	// NothingRuns says that no stage runs on the bus: messages pending in
	// the ingest stages would then never be handled, and Backup fails at
	// once, naming them, instead of waiting.
	NothingRuns bool
	Log         zerolog.Logger
	// Catalog is the system's buckets and stages; nil means this build's.
	Catalog *stage.Catalog
}

func (o BackupOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// ErrNotEmpty is returned when a backup or restore target holds files.
var ErrNotEmpty = errors.New("not empty")

// ErrBadBackup is wrapped by every error that refuses a damaged or
// incomplete backup.
var ErrBadBackup = errors.New("backup refused")

// Backup copies the data directory's state through b (the running system's
// bus, or one started on the data directory) into o.Dir, as described above.
func Backup(ctx context.Context, b *bus.Bus, o BackupOptions) (BackupManifest, error) {
	if o.Wait <= 0 {
		o.Wait = 10 * time.Minute
	}
	cat := system.Config{Catalog: o.Catalog}.StageCatalog()
	if err := prepareEmpty(o.Dir, "backup directory"); err != nil {
		return BackupManifest{}, err
	}
	var ingest []bus.StageSpec
	for _, s := range cat.Specs() {
		if s.Stream == stage.StreamIngest {
			ingest = append(ingest, s)
		}
	}
	if o.NothingRuns {
		states, err := b.StageStates(ctx, ingest)
		if err != nil {
			return BackupManifest{}, err
		}
		if !sameQuiet(states, states) {
			return BackupManifest{}, fmt.Errorf("messages wait in the ingest stages (%s) and no system runs on %s: "+
				"start exocortex up so they are indexed, then back up", describePending(ctx, b, ingest), o.DataDir)
		}
	}
	m := BackupManifest{Format: BackupFormat, Version: BackupVersion, DataDir: system.AbsPath(o.DataDir)}
	if err := copyWhileQuiet(ctx, b, cat, ingest, o, &m); err != nil {
		return m, err
	}
	if dead, err := b.DeadLetterCounts(ctx); err == nil {
		n := uint64(0)
		for _, c := range dead {
			n += c
		}
		if n > 0 {
			m.Notes = append(m.Notes, fmt.Sprintf("%d dead letters are not in the backup (their documents are not in it either): "+
				"exocortex dlq list shows them; replay them and back up again to keep them", n))
		}
	}
	if st, err := store.OpenReadOnly(filepath.Join(o.Dir, "exocortex.db")); err == nil {
		m.Documents, m.Chunks, _ = st.Counts(ctx)
		st.Close()
	}
	o.progress("checksums")
	files, err := hashTree(o.Dir)
	if err != nil {
		clearDir(o.Dir)
		return m, err
	}
	m.Files = files
	if err := writeJSONFile(filepath.Join(o.Dir, ManifestFile), m); err != nil {
		clearDir(o.Dir)
		return m, err
	}
	return m, nil
}

// copyWhileQuiet copies the state into o.Dir once the ingest stages are
// idle, and again until they stayed idle through a whole copy (within
// o.Wait); it records the attempts, the time and the stages' delivered
// counts in m. On an error o.Dir is left empty.
func copyWhileQuiet(ctx context.Context, b *bus.Bus, cat stage.Catalog, ingest []bus.StageSpec, o BackupOptions, m *BackupManifest) error {
	waitCtx, cancel := context.WithDeadline(ctx, time.Now().Add(o.Wait))
	defer cancel()
	for attempt := 1; ; attempt++ {
		m.Attempts = attempt
		before, err := waitQuiet(waitCtx, b, ingest, o)
		if err != nil {
			clearDir(o.Dir)
			if ctx.Err() == nil && waitCtx.Err() != nil {
				return fmt.Errorf("the ingest stages were not idle for long enough to take a backup within %s "+
					"(pending: %s); try again when ingest is done, or with a longer --wait", o.Wait, describePending(ctx, b, ingest))
			}
			return err
		}
		m.Created = time.Now().UTC()
		if err := copyState(ctx, b, cat, o, m); err != nil {
			clearDir(o.Dir)
			return err
		}
		after, err := b.StageStates(ctx, ingest)
		if err != nil {
			clearDir(o.Dir)
			return fmt.Errorf("read the ingest stages after the copy: %w", err)
		}
		if sameQuiet(before, after) {
			m.Delivered = map[string]uint64{}
			for _, s := range after {
				m.Delivered[s.Stage] = s.Delivered
			}
			return nil
		}
		o.progress("ingest went on while copying; taking the copy again")
		o.Log.Info().Int("attempt", attempt).Msg("backup: ingest went on while copying; taking the copy again")
		clearDir(o.Dir)
	}
}

// waitQuiet waits until no ingest stage has anything pending or in flight
// and returns their states then.
func waitQuiet(ctx context.Context, b *bus.Bus, ingest []bus.StageSpec, o BackupOptions) ([]bus.StageState, error) {
	last := time.Time{}
	err := system.WaitIdle(ctx, b, ingest, 200*time.Millisecond, func(states []bus.StageState) {
		if time.Since(last) < 2*time.Second {
			return
		}
		var busy []string
		for _, s := range states {
			if s.Pending > 0 || s.AckPending > 0 {
				busy = append(busy, fmt.Sprintf("%s %d", s.Stage, s.Pending+uint64(s.AckPending)))
			}
		}
		if len(busy) > 0 {
			if !last.IsZero() {
				o.progress("waiting for ingest to finish: %s", strings.Join(busy, ", "))
			}
			last = time.Now()
		}
	})
	if err != nil {
		return nil, err
	}
	return b.StageStates(ctx, ingest)
}

func describePending(ctx context.Context, b *bus.Bus, ingest []bus.StageSpec) string {
	states, err := b.StageStates(ctx, ingest)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, s := range states {
		out = append(out, fmt.Sprintf("%s %d", s.Stage, s.Pending+uint64(s.AckPending)))
	}
	return strings.Join(out, ", ")
}

// sameQuiet says that both readings are idle and no stage delivered
// anything between them.
func sameQuiet(before, after []bus.StageState) bool {
	if len(before) != len(after) {
		return false
	}
	for i := range before {
		a, z := before[i], after[i]
		if a.Stage != z.Stage || a.Pending > 0 || a.AckPending > 0 || z.Pending > 0 || z.AckPending > 0 || a.Delivered != z.Delivered {
			return false
		}
	}
	return true
}

// copyState writes the index, the answer cache, the vectors, the settings
// files and the KV buckets into o.Dir.
func copyState(ctx context.Context, b *bus.Bus, cat stage.Catalog, o BackupOptions, m *BackupManifest) error {
	m.Notes = nil
	for _, db := range []string{system.DBPath(o.DataDir), system.CachePath(o.DataDir)} {
		if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		o.progress("copying %s", filepath.Base(db))
		dst := filepath.Join(o.Dir, filepath.Base(db))
		if err := store.SnapshotFile(ctx, db, dst); err != nil {
			return err
		}
		if err := os.Chmod(dst, 0o600); err != nil {
			return err
		}
		if fi, err := os.Stat(dst); err == nil {
			o.progress("copied %s (%s)", filepath.Base(db), humanize.IBytes(uint64(fi.Size())))
		}
	}
	vdir := filepath.Join(o.DataDir, "vectors")
	if _, err := os.Stat(vdir); errors.Is(err, fs.ErrNotExist) {
		m.Notes = append(m.Notes, "no embedded vector index (vectors/) in the data directory (no embedding model yet, or --vectors qdrant: "+
			"back up a Qdrant collection with Qdrant's own snapshots)")
	}
	if _, err := os.Stat(filepath.Join(o.DataDir, "models")); err == nil {
		m.Notes = append(m.Notes, "models/ is not backed up: exocortex models fetch installs the same pinned files again")
	}
	if _, err := os.Stat(vdir); err == nil {
		o.progress("copying vectors/")
		if err := copyTree(ctx, vdir, filepath.Join(o.Dir, "vectors"), func(rel string) bool {
			return filepath.Base(rel) != "LOCK" && !strings.HasSuffix(rel, ".tmp")
		}, o); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(o.DataDir)
	if err != nil {
		return fmt.Errorf("read data directory %s: %w", o.DataDir, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || skipDataFile(e.Name()) {
			continue
		}
		src := filepath.Join(o.DataDir, e.Name())
		if err := copyFile(src, filepath.Join(o.Dir, backupFilesDir, e.Name())); err != nil {
			return err
		}
	}
	m.Buckets = map[string]int{}
	if err := os.MkdirAll(filepath.Join(o.Dir, backupKVDir), 0o700); err != nil {
		return err
	}
	for _, bc := range cat.Topology().Buckets {
		n, err := dumpBucket(ctx, b, bc.Bucket, filepath.Join(o.Dir, backupKVDir, bc.Bucket+".jsonl"), o)
		if err != nil {
			return err
		}
		m.Buckets[bc.Bucket] = n
	}
	return nil
}

// skipDataFile names the data directory's top-level files that are not
// settings: the databases (copied on their own), their WAL files, the
// lexical index's snapshot, the
// running system's address and certificate copy, and temporary files.
// The NATS key (nats.nk) is kept, so workers elsewhere that were given it
// reach the restored system.
func skipDataFile(name string) bool {
	switch name {
	case "exocortex.db", "answers.db", "nats.url", "nats-cert.pem", "LOCK":
		return true
	}
	for _, suf := range []string{"-wal", "-shm", "-journal", ".tmp"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	// The memory lexical index's snapshot (and its temporary files): rebuilt
	// from the restored database.
	return name == filepath.Base(store.LexSnapshotPath("exocortex.db")) || strings.HasPrefix(name, "exocortex.db.lex.tmp")
}

func dumpBucket(ctx context.Context, b *bus.Bus, bucket, path string, o BackupOptions) (int, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("backup kv bucket %s: %w", bucket, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	last, seen := time.Now(), 0
	n, err := b.EachKV(ctx, bucket, func(key string, value []byte) error {
		if seen++; time.Since(last) > time.Second {
			o.progress("copying %s: %d keys", bucket, seen)
			last = time.Now()
		}
		return enc.Encode(kvEntry{Key: key, Value: value})
	})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("backup kv bucket %s into %s: %w", bucket, path, err)
	}
	o.progress("copied %s: %d keys", bucket, n)
	return n, nil
}

// RestoreOptions say which backup to restore into which data directory.
type RestoreOptions struct {
	// Dir is the backup.
	Dir string
	// DataDir must not exist, or be empty.
	DataDir  string
	Progress func(string)
	Log      zerolog.Logger
	Catalog  *stage.Catalog
}

func (o RestoreOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// VerifyBackup reads dir's manifest and checks every file it lists (there,
// of its size, with its sha256); an error names the first file that fails
// and wraps ErrBadBackup.
func VerifyBackup(dir string, progress func(string)) (BackupManifest, error) {
	var m BackupManifest
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%w: %s has no %s: it is not a backup, or the backup did not finish", ErrBadBackup, dir, ManifestFile)
	}
	if err != nil {
		return m, fmt.Errorf("read %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: %s: %v", ErrBadBackup, filepath.Join(dir, ManifestFile), err)
	}
	if m.Format != BackupFormat {
		return m, fmt.Errorf("%w: %s: format %q, want %q", ErrBadBackup, filepath.Join(dir, ManifestFile), m.Format, BackupFormat)
	}
	if m.Version != BackupVersion {
		return m, fmt.Errorf("%w: %s: version %d; this exocortex restores version %d", ErrBadBackup, filepath.Join(dir, ManifestFile), m.Version, BackupVersion)
	}
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	var done int64
	last := time.Now()
	for _, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return m, fmt.Errorf("%w: %s lists %q, a path outside the backup", ErrBadBackup, ManifestFile, f.Path)
		}
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		sum, size, err := hashFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return m, fmt.Errorf("%w: %s is missing (the backup is incomplete)", ErrBadBackup, path)
		case err != nil:
			return m, fmt.Errorf("%w: read %s: %v", ErrBadBackup, path, err)
		case size != f.Size:
			return m, fmt.Errorf("%w: %s is damaged: %d bytes, the manifest says %d", ErrBadBackup, path, size, f.Size)
		case sum != f.SHA256:
			return m, fmt.Errorf("%w: %s is damaged: its sha256 differs from the manifest's", ErrBadBackup, path)
		}
		done += size
		if progress != nil && time.Since(last) > time.Second {
			progress(fmt.Sprintf("checked %s of %s", humanize.IBytes(uint64(done)), humanize.IBytes(uint64(total))))
			last = time.Now()
		}
	}
	return m, nil
}

// Restore checks the backup o.Dir, writes its files into a new directory
// beside o.DataDir, loads its KV buckets into a fresh JetStream store there
// (an embedded server started on it), and renames it to o.DataDir. Nothing
// is written to o.DataDir when any step fails.
func Restore(ctx context.Context, o RestoreOptions) (BackupManifest, error) {
	if err := checkEmpty(o.DataDir, "data directory"); err != nil {
		return BackupManifest{}, err
	}
	o.progress("checking %s", o.Dir)
	m, err := VerifyBackup(o.Dir, o.Progress)
	if err != nil {
		return m, err
	}
	abs := system.AbsPath(o.DataDir)
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return m, fmt.Errorf("restore into %s: %w", o.DataDir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".restoring-")
	if err != nil {
		return m, fmt.Errorf("restore into %s: %w", o.DataDir, err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o700); err != nil {
		return m, err
	}
	var kvFiles []string
	for _, f := range m.Files {
		src := filepath.Join(o.Dir, filepath.FromSlash(f.Path))
		var dst string
		switch {
		case strings.HasPrefix(f.Path, backupKVDir+"/"):
			kvFiles = append(kvFiles, f.Path)
			continue
		case strings.HasPrefix(f.Path, backupFilesDir+"/"):
			dst = filepath.Join(tmp, filepath.FromSlash(strings.TrimPrefix(f.Path, backupFilesDir+"/")))
		default:
			dst = filepath.Join(tmp, filepath.FromSlash(f.Path))
		}
		o.progress("writing %s", f.Path)
		if err := copyFile(src, dst); err != nil {
			return m, fmt.Errorf("restore %s: %w", f.Path, err)
		}
	}
	if err := loadBuckets(ctx, o, tmp, kvFiles); err != nil {
		return m, err
	}
	// An empty target directory is replaced (rename needs it gone or empty).
	if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("restore into %s: %w", o.DataDir, err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		return m, fmt.Errorf("restore into %s: %w", o.DataDir, err)
	}
	done = true
	return m, nil
}

// loadBuckets starts an embedded JetStream on dataDir (creating the
// streams, consumers and buckets as up would) and puts every saved key.
func loadBuckets(ctx context.Context, o RestoreOptions, dataDir string, files []string) error {
	sys, err := system.Start(ctx, system.Config{DataDir: dataDir, Listen: "127.0.0.1:-1", NoStages: true, Catalog: o.Catalog, Log: o.Log})
	if err != nil {
		return fmt.Errorf("restore: start JetStream on %s: %w", dataDir, err)
	}
	known := map[string]bool{}
	cat := system.Config{Catalog: o.Catalog}.StageCatalog()
	for _, bc := range cat.Topology().Buckets {
		known[bc.Bucket] = true
	}
	var errs []error
	for _, path := range files {
		bucket := strings.TrimSuffix(strings.TrimPrefix(path, backupKVDir+"/"), ".jsonl")
		if !known[bucket] {
			o.Log.Warn().Str("bucket", bucket).Msg("restore: the backup has a KV bucket this version does not use; skipped")
			continue
		}
		if err := loadBucket(ctx, sys.Bus, bucket, filepath.Join(o.Dir, filepath.FromSlash(path)), o); err != nil {
			errs = append(errs, err)
			break
		}
	}
	errs = append(errs, sys.Stop())
	return errors.Join(errs...)
}

func loadBucket(ctx context.Context, b *bus.Bus, bucket, path string, o RestoreOptions) error {
	kv, err := b.KV(ctx, bucket)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("restore kv bucket %s: %w", bucket, err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	n := 0
	last := time.Now()
	for {
		var e kvEntry
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("%w: %s, entry %d: %v", ErrBadBackup, path, n+1, err)
		}
		if err := kv.Put(ctx, e.Key, e.Value); err != nil {
			return fmt.Errorf("restore kv bucket %s: %w", bucket, err)
		}
		n++
		if time.Since(last) > time.Second {
			o.progress("loading %s: %d keys", bucket, n)
			last = time.Now()
		}
	}
	o.progress("loaded %s: %d keys", bucket, n)
	return nil
}

// checkEmpty fails, naming dir, when it exists and holds anything.
func checkEmpty(dir, what string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s %s is %w (it holds %s): give a new or empty directory", what, dir, ErrNotEmpty, entries[0].Name())
	}
	return nil
}

// prepareEmpty creates dir, or checks that it is empty.
func prepareEmpty(dir, what string) error {
	if err := checkEmpty(dir, what); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	return nil
}

// clearDir removes what a failed backup attempt wrote into dir (dir itself
// stays: it was empty or new).
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// copyTree copies the regular files under src that keep says to keep.
func copyTree(ctx context.Context, src, dst string, keep func(rel string) bool, o BackupOptions) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || !keep(rel) {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() > 64<<20 {
			o.progress("copying vectors/%s (%s)", filepath.ToSlash(rel), humanize.IBytes(uint64(info.Size())))
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
}

// copyFile copies src to a new file dst (mode 0600, directories 0700) and
// fsyncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// hashTree lists every file under dir but the manifest, with its size and
// sha256, sorted by path.
func hashTree(dir string) ([]BackupFile, error) {
	var out []BackupFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ManifestFile || strings.HasSuffix(rel, ".tmp") {
			return nil
		}
		sum, size, err := hashFile(path)
		if err != nil {
			return fmt.Errorf("checksum %s: %w", path, err)
		}
		out = append(out, BackupFile{Path: rel, Size: size, SHA256: sum})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// writeJSONFile writes v to path through a temporary file, fsynced and
// renamed, so the file is either whole or absent.
func writeJSONFile(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(append(raw, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// TotalSize is the sum of the backup's file sizes.
func (m BackupManifest) TotalSize() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// BucketNames lists the manifest's buckets, sorted.
func (m BackupManifest) BucketNames() []string {
	names := make([]string, 0, len(m.Buckets))
	for n := range m.Buckets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// absPath is p made absolute (p itself when that fails).
