// Package store is the SQLite index: documents, chunks with an FTS5 index,
// the block skeleton and the block graph.
//
// One process writes (the index stage, through Open); any number of others
// read at the same time through OpenReadOnly, thanks to WAL mode. Every write
// is an idempotent upsert in one transaction, ordered by the document version
// the event carries, so redelivered and reordered events converge.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/schemas"
)

// Errors; match them with errors.Is.
var (
	// ErrNotFound: no such chunk.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalid: the event lacks what the store keys on; retrying won't help.
	ErrInvalid = errors.New("store: invalid event")
	// ErrReadOnly: a write on a store opened with OpenReadOnly.
	ErrReadOnly = errors.New("store: opened read-only")
	// ErrSchema: the database's schema version is not the one this binary knows.
	ErrSchema = errors.New("store: schema version mismatch")
)

// Edge kinds. Edges are directed: (src, dst, EdgeParent) says dst is src's parent.
const (
	EdgeParent  = "parent"  // block -> its parent block, or the document id for a top-level block
	EdgeChild   = "child"   // parent (block or document id) -> child block
	EdgeSibling = "sibling" // between consecutive children of one parent, both directions
	EdgePrev    = "prev"    // block -> the block before it in document order
	EdgeNext    = "next"    // block -> the block after it in document order
	EdgeRef     = "ref"     // block -> each target it references
)

// BusyTimeout is how long a connection waits for a lock held by another
// connection before it fails with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// readConns bounds the read pool; each connection has its own page cache.
const readConns = 4

// Store is the SQLite index. Its methods are safe for concurrent use; set the
// exported fields before the first call.
type Store struct {
	// Weights are the BM25 column weights used when SearchOptions has none;
	// zero means WeightsFor the analyzer's mode.
	Weights Weights
	// Lexical is the engine that ranks Search (LexicalFTS5 or
	// LexicalMemory); empty means $EXOCORTEX_LEXICAL, else DefaultLexical.
	Lexical string

	path string
	w    *sql.DB // the single writer connection; nil when read-only
	r    *sql.DB // read-only pool

	// analyzer wrote the full-text rows and analyses queries (see UseAnalyzer).
	analyzer atomic.Pointer[analysis.Analyzer]
	// count caches the number of chunks for search (see dropCommon).
	count atomic.Pointer[countAt]
	// langs caches ChunkLangs.
	langs atomic.Pointer[langsAt]
	// scope caches the catalog scopes are evaluated over (AllowedChunks).
	scope scopeCache
	// lex is the in-memory lexical index (see LexicalIndex).
	lex lexIndex
	// writes counts writes, to prune the lexical log now and then.
	writes atomic.Int64
	// untouched: opened by OpenUntouched (no file written, the lexical
	// snapshot never saved); immutable: opened with SQLite's immutable=1,
	// the file's size and time then being fileAt (see Changed).
	untouched bool
	immutable bool
	fileAt    fileStamp
}

