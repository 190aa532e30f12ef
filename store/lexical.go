package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/lexical"
)

// Lexical engines: what ranks Search's BM25.
const (
	// LexicalFTS5 ranks inside SQLite with FTS5's bm25().
	LexicalFTS5 = "fts5"
	// LexicalMemory ranks with an in-memory inverted index (package
	// lexical) over the same full-text rows, the same weights and the same
	// formula. It is built from the full-text table on the first search and
	// follows every later change through the lex_log table (written in the
	// same transaction as the change), in this process and in any other that
	// reads the database.
	LexicalMemory = "memory"
)

// EnvLexical chooses the lexical engine of stores opened without one set
// (see DefaultLexical).
const EnvLexical = "EXOCORTEX_LEXICAL"

// DefaultLexical is the engine of a store whose Lexical is empty and
// $EXOCORTEX_LEXICAL unset: the memory engine, which ranks as FTS5 does
// (same XQuAD recall) 25 times faster at 100k chunks.
const DefaultLexical = LexicalMemory

// lexLogKeep is how many lex_log entries the writer keeps; a reader in
// another process that falls further behind rebuilds its index.
const lexLogKeep = 200_000

// lexAll in lex_log.row: the whole full-text table was emptied.
const lexAll = -1

// ParseLexical checks an engine name ("" is the default).
func ParseLexical(s string) (string, error) {
	switch s {
	case "", LexicalFTS5, LexicalMemory:
		return s, nil
	}
	return "", fmt.Errorf("lexical engine %q: want %s or %s", s, LexicalFTS5, LexicalMemory)
}

// LexicalEngine is the engine Search uses (LexicalFTS5 or LexicalMemory).
func (s *Store) LexicalEngine() string {
	if s.Lexical != "" {
		return s.Lexical
	}
	if e := os.Getenv(EnvLexical); e == LexicalMemory || e == LexicalFTS5 {
		return e
	}
	return DefaultLexical
}

// logLex records a change of full-text row id in the lexical log.
func logLex(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO lex_log (row) VALUES (?)`, id)
	return err
}

// pruneLexLog drops lex_log entries beyond the newest lexLogKeep.
func pruneLexLog(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM lex_log WHERE seq <= (SELECT max(seq) FROM lex_log) - ?`, lexLogKeep)
	return err
}

// lexIndex is a store's in-memory lexical index and the lex_log entry it
// has applied.
type lexIndex struct {
	mu  sync.Mutex // one catch-up at a time
	idx *lexical.Index
	seq int64
	// replayed counts log entries applied since the last snapshot; saving
	// is set while one is written in the background.
	replayed int64
	saving   atomic.Bool
	// damaged: the snapshot had a damaged list (a store opened by
	// OpenUntouched then leaves it alone).
	damaged bool
	// bg is the snapshot being written in the background, if any: Close
	// and SaveLexSnapshot wait for it.
	bg sync.WaitGroup
	// saved is 1 + the log position of the snapshot last saved or loaded
	// (0: none); see markSaved.
	saved atomic.Int64
}

// markSaved records that the snapshot on disk holds the log up to seq.
func (l *lexIndex) markSaved(seq int64) { l.saved.Store(seq + 1) }

// isSaved reports whether the snapshot on disk holds the log up to seq.
func (l *lexIndex) isSaved(seq int64) bool { return l.saved.Load() == seq+1 }

