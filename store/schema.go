package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are applied in order; PRAGMA user_version holds how many have
// run. Append to the list, never edit an entry that has shipped.
var migrations = []string{
	// 1: documents, chunks with their full-text index, block skeleton, graph.
	`
CREATE TABLE documents (
	doc_id        TEXT PRIMARY KEY,
	source        TEXT NOT NULL DEFAULT '',
	path          TEXT NOT NULL DEFAULT '',
	notebook      TEXT NOT NULL DEFAULT '',
	title         TEXT NOT NULL DEFAULT '',
	title_path    TEXT NOT NULL DEFAULT '[]', -- JSON array
	parent_doc_id TEXT NOT NULL DEFAULT '',
	hash          TEXT NOT NULL DEFAULT '',
	version       INTEGER NOT NULL DEFAULT 0,
	meta          TEXT NOT NULL DEFAULT '{}', -- JSON object
	chunk_ids     TEXT NOT NULL DEFAULT '[]', -- JSON array, the current chunks in order
	chunk_count   INTEGER NOT NULL DEFAULT 0,
	updated_at    TEXT NOT NULL DEFAULT ''    -- RFC 3339, when the index wrote the row
) STRICT;

-- Documents deleted at some version; a late write older than that is ignored.
CREATE TABLE deleted_docs (
	doc_id  TEXT PRIMARY KEY,
	version INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- id is an alias of the rowid, so VACUUM keeps it and chunks_fts stays keyed.
-- No foreign key to documents: a document's chunks arrive before its structure.
CREATE TABLE chunks (
	id           INTEGER PRIMARY KEY,
	chunk_id     TEXT NOT NULL UNIQUE,
	doc_id       TEXT NOT NULL,
	ordinal      INTEGER NOT NULL DEFAULT 0,
	hash         TEXT NOT NULL,
	text         TEXT NOT NULL DEFAULT '',
	section_path TEXT NOT NULL DEFAULT '[]', -- JSON array
	lang         TEXT NOT NULL DEFAULT '',
	block_ids    TEXT NOT NULL DEFAULT '[]', -- JSON array
	refs         TEXT NOT NULL DEFAULT '[]', -- JSON array
	tokens       INTEGER NOT NULL DEFAULT 0,
	version      INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX chunks_doc ON chunks (doc_id, ordinal);

CREATE TABLE blocks (
	block_id  TEXT PRIMARY KEY,
	doc_id    TEXT NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
	type      TEXT NOT NULL DEFAULT '',
	parent_id TEXT NOT NULL DEFAULT '',
	chunk_id  TEXT NOT NULL DEFAULT '',
	ordinal   INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX blocks_doc ON blocks (doc_id);
CREATE INDEX blocks_chunk ON blocks (chunk_id);

CREATE TABLE edges (
	src    TEXT NOT NULL,
	dst    TEXT NOT NULL,
	kind   TEXT NOT NULL,
	doc_id TEXT NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
	PRIMARY KEY (src, dst, kind)
) STRICT, WITHOUT ROWID;
CREATE INDEX edges_doc ON edges (doc_id);
CREATE INDEX edges_dst ON edges (dst, kind);

-- One row per chunk, rowid = chunks.id. The content is stored here (snippets
-- need it); body, title and section are folded (ё -> е) before indexing.
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
	body, lemmas, title, section,
	tokenize = 'unicode61 remove_diacritics 2'
);

-- Whatever deletes a chunk deletes its full-text row.
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
	DELETE FROM chunks_fts WHERE rowid = old.id;
END;
`,
	// 2: the analyzer's terms. The full-text row now holds analysed words
	// (body, title, section), the body's lemmas and the title's and section
	// path's lemmas (heads); meta records which analyzer wrote them. The old
	// rows are dropped: Open rebuilds them (see Store.UseAnalyzer).
	`
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks_fts;
-- One row per chunk, rowid = chunks.id. Every column holds the analyzer's
-- output (space-separated terms), never the original text.
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
	body, lemmas, title, section, heads,
	tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
	DELETE FROM chunks_fts WHERE rowid = old.id;
END;
INSERT INTO meta (key, value) VALUES ('analyzer', 'none');
`,
	// 3: which content of each chunk has a vector in the vector store, and
	// from which embedding model. A chunk's row goes with the chunk; a new
	// hash or model makes the chunk due for embedding again.
	`
CREATE TABLE chunk_vectors (
	chunk_id TEXT PRIMARY KEY,
	hash     TEXT NOT NULL,
	model    TEXT NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TRIGGER chunk_vectors_delete AFTER DELETE ON chunks BEGIN
	DELETE FROM chunk_vectors WHERE chunk_id = old.chunk_id;
END;
`,
	// 4: the full-text index's vocabulary (term -> rows holding it), so a
	// query can leave out terms common enough to make ranking slow.
	`
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab('chunks_fts', 'row');
`,
	// 5: the title columns also hold the document's labels (aliases, tags;
	// see LabelKeys). Recording the analyzer as version 0 of its mode makes
	// the writer rebuild every full-text row, with the same mode, when it
	// opens the database (see loadAnalyzer).
	`
UPDATE meta SET value = substr(value, 1, instr(value, '/')) || '0' WHERE key = 'analyzer' AND instr(value, '/') > 0;
`,
	// 6: where each block's text lies in a chunk's text (a JSON array of
	// {id, start, end}). NULL for chunks indexed before: the chunk stage
	// sends them again with their spans (see UpsertChunk).
	`
ALTER TABLE chunks ADD COLUMN block_spans TEXT;
`,
	// 7: the lexical log: every change of a full-text row (a write or a
	// delete of row, -1 when the whole table was emptied), so an in-memory
	// lexical index in any process follows the table (see lexIndex). Rows are
	// written in the same transaction as the change itself.
	`
CREATE TABLE IF NOT EXISTS lex_log (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	row INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS lex_log_chunk_delete AFTER DELETE ON chunks BEGIN
	INSERT INTO lex_log (row) VALUES (old.id);
END;
-- Names this database's log, so a snapshot of another's is never replayed onto it.
INSERT OR IGNORE INTO meta (key, value) VALUES ('lex_epoch', lower(hex(randomblob(8))));
`,
	// 8: the documents that are saved research reports (DocStructure.Report:
	// front matter "exocortex: report", SiYuan custom-exocortex-report), which
	// retrieval leaves out unless a query asks for reports. A document
	// indexed before whose meta already marks it is flagged here.
	`
CREATE TABLE IF NOT EXISTS report_docs (
	doc_id TEXT PRIMARY KEY
) STRICT, WITHOUT ROWID;
INSERT OR IGNORE INTO report_docs (doc_id)
	SELECT doc_id FROM documents WHERE json_valid(meta) AND (
		lower(trim(coalesce(json_extract(meta, '$.exocortex'), ''))) = 'report' OR
		trim(coalesce(json_extract(meta, '$."custom-exocortex-report"'), '')) != '');
`,
	// 9: what a query's scope filters on (see DocFilter): each document's
	// notebook name, its own time (doc_time, unix nanoseconds; 0 unknown)
	// and creation time, and its tags; scope_seq counts the changes that
	// alter a scope's answer, so a reader knows when its catalog is stale.
	// Documents indexed before are filled in by Open (scope_backfill: their
	// front matter's tags and dates; #tags in text need a new ingest).
	`
ALTER TABLE documents ADD COLUMN notebook_name TEXT NOT NULL DEFAULT '';
ALTER TABLE documents ADD COLUMN doc_time INTEGER NOT NULL DEFAULT 0;
ALTER TABLE documents ADD COLUMN created INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS documents_notebook ON documents (notebook);
CREATE INDEX IF NOT EXISTS documents_time ON documents (doc_time);
CREATE TABLE IF NOT EXISTS doc_tags (
	tag    TEXT NOT NULL,
	doc_id TEXT NOT NULL,
	PRIMARY KEY (tag, doc_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_tags_doc ON doc_tags (doc_id);
CREATE TABLE IF NOT EXISTS scope_seq (n INTEGER NOT NULL) STRICT;
INSERT INTO scope_seq (n) VALUES (0);
CREATE TRIGGER IF NOT EXISTS scope_doc_insert AFTER INSERT ON documents BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_doc_update AFTER UPDATE ON documents BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_doc_delete AFTER DELETE ON documents BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_chunk_insert AFTER INSERT ON chunks BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_chunk_update AFTER UPDATE OF doc_id, lang ON chunks BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_chunk_delete AFTER DELETE ON chunks BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_tag_insert AFTER INSERT ON doc_tags BEGIN UPDATE scope_seq SET n = n + 1; END;
CREATE TRIGGER IF NOT EXISTS scope_tag_delete AFTER DELETE ON doc_tags BEGIN UPDATE scope_seq SET n = n + 1; END;
INSERT OR REPLACE INTO meta (key, value) SELECT 'scope_backfill', 'pending' WHERE EXISTS (SELECT 1 FROM documents);
`,
	// 10: which documents each scope change touched, so a reader's catalog
	// follows a write by reloading those documents alone (see
	// scopeCatalog): every change that bumps scope_seq also records, in the
	// same statement, the document(s) it touched with the new scope_seq.
	// One row per document (its latest change), so the table never needs
	// pruning. The triggers of migration 9 are replaced by ones doing both;
	// a document update counts only when a field a scope reads changes.
	`
CREATE TABLE IF NOT EXISTS scope_docs (
	doc_id TEXT PRIMARY KEY,
	seq    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS scope_docs_seq ON scope_docs (seq);
DROP TRIGGER IF EXISTS scope_doc_insert;
DROP TRIGGER IF EXISTS scope_doc_update;
DROP TRIGGER IF EXISTS scope_doc_delete;
DROP TRIGGER IF EXISTS scope_chunk_insert;
DROP TRIGGER IF EXISTS scope_chunk_update;
DROP TRIGGER IF EXISTS scope_chunk_delete;
DROP TRIGGER IF EXISTS scope_tag_insert;
DROP TRIGGER IF EXISTS scope_tag_delete;
CREATE TRIGGER scope_doc_insert AFTER INSERT ON documents BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT new.doc_id, n FROM scope_seq WHERE true
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_doc_update AFTER UPDATE OF doc_id, source, path, notebook, notebook_name, doc_time ON documents BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT old.doc_id, n FROM scope_seq
		UNION ALL SELECT new.doc_id, n FROM scope_seq WHERE new.doc_id != old.doc_id
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_doc_delete AFTER DELETE ON documents BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT old.doc_id, n FROM scope_seq WHERE true
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_chunk_insert AFTER INSERT ON chunks BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT new.doc_id, n FROM scope_seq WHERE true
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_chunk_update AFTER UPDATE OF doc_id, lang ON chunks BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT old.doc_id, n FROM scope_seq
		UNION ALL SELECT new.doc_id, n FROM scope_seq WHERE new.doc_id != old.doc_id
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_chunk_delete AFTER DELETE ON chunks BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT old.doc_id, n FROM scope_seq WHERE true
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_tag_insert AFTER INSERT ON doc_tags BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT new.doc_id, n FROM scope_seq WHERE true
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER scope_tag_delete AFTER DELETE ON doc_tags BEGIN
	UPDATE scope_seq SET n = n + 1;
	INSERT INTO scope_docs (doc_id, seq) SELECT old.doc_id, n FROM scope_seq WHERE true
		ON CONFLICT (doc_id) DO UPDATE SET seq = excluded.seq;
END;
`,
}