// Open opens (creating it if needed) the database at path for writing,
// in WAL mode, and brings its schema up to date. Only one process should
// have it open this way; readers elsewhere use OpenReadOnly.
func Open(path string) (*Store, error) {
	ctx := context.Background()
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	// FULL: a commit is on disk before the event that caused it is acked.
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Take the write lock at BEGIN, so a transaction never fails halfway
	// with SQLITE_BUSY when it upgrades from reading to writing.
	q.Set("_txlock", "immediate")
	wdsn, err := dsn(path, q)
	if err != nil {
		return nil, err
	}
	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := backfillScope(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Migration 7 names the lexical log; a database without the name gets one.
	if _, err := w.ExecContext(ctx, `INSERT OR IGNORE INTO meta (key, value) VALUES ('lex_epoch', lower(hex(randomblob(8))))`); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: name the lexical log: %w", path, err)
	}
	r, err := openReader(ctx, path)
	if err != nil {
		w.Close()
		return nil, err
	}
	s := &Store{path: path, w: w, r: r}
	if err := s.loadAnalyzer(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

// OpenReadOnly opens an existing database for reading (mode=ro). It works
// while another process holds the database open for writing; each query sees
// the writes committed before it started.
func OpenReadOnly(path string) (*Store, error) {
	ctx := context.Background()
	r, err := openReader(ctx, path)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, r: r}
	if err := s.loadAnalyzer(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return s, nil
}

// OpenUntouched opens an existing database for a reader that must leave
// the data directory as it found it (exocortex search and ask with nothing
// running on it). It reads as OpenReadOnly does, and differs in two ways:
//
//   - When the database has no -wal file (its last writer closed it and no
//     writer has it open), it is opened immutable (SQLite's immutable=1): no
//     -wal or -shm file is created and no lock taken. A plain read-only
//     open (mode=ro) of a WAL database without them creates both and leaves
//     them behind (modernc.org/sqlite v1.61: its reader cannot delete them).
//     With a -wal file (a writer has the database open, or one crashed) it
//     is opened mode=ro, so the commits in the WAL are read; SQLite then
//     writes its read mark into the -shm file (creating it if missing).
//     An immutable read assumes that nobody writes meanwhile: Changed says
//     whether someone did.
//   - The memory lexical index is loaded from its snapshot and brought up
//     to date from the lexical log in memory; it is never saved. Without a
//     snapshot, or with one more than LexReplayMax log entries behind,
//     Search ranks with FTS5 (the same BM25) rather than build the index.
func OpenUntouched(path string) (*Store, error) {
	ctx := context.Background()
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	immutable := false
	if _, err := os.Stat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		immutable = true
	}
	q := url.Values{}
	if immutable {
		q.Set("immutable", "1")
	}
	r, err := openReaderWith(ctx, path, q)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, r: r, untouched: true, immutable: immutable, fileAt: stampOf(st)}
	if err := s.loadAnalyzer(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return s, nil
}

// fileStamp is what tells a changed file: its size and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(fi os.FileInfo) fileStamp { return fileStamp{size: fi.Size(), mod: fi.ModTime()} }

// Changed reports whether the database file was written since an immutable
// open (OpenUntouched of a database without a -wal file): a writer that
// started meanwhile and checkpointed into it may have torn what was read,
// so read again through a new OpenUntouched (which then finds the -wal
// file). A writer's commits that stay in its WAL change nothing read here.
// Always false for the other opens.
func (s *Store) Changed() bool {
	if !s.immutable {
		return false
	}
	fi, err := os.Stat(s.path)
	return err != nil || stampOf(fi) != s.fileAt
}

func openReader(ctx context.Context, path string) (*sql.DB, error) {
	return openReaderWith(ctx, path, url.Values{})
}

// openReaderWith opens the read pool with more URI parameters q.
func openReaderWith(ctx context.Context, path string, q url.Values) (*sql.DB, error) {
	q.Set("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Set("_query_only", "1")
	rdsn, err := dsn(path, q)
	if err != nil {
		return nil, err
	}
	r, err := sql.Open("sqlite", rdsn)
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	r.SetMaxOpenConns(readConns)
	r.SetMaxIdleConns(readConns)
	if err := checkSchema(ctx, r); err != nil {
		r.Close()
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return r, nil
}

// dsn makes a "file:" URI, so that SQLite itself sees mode=ro, with the path
// escaped (a '?' or '#' in a file name is not a query).
func dsn(path string, q url.Values) (string, error) {
	if path == "" {
		return "", fmt.Errorf("store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("store: database path %s: %w", path, err)
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:/C:/...
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: p, RawQuery: q.Encode()}
	return u.String(), nil
}

// Close closes the database.
func (s *Store) Close() error {
	// The readers first: the writer's connection, closing last, then
	// checkpoints the WAL and deletes the -wal and -shm files, so that a
	// database closed cleanly is one file (which OpenUntouched opens
	// without creating any).
	s.lex.bg.Wait() // a snapshot being written reads the database
	errs := []error{s.r.Close()}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// Path is the database file the store was opened on.
func (s *Store) Path() string { return s.path }

type batchKey struct{}

// Batch runs fn with a context in which every write joins one transaction,
// committed (one fsync) when fn returns nil. Each write inside still succeeds
// or fails on its own (a savepoint each), so one bad item does not undo the
// others. The index stage applies a whole fetched batch of messages this way.
func (s *Store) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if s.w == nil {
		return ErrReadOnly
	}
	if _, nested := ctx.Value(batchKey{}).(*sql.Tx); nested {
		return fn(ctx)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin batch: %w", err)
	}
	defer tx.Rollback()
	if err := fn(context.WithValue(ctx, batchKey{}, tx)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit batch: %w", err)
	}
	return nil
}

// write runs fn in one immediate transaction on the writer connection, or,
// inside Batch, in a savepoint of the batch's transaction.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.w == nil {
		return ErrReadOnly
	}
	if s.writes.Add(1)%10_000 == 0 {
		inner := fn
		fn = func(tx *sql.Tx) error {
			if err := inner(tx); err != nil {
				return err
			}
			return pruneLexLog(ctx, tx)
		}
	}
	if tx, ok := ctx.Value(batchKey{}).(*sql.Tx); ok {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT item`); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_, _ = tx.ExecContext(context.WithoutCancel(ctx), `ROLLBACK TO item`)
			_, _ = tx.ExecContext(context.WithoutCancel(ctx), `RELEASE item`)
			return err
		}
		_, err := tx.ExecContext(ctx, `RELEASE item`)
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// UpsertChunk stores a chunk and its full-text row, or applies a tombstone.
// It returns applied=false when the write was ignored: the stored chunk is
// newer (or the same version with the same hash), the document has since
// moved past this version without the chunk, or the document was deleted at
// this version or later. A tombstone deletes the chunk if the stored version
// is not newer than the tombstone's.
func (s *Store) UpsertChunk(ctx context.Context, c *schemas.ChunkCreated) (applied bool, err error) {
	if c == nil {
		return false, fmt.Errorf("%w: nil chunk", ErrInvalid)
	}
	if err := c.Validate(); err != nil {
		return false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if c.Tombstone {
			applied, err = s.deleteChunk(ctx, tx, c)
		} else {
			applied, err = s.putChunk(ctx, tx, c)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("upsert chunk %s: %w", c.ChunkID, err)
	}
	return applied, nil
}

func (s *Store) deleteChunk(ctx context.Context, tx *sql.Tx, c *schemas.ChunkCreated) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE chunk_id = ? AND version <= ?`, c.ChunkID, c.DocVersion)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (s *Store) putChunk(ctx context.Context, tx *sql.Tx, c *schemas.ChunkCreated) (bool, error) {
	var version int64
	var hash string
	var spans sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT version, hash, block_spans FROM chunks WHERE chunk_id = ?`, c.ChunkID).Scan(&version, &hash, &spans)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case version > c.DocVersion:
		return false, nil
	case version == c.DocVersion && hash == c.Hash:
		// The same chunk again; a chunk indexed before block spans existed
		// takes them from it.
		if spans.Valid || len(c.BlockSpans) == 0 {
			return false, nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE chunks SET block_spans = ? WHERE chunk_id = ?`, jsonSpans(c.BlockSpans), c.ChunkID)
		return err == nil, err
	}
	stale, err := staleForDoc(ctx, tx, c)
	if err != nil || stale {
		return false, err
	}

	var id int64
	err = tx.QueryRowContext(ctx, `
INSERT INTO chunks (chunk_id, doc_id, ordinal, hash, text, section_path, lang, block_ids, refs, tokens, version, block_spans)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (chunk_id) DO UPDATE SET
	doc_id = excluded.doc_id, ordinal = excluded.ordinal, hash = excluded.hash, text = excluded.text,
	section_path = excluded.section_path, lang = excluded.lang, block_ids = excluded.block_ids,
	refs = excluded.refs, tokens = excluded.tokens, version = excluded.version, block_spans = excluded.block_spans
RETURNING id`,
		c.ChunkID, c.DocID, c.Ordinal, c.Hash, c.Text, jsonList(c.SectionPath), c.Lang,
		jsonList(c.BlockIDs), jsonList(c.Refs), c.Tokens, c.DocVersion, jsonSpans(c.BlockSpans)).Scan(&id)
	if err != nil {
		return false, err
	}

	var title, meta string
	err = tx.QueryRowContext(ctx, `SELECT title, meta FROM documents WHERE doc_id = ?`, c.DocID).Scan(&title, &meta)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// The document's structure has not arrived: the chunk is held, not
		// searchable, until it does (putDoc writes its full-text row).
		if _, err := tx.ExecContext(ctx, `DELETE FROM chunks_fts WHERE rowid = ?`, id); err != nil {
			return false, err
		}
		if err := logLex(ctx, tx, id); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	}
	if err := s.putFTS(ctx, tx, id, c.Text, titleText(title, parseMeta(meta)), c.SectionPath); err != nil {
		return false, err
	}
	return true, nil
}