// LexicalIndex returns the store's in-memory lexical index brought up to
// date with the database: built from the full-text table the first time
// (or when the lexical log was pruned past what it has applied, or the
// table was emptied), then kept in step by replaying the log. A store
// opened by OpenUntouched never builds it: it returns ErrLexicalCold when
// its snapshot is missing or too far behind (LexReplayMax).
func (s *Store) LexicalIndex(ctx context.Context) (*lexical.Index, error) {
	l := &s.lex
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idx == nil && (l.damaged || !s.loadLexSnapshot(ctx)) {
		if s.untouched {
			return nil, fmt.Errorf("%w: no lexical snapshot of this database at %s", ErrLexicalCold, LexSnapshotPath(s.path))
		}
		if err := s.rebuildLex(ctx); err != nil {
			return nil, fmt.Errorf("build lexical index: %w", err)
		}
		return l.idx, nil
	}
	var lo, hi int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce((SELECT min(seq) FROM lex_log), 0), coalesce((SELECT max(seq) FROM lex_log), 0)`).Scan(&lo, &hi); err != nil {
		return nil, fmt.Errorf("read lexical log: %w", err)
	}
	rebuild := false
	switch {
	case hi == l.seq:
		return l.idx, nil
	case hi < l.seq || lo > l.seq+1:
		// The log was pruned past us (or the database replaced): rebuild.
		rebuild = true
	case s.untouched && hi-l.seq > LexReplayMax:
		return nil, fmt.Errorf("%w: the lexical snapshot is %d log entries behind the database (more than %d)", ErrLexicalCold, hi-l.seq, LexReplayMax)
	default:
		var err error
		if rebuild, err = s.replayLex(ctx); err != nil {
			return nil, err
		}
	}
	if rebuild {
		if s.untouched {
			return nil, fmt.Errorf("%w: the lexical log no longer follows the snapshot", ErrLexicalCold)
		}
		if err := s.rebuildLex(ctx); err != nil {
			return nil, fmt.Errorf("rebuild lexical index: %w", err)
		}
		return l.idx, nil
	}
	if !s.untouched && l.replayed >= LexSnapshotEvery && l.saving.CompareAndSwap(false, true) {
		// In the background: searches go on meanwhile. Writes replayed while
		// it is written may be in it too; replaying them again from seq on
		// load changes nothing (each entry applies the row's content then).
		l.replayed = 0
		idx, seq := l.idx, l.seq
		l.bg.Add(1)
		go func() {
			defer l.bg.Done()
			defer l.saving.Store(false)
			if s.writeLexSnapshot(context.WithoutCancel(ctx), idx, seq) {
				s.lex.markSaved(seq)
			}
		}()
	}
	return l.idx, nil
}

// lexDamaged drops idx, read from a snapshot in which a search found a
// damaged list: a writer or a reader that may save rebuilds the index from
// the database (saving a sound snapshot over the damaged one); a store
// opened by OpenUntouched searches with FTS5 from then on.
func (s *Store) lexDamaged(ctx context.Context, idx *lexical.Index, damage error) error {
	l := &s.lex
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idx != idx {
		return nil // dropped already
	}
	log := zerolog.Ctx(ctx).Warn().Err(damage).Str("path", LexSnapshotPath(s.path))
	l.idx = nil
	if s.untouched {
		log.Msg("lexical snapshot damaged: searching with FTS5 (the next exocortex up or ingest rebuilds it)")
		l.damaged = true
		return nil
	}
	log.Msg("lexical snapshot damaged: rebuilding the index from the database")
	if err := s.rebuildLex(ctx); err != nil {
		return fmt.Errorf("rebuild lexical index: %w", err)
	}
	return nil
}

// ErrLexicalCold: a store opened by OpenUntouched has no memory lexical
// index it can load cheaply (Search then ranks with FTS5).
var ErrLexicalCold = errors.New("lexical index not loadable without a build")

// LexReplayMax is how many lexical log entries after its snapshot a store
// opened by OpenUntouched replays; further behind, Search ranks with FTS5
// rather than replay them on every start.
var LexReplayMax int64 = 20_000

// replayLex applies the lexical log after the index's position; rebuild
// says the log emptied the table (the index must be built again). Called
// with s.lex.mu held.
func (s *Store) replayLex(ctx context.Context) (rebuild bool, err error) {
	l := &s.lex
	rows, err := s.r.QueryContext(ctx, `
SELECT l.seq, l.row, f.rowid IS NOT NULL, coalesce(f.body, ''), coalesce(f.lemmas, ''), coalesce(f.title, ''),
	coalesce(f.section, ''), coalesce(f.heads, ''), coalesce(c.lang, '')
FROM lex_log l LEFT JOIN chunks_fts f ON f.rowid = l.row LEFT JOIN chunks c ON c.id = l.row
WHERE l.seq > ? ORDER BY l.seq`, l.seq)
	if err != nil {
		return false, fmt.Errorf("replay lexical log from %d: %w", l.seq, err)
	}
	defer rows.Close()
	seq := l.seq
	for rows.Next() {
		var r lexical.Row
		var present bool
		if err := rows.Scan(&seq, &r.ID, &present, &r.Cols[lexical.Body], &r.Cols[lexical.Lemmas], &r.Cols[lexical.Title],
			&r.Cols[lexical.Section], &r.Cols[lexical.Heads], &r.Lang); err != nil {
			return false, fmt.Errorf("replay lexical log from %d: %w", l.seq, err)
		}
		switch {
		case r.ID == lexAll:
			return true, nil
		case present:
			l.idx.Put(r)
		default:
			l.idx.Delete(r.ID)
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("replay lexical log from %d: %w", l.seq, err)
	}
	l.replayed += seq - l.seq
	l.seq = seq
	return false, nil
}

// SaveLexSnapshot brings the memory lexical index up to date and saves its
// snapshot when the index is loaded in this process and holds log entries
// its last saved snapshot lacks. A system stops with it, so that the next
// process (exocortex search without a running system above all) loads the
// index without replaying what this one wrote. A store opened by
// OpenUntouched saves nothing.
func (s *Store) SaveLexSnapshot(ctx context.Context) error {
	if s.untouched {
		return nil
	}
	s.lex.bg.Wait()
	s.lex.mu.Lock()
	loaded := s.lex.idx != nil
	s.lex.mu.Unlock()
	if !loaded {
		return nil
	}
	if _, err := s.LexicalIndex(ctx); err != nil {
		return err
	}
	s.lex.bg.Wait() // the catch-up may have started a save of its own
	l := &s.lex
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isSaved(l.seq) {
		return nil
	}
	if !s.writeLexSnapshot(ctx, l.idx, l.seq) {
		return fmt.Errorf("lexical snapshot %s not saved (the log says why)", LexSnapshotPath(s.path))
	}
	l.replayed = 0
	l.markSaved(l.seq)
	return nil
}

// rebuildLex builds the index from the full-text table, and the log
// position, in one read transaction (one snapshot of the database).
func (s *Store) rebuildLex(ctx context.Context) error {
	t0 := time.Now()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM lex_log`).Scan(&seq); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `
SELECT f.rowid, f.body, f.lemmas, f.title, f.section, f.heads, coalesce(c.lang, '')
FROM chunks_fts f LEFT JOIN chunks c ON c.id = f.rowid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	idx := lexical.New()
	for rows.Next() {
		var r lexical.Row
		var body, lemmas, title, section, heads sql.NullString
		if err := rows.Scan(&r.ID, &body, &lemmas, &title, &section, &heads, &r.Lang); err != nil {
			return err
		}
		r.Cols = [lexical.NumColumns]string{body.String, lemmas.String, title.String, section.String, heads.String}
		idx.Put(r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	idx.Trim()
	s.lex.idx, s.lex.seq = idx, seq
	zerolog.Ctx(ctx).Debug().Int("rows", idx.Len()).Dur("took", time.Since(t0)).Msg("lexical index built")
	s.saveLexSnapshot(ctx)
	return nil
}

// LexSnapshotEvery: a store saves its memory index's snapshot after a full
// build and after replaying this many log entries since the last one.
var LexSnapshotEvery int64 = 50_000

// LexSnapshotPath is where the memory lexical index of the database at
// dbPath keeps its snapshot.
func LexSnapshotPath(dbPath string) string { return dbPath + ".lex" }

// lexStamp is a snapshot's stamp: the database's log epoch and the log
// position the index holds.
func lexStamp(epoch string, seq int64) []byte { return fmt.Appendf(nil, "%s %d", epoch, seq) }

func (s *Store) lexEpoch(ctx context.Context) (string, error) {
	var epoch string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'lex_epoch'`).Scan(&epoch)
	return epoch, err
}