// schemaVersion is the user_version of a fully migrated database.
var schemaVersion = len(migrations)

// migrate brings the database up to schemaVersion, one transaction per step.
func migrate(ctx context.Context, db *sql.DB) error {
	var have int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if have > schemaVersion {
		return fmt.Errorf("%w: database schema version %d, this binary knows %d", ErrSchema, have, schemaVersion)
	}
	for v := have; v < schemaVersion; v++ {
		if err := migrateStep(ctx, db, v); err != nil {
			return err
		}
	}
	return nil
}

func migrateStep(ctx context.Context, db *sql.DB, v int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate to %d: %w", v+1, err)
	}
	defer tx.Rollback()
	// Another process may have migrated while this one waited for the lock.
	var have int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("migrate to %d: %w", v+1, err)
	}
	if have > v {
		return nil
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return fmt.Errorf("migrate to %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return fmt.Errorf("migrate to %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate to %d: %w", v+1, err)
	}
	return nil
}

// checkSchema is what a read-only store does instead of migrating.
func checkSchema(ctx context.Context, db *sql.DB) error {
	var have int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case have == 0:
		return fmt.Errorf("%w: the database has no schema yet (open it once for writing)", ErrSchema)
	case have != schemaVersion:
		return fmt.Errorf("%w: database schema version %d, this binary knows %d", ErrSchema, have, schemaVersion)
	}
	return nil
}