// staleForDoc reports whether the chunk belongs to a document version that
// has been superseded: the document was deleted at this version or later, or
// its current structure is newer and does not list the chunk. (A chunk
// carried over unchanged into a newer version is listed, and kept.)
func staleForDoc(ctx context.Context, tx *sql.Tx, c *schemas.ChunkCreated) (bool, error) {
	var deletedAt int64
	err := tx.QueryRowContext(ctx, `SELECT version FROM deleted_docs WHERE doc_id = ?`, c.DocID).Scan(&deletedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case deletedAt >= c.DocVersion:
		return true, nil
	}
	var listed int
	err = tx.QueryRowContext(ctx, `
SELECT EXISTS (SELECT 1 FROM json_each(d.chunk_ids) WHERE value = ?)
FROM documents d WHERE d.doc_id = ? AND d.version > ?`, c.ChunkID, c.DocID, c.DocVersion).Scan(&listed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return listed == 0, nil
}

// LabelKeys are the document properties indexed with its title, so that a
// search for one finds the document's chunks: Markdown front matter's
// aliases and tags, a SiYuan document's alias and tags.
var LabelKeys = []string{"aliases", "alias", "tags", "tag"}

// titleText is what the title columns of a document's chunks index: its
// title, then its labels (see LabelKeys).
func titleText(title string, meta map[string]string) string {
	parts := []string{title}
	for _, k := range LabelKeys {
		if v := strings.TrimSpace(meta[k]); v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " / ")
}

// parseMeta decodes the documents.meta column; junk decodes as nil.
func parseMeta(s string) map[string]string {
	var m map[string]string
	if s == "" || json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}

// putFTS replaces the full-text row of chunk id, analysing its text, title
// (with the document's labels: see titleText) and section path.
func (s *Store) putFTS(ctx context.Context, tx *sql.Tx, id int64, text, title string, section []string) error {
	a := s.Analyzer()
	r := ftsRow{title: a.Words(title), section: a.Words(strings.Join(section, " / ")), heads: heads(a, title, section)}
	r.body, r.lemmas = a.Index(text)
	return putFTSRow(ctx, tx, id, r)
}

// heads is the heads column: the lemmas of the title and the section path.
func heads(a *analysis.Analyzer, title string, section []string) string {
	return a.Lemmas(title + " / " + strings.Join(section, " / "))
}

// ftsRow is one row of chunks_fts: analysed words and terms.
type ftsRow struct {
	body, lemmas, title, section, heads string
}

func putFTSRow(ctx context.Context, tx *sql.Tx, id int64, r ftsRow) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks_fts WHERE rowid = ?`, id); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO chunks_fts (rowid, body, lemmas, title, section, heads) VALUES (?, ?, ?, ?, ?, ?)`,
		id, r.body, r.lemmas, r.title, r.section, r.heads)
	if err != nil {
		return err
	}
	return logLex(ctx, tx, id)
}