// saveLexSnapshot writes the index's snapshot (a temporary file renamed
// over the last one); failing is not an error: the next start rebuilds.
// Called with s.lex.mu held.
func (s *Store) saveLexSnapshot(ctx context.Context) {
	if s.untouched {
		return
	}
	if s.writeLexSnapshot(ctx, s.lex.idx, s.lex.seq) {
		s.lex.replayed = 0
		s.lex.markSaved(s.lex.seq)
	}
}

// writeLexSnapshot writes idx, which holds the log up to seq, as the
// snapshot; it reports whether it did.
func (s *Store) writeLexSnapshot(ctx context.Context, idx *lexical.Index, seq int64) bool {
	log := zerolog.Ctx(ctx)
	epoch, err := s.lexEpoch(ctx)
	if err != nil {
		log.Debug().Err(err).Msg("lexical snapshot not saved: no log epoch")
		return false
	}
	path := LexSnapshotPath(s.path)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		log.Debug().Err(err).Msg("lexical snapshot not saved")
		return false
	}
	defer os.Remove(tmp.Name())
	err = idx.WriteSnapshot(tmp, lexStamp(epoch, seq))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		log.Warn().Err(err).Str("path", path).Msg("lexical snapshot not saved")
		return false
	}
	return true
}

// loadLexSnapshot loads the index from its snapshot when it is this
// database's and the log still holds every entry after it; the caller then
// replays those. Called with s.lex.mu held.
func (s *Store) loadLexSnapshot(ctx context.Context) bool {
	log := zerolog.Ctx(ctx)
	path := LexSnapshotPath(s.path)
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	idx, stamp, err := lexical.ReadSnapshot(f)
	if err != nil {
		log.Warn().Err(err).Str("path", path).Msg("lexical snapshot unreadable: rebuilding from the database")
		return false
	}
	var epoch string
	var seq int64
	if _, err := fmt.Sscanf(string(stamp), "%s %d", &epoch, &seq); err != nil {
		return false
	}
	want, err := s.lexEpoch(ctx)
	if err != nil || want != epoch {
		return false
	}
	var lo, hi int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce((SELECT min(seq) FROM lex_log), 0), coalesce((SELECT max(seq) FROM lex_log), 0)`).Scan(&lo, &hi); err != nil {
		return false
	}
	if hi < seq || lo > seq+1 {
		return false // the log moved on past the snapshot, or the database went back
	}
	s.lex.idx, s.lex.seq = idx, seq
	s.lex.markSaved(seq)
	if v := idx.ReadVersion(); v < lexical.SnapshotVersion && !s.untouched && s.lex.saving.CompareAndSwap(false, true) {
		// An older format, converted as it loaded: write it again in the
		// current one (in the background), so the next start reads it
		// without converting (at 1M chunks, 4 s instead of 1 s).
		log.Info().Int("format", v).Str("path", path).Msg("lexical snapshot of an older format: saving it again")
		s.lex.bg.Add(1)
		go func() {
			defer s.lex.bg.Done()
			defer s.lex.saving.Store(false)
			s.writeLexSnapshot(context.WithoutCancel(ctx), idx, seq)
		}()
	}
	return true
}