// ApplyStructure stores a document's metadata, replaces its blocks and edges,
// and deletes its chunks that the structure no longer lists (unless they are
// newer than it). A deletion removes the document with its blocks, edges,
// chunks and full-text rows, and remembers the version so late writes from
// before it are ignored. It returns applied=false when the stored document
// (or its deletion) is newer.
func (s *Store) ApplyStructure(ctx context.Context, d *schemas.DocStructure) (applied bool, err error) {
	if d == nil {
		return false, fmt.Errorf("%w: nil structure", ErrInvalid)
	}
	if err := d.Validate(); err != nil {
		return false, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var stored int64
		err := tx.QueryRowContext(ctx, `
SELECT max(coalesce((SELECT version FROM documents WHERE doc_id = ?1), -1),
           coalesce((SELECT version FROM deleted_docs WHERE doc_id = ?1), -1))`, d.DocID).Scan(&stored)
		if err != nil {
			return err
		}
		if stored > d.Version {
			return nil
		}
		applied = true
		if d.Deleted {
			return deleteDoc(ctx, tx, d)
		}
		return s.putDoc(ctx, tx, d)
	})
	if err != nil {
		return false, fmt.Errorf("apply structure of doc %s: %w", d.DocID, err)
	}
	return applied, nil
}

func deleteDoc(ctx context.Context, tx *sql.Tx, d *schemas.DocStructure) error {
	stmts := []struct {
		q    string
		args []any
	}{
		{`DELETE FROM chunks WHERE doc_id = ? AND version <= ?`, []any{d.DocID, d.Version}},
		{`DELETE FROM edges WHERE doc_id = ?`, []any{d.DocID}},
		{`DELETE FROM blocks WHERE doc_id = ?`, []any{d.DocID}},
		{`DELETE FROM documents WHERE doc_id = ?`, []any{d.DocID}},
		{`DELETE FROM report_docs WHERE doc_id = ?`, []any{d.DocID}},
		{`DELETE FROM doc_tags WHERE doc_id = ?`, []any{d.DocID}},
		{`INSERT INTO deleted_docs (doc_id, version) VALUES (?, ?)
		  ON CONFLICT (doc_id) DO UPDATE SET version = max(version, excluded.version)`, []any{d.DocID, d.Version}},
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) putDoc(ctx context.Context, tx *sql.Tx, d *schemas.DocStructure) error {
	chunkIDs := jsonList(d.ChunkIDs)
	if err := putDocRow(ctx, tx, d, chunkIDs); err != nil {
		return err
	}
	// Blocks and edges: replace. A block id another document owned moves here.
	for _, q := range []string{`DELETE FROM edges WHERE doc_id = ?`, `DELETE FROM blocks WHERE doc_id = ?`} {
		if _, err := tx.ExecContext(ctx, q, d.DocID); err != nil {
			return err
		}
		progress(ctx)
	}
	if err := putBlocks(ctx, tx, d); err != nil {
		return err
	}
	if err := putEdges(ctx, tx, d); err != nil {
		return err
	}

	// Chunks the structure no longer lists (missed tombstones); the trigger
	// removes their full-text rows.
	if _, err := tx.ExecContext(ctx, `
DELETE FROM chunks WHERE doc_id = ? AND version <= ?
	AND chunk_id NOT IN (SELECT value FROM json_each(?))`, d.DocID, d.Version, chunkIDs); err != nil {
		return err
	}
	return s.retitle(ctx, tx, d.DocID, titleText(d.Title, d.Meta))
}

// putDocRow writes the document's row (chunkIDs its chunk ids as a JSON
// list), takes it off the deleted documents and marks or unmarks it as a
// research report.
func putDocRow(ctx context.Context, tx *sql.Tx, d *schemas.DocStructure, chunkIDs string) error {
	meta := "{}"
	if len(d.Meta) > 0 {
		b, err := json.Marshal(d.Meta)
		if err != nil {
			return err
		}
		meta = string(b)
	}
	_, err := tx.ExecContext(ctx, `
INSERT INTO documents (doc_id, source, path, notebook, title, title_path, parent_doc_id, hash, version, meta, chunk_ids,
	chunk_count, updated_at, notebook_name, doc_time, created)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (doc_id) DO UPDATE SET
	source = excluded.source, path = excluded.path, notebook = excluded.notebook, title = excluded.title,
	title_path = excluded.title_path, parent_doc_id = excluded.parent_doc_id, hash = excluded.hash,
	version = excluded.version, meta = excluded.meta, chunk_ids = excluded.chunk_ids,
	chunk_count = excluded.chunk_count, updated_at = excluded.updated_at, notebook_name = excluded.notebook_name,
	doc_time = excluded.doc_time, created = excluded.created`,
		d.DocID, d.Source, d.Path, d.Notebook, d.Title, jsonList(d.TitlePath), d.ParentDocID, d.Hash,
		d.Version, meta, chunkIDs, len(d.ChunkIDs), time.Now().UTC().Format(time.RFC3339Nano),
		notebookName(d.Notebook, d.NotebookName, d.Meta), docTime(d.Updated, d.Created, meta, d.Version), unixNano(d.Created))
	if err != nil {
		return err
	}
	if err := putDocTags(ctx, tx, d.DocID, docTags(d.Tags, d.Meta)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM deleted_docs WHERE doc_id = ?`, d.DocID); err != nil {
		return err
	}
	report := `DELETE FROM report_docs WHERE doc_id = ?`
	if d.Report || schemas.IsReportMeta(d.Meta) {
		report = `INSERT OR IGNORE INTO report_docs (doc_id) VALUES (?)`
	}
	_, err = tx.ExecContext(ctx, report, d.DocID)
	return err
}

// putBlocks writes the document's blocks in order; a block id another
// document owned moves here.
func putBlocks(ctx context.Context, tx *sql.Tx, d *schemas.DocStructure) error {
	insBlock, err := tx.PrepareContext(ctx, `
INSERT INTO blocks (block_id, doc_id, type, parent_id, chunk_id, ordinal) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (block_id) DO UPDATE SET doc_id = excluded.doc_id, type = excluded.type,
	parent_id = excluded.parent_id, chunk_id = excluded.chunk_id, ordinal = excluded.ordinal`)
	if err != nil {
		return err
	}
	defer insBlock.Close()
	for i, b := range d.Blocks {
		if b.ID == "" {
			continue
		}
		if _, err := insBlock.ExecContext(ctx, b.ID, d.DocID, b.Type, b.ParentID, b.ChunkID, i); err != nil {
			return fmt.Errorf("block %s: %w", b.ID, err)
		}
		progress(ctx)
	}
	return nil
}

// putEdges writes the document's edges (BuildEdges).
func putEdges(ctx context.Context, tx *sql.Tx, d *schemas.DocStructure) error {
	insEdge, err := tx.PrepareContext(ctx, `
INSERT INTO edges (src, dst, kind, doc_id) VALUES (?, ?, ?, ?)
ON CONFLICT (src, dst, kind) DO UPDATE SET doc_id = excluded.doc_id`)
	if err != nil {
		return err
	}
	defer insEdge.Close()
	for _, e := range BuildEdges(d) {
		if _, err := insEdge.ExecContext(ctx, e.Src, e.Dst, e.Kind, d.DocID); err != nil {
			return fmt.Errorf("edge %s -%s-> %s: %w", e.Src, e.Kind, e.Dst, err)
		}
		progress(ctx)
	}
	return nil
}

// retitle writes the full-text rows of a document's chunks that were held
// until it arrived (chunks usually arrive before their document, and are
// not searchable without it), and rewrites the title and heads of its rows
// whose title column does not hold title's words (title is titleText's,
// labels included); the body's columns of those are kept as they are.
func (s *Store) retitle(ctx context.Context, tx *sql.Tx, docID, title string) error {
	if err := s.releaseHeld(ctx, tx, docID, title); err != nil {
		return err
	}
	a := s.Analyzer()
	words := a.Words(title)
	type row struct {
		id       int64
		r        ftsRow
		sections string
	}
	rows, err := tx.QueryContext(ctx, `
SELECT c.id, f.body, f.lemmas, f.section, c.section_path FROM chunks c JOIN chunks_fts f ON f.rowid = c.id
WHERE c.doc_id = ? AND f.title IS NOT ?`, docID, words)
	if err != nil {
		return err
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.r.body, &r.r.lemmas, &r.r.section, &r.sections); err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range todo {
		r.r.title = words
		r.r.heads = heads(a, title, parseList(r.sections))
		if err := putFTSRow(ctx, tx, r.id, r.r); err != nil {
			return err
		}
		progress(ctx)
	}
	return nil
}

// releaseHeld writes the full-text rows of a document's chunks that have
// none: those stored before the document's structure arrived.
func (s *Store) releaseHeld(ctx context.Context, tx *sql.Tx, docID, title string) error {
	type row struct {
		id             int64
		text, sections string
	}
	rows, err := tx.QueryContext(ctx, `
SELECT c.id, c.text, c.section_path FROM chunks c
WHERE c.doc_id = ? AND NOT EXISTS (SELECT 1 FROM chunks_fts f WHERE f.rowid = c.id)`, docID)
	if err != nil {
		return err
	}
	var todo []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.text, &r.sections); err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range todo {
		if err := s.putFTS(ctx, tx, r.id, r.text, title, parseList(r.sections)); err != nil {
			return fmt.Errorf("full-text row of held chunk %d: %w", r.id, err)
		}
		progress(ctx)
	}
	return nil
}

// Reindex rewrites every full-text row from the chunks and documents tables
// with the store's analyzer (UseAnalyzer calls it when the analyzer changes).
func (s *Store) Reindex(ctx context.Context) error {
	err := s.write(ctx, func(tx *sql.Tx) error { return s.reindex(ctx, tx) })
	if err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	return nil
}

func (s *Store) reindex(ctx context.Context, tx *sql.Tx) error {
	const page = 500
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks_fts`); err != nil {
		return err
	}
	if err := logLex(ctx, tx, lexAll); err != nil {
		return err
	}
	type row struct {
		id                          int64
		text, title, meta, sections string
	}
	last := int64(-1 << 63)
	for {
		rows, err := tx.QueryContext(ctx, `
SELECT c.id, c.text, d.title, d.meta, c.section_path
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.id > ? ORDER BY c.id LIMIT ?`, last, page)
		if err != nil {
			return err
		}
		var todo []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.text, &r.title, &r.meta, &r.sections); err != nil {
				rows.Close()
				return err
			}
			todo = append(todo, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range todo {
			if err := s.putFTS(ctx, tx, r.id, r.text, titleText(r.title, parseMeta(r.meta)), parseList(r.sections)); err != nil {
				return err
			}
			last = r.id
		}
		if len(todo) < page {
			return nil
		}
	}
}

// Edge is one directed edge of the block graph.
type Edge struct {
	Src, Dst, Kind string
	// DocID is the document whose structure produced the edge.
	DocID string
}

// BuildEdges derives a document's block-level edges from its skeleton: parent
// and child between each block and its parent (the document id for top-level
// blocks), sibling both ways between consecutive children of one parent,
// prev/next between consecutive blocks in document order, and ref from a
// block to each of its targets. A block with the document's own id (a
// document node) takes part only as a parent.
func BuildEdges(d *schemas.DocStructure) []Edge {
	var out []Edge
	add := func(src, dst, kind string) {
		if src != "" && dst != "" {
			out = append(out, Edge{Src: src, Dst: dst, Kind: kind, DocID: d.DocID})
		}
	}
	children := map[string][]string{}
	var parents []string // in first-seen order, for a stable result
	var order []string
	for _, b := range d.Blocks {
		if b.ID == "" || b.ID == d.DocID {
			continue
		}
		p := b.ParentID
		if p == "" {
			p = d.DocID
		}
		add(b.ID, p, EdgeParent)
		add(p, b.ID, EdgeChild)
		if _, ok := children[p]; !ok {
			parents = append(parents, p)
		}
		children[p] = append(children[p], b.ID)
		order = append(order, b.ID)
		for _, t := range b.Refs {
			add(b.ID, t, EdgeRef)
		}
	}
	for _, p := range parents {
		kids := children[p]
		for i := 1; i < len(kids); i++ {
			add(kids[i-1], kids[i], EdgeSibling)
			add(kids[i], kids[i-1], EdgeSibling)
		}
	}
	for i := 1; i < len(order); i++ {
		add(order[i-1], order[i], EdgeNext)
		add(order[i], order[i-1], EdgePrev)
	}
	return out
}

// Counts returns how many documents and chunks the index holds.
func (s *Store) Counts(ctx context.Context) (docs, chunks int, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)`).Scan(&docs, &chunks)
	if err != nil {
		return 0, 0, fmt.Errorf("count: %w", err)
	}
	return docs, chunks, nil
}

// LangsTTL is how long ChunkLangs keeps its counts.
const LangsTTL = 30 * time.Second

type langsAt struct {
	n  map[string]int
	at time.Time
}

// ChunkLangs counts the chunks of each language ("ru", "en"; "" for
// undetermined), re-read at most every LangsTTL. The map is shared: do not
// change it.
func (s *Store) ChunkLangs(ctx context.Context) (map[string]int, error) {
	if c := s.langs.Load(); c != nil && time.Since(c.at) < LangsTTL {
		return c.n, nil
	}
	if s.LexicalEngine() == LexicalMemory {
		// The memory lexical index holds every chunk's language: counting
		// there spares a scan of the chunks table (0.1 s at 100k chunks,
		// paid by every search of a process that searches once).
		if idx, err := s.LexicalIndex(ctx); err == nil {
			n := idx.LangCounts()
			s.langs.Store(&langsAt{n: n, at: time.Now()})
			return n, nil
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT lang, count(*) FROM chunks GROUP BY lang`)
	if err != nil {
		return nil, fmt.Errorf("count chunk languages: %w", err)
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var lang string
		var k int
		if err := rows.Scan(&lang, &k); err != nil {
			return nil, fmt.Errorf("count chunk languages: %w", err)
		}
		n[lang] = k
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count chunk languages: %w", err)
	}
	s.langs.Store(&langsAt{n: n, at: time.Now()})
	return n, nil
}

// Chunk is a stored chunk.
type Chunk struct {
	ChunkID     string
	DocID       string
	Ordinal     int
	Hash        string
	Text        string
	SectionPath []string
	Lang        string
	BlockIDs    []string
	// BlockSpans place each block's text in Text; nil for a chunk indexed
	// before block spans existed.
	BlockSpans []schemas.BlockSpan
	Refs       []string
	Tokens     int
	// Version is the document version the chunk was cut from.
	Version int64
}

// Chunk returns the chunk with id chunkID, or ErrNotFound.
func (s *Store) Chunk(ctx context.Context, chunkID string) (*Chunk, error) {
	var c Chunk
	var section, blocks, refs string
	var spans sql.NullString
	err := s.r.QueryRowContext(ctx, `
SELECT chunk_id, doc_id, ordinal, hash, text, section_path, lang, block_ids, refs, tokens, version, block_spans
FROM chunks WHERE chunk_id = ?`, chunkID).Scan(&c.ChunkID, &c.DocID, &c.Ordinal, &c.Hash, &c.Text,
		&section, &c.Lang, &blocks, &refs, &c.Tokens, &c.Version, &spans)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("chunk %s: %w", chunkID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", chunkID, err)
	}
	c.SectionPath, c.BlockIDs, c.Refs = parseList(section), parseList(blocks), parseList(refs)
	c.BlockSpans = parseSpans(spans)
	return &c, nil
}

// Neighbors returns the edges out of blockID, of the given kinds (all kinds
// when none are given), grouped by kind in the order the kinds were given
// and then in document order of the target.
func (s *Store) Neighbors(ctx context.Context, blockID string, kinds ...string) ([]Edge, error) {
	q := `
SELECT e.src, e.dst, e.kind, e.doc_id FROM edges e LEFT JOIN blocks b ON b.block_id = e.dst
WHERE e.src = ?`
	args := []any{blockID}
	order := `e.kind`
	if len(kinds) > 0 {
		q += ` AND e.kind IN (` + strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",") + `)`
		for _, k := range kinds {
			args = append(args, k)
		}
		order = `CASE e.kind`
		for i, k := range kinds {
			order += fmt.Sprintf(" WHEN ? THEN %d", i)
			args = append(args, k)
		}
		order += ` END`
	}
	q += ` ORDER BY ` + order + `, coalesce(b.ordinal, -1), e.dst`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("neighbors of %s: %w", blockID, err)
	}
	defer rows.Close()
	var out []Edge
	for rows.Next() {
		var e Edge
		if err := rows.Scan(&e.Src, &e.Dst, &e.Kind, &e.DocID); err != nil {
			return nil, fmt.Errorf("neighbors of %s: %w", blockID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("neighbors of %s: %w", blockID, err)
	}
	return out, nil
}

// jsonList encodes a string list as a JSON array ("[]" for nil).
func jsonList(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v) // a []string always marshals
	return string(b)
}

// jsonSpans encodes block spans as a JSON array ("[]" for none: a chunk
// indexed with spans that has none, unlike NULL).
func jsonSpans(v []schemas.BlockSpan) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v) // plain structs always marshal
	return string(b)
}

// parseSpans decodes the block_spans column; NULL and junk decode as nil.
func parseSpans(s sql.NullString) []schemas.BlockSpan {
	var v []schemas.BlockSpan
	if !s.Valid || json.Unmarshal([]byte(s.String), &v) != nil || len(v) == 0 {
		return nil
	}
	return v
}

// ChunksWithoutSpans counts the chunks indexed before block spans existed
// (their documents' next change, or the sources' next pass, brings them).
func (s *Store) ChunksWithoutSpans(ctx context.Context) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM chunks WHERE block_spans IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count chunks without block spans: %w", err)
	}
	return n, nil
}

// parseList decodes a JSON array written by jsonList; junk decodes as nil.
func parseList(s string) []string {
	var v []string
	if json.Unmarshal([]byte(s), &v) != nil {
		return nil
	}
	return v
}
