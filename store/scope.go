package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// What the index keeps of a document for scopes (DocFilter): its notebook's
// name, its own time, its tags. See migration 9.

// notebookName is the readable name of a document's notebook: the one the
// source gave, else SiYuan's meta notebook_name, else a folder root's base
// name; "" when unknown.
func notebookName(notebook, name string, meta map[string]string) string {
	switch {
	case name != "":
		return name
	case meta["notebook_name"] != "":
		return meta["notebook_name"]
	case strings.ContainsAny(notebook, `/\`):
		return filepath.Base(notebook)
	}
	return ""
}

// docTime is a document's own time in unix nanoseconds: the source's
// updated, else created, else the date its front matter gives (meta, JSON),
// else its version when that reads as a time; 0 when unknown.
func docTime(updated, created time.Time, meta string, version int64) int64 {
	switch {
	case !updated.IsZero():
		return updated.UnixNano()
	case !created.IsZero():
		return created.UnixNano()
	}
	if t, ok := metaTime(meta); ok {
		return t.UnixNano()
	}
	if time.Unix(0, version).After(minDocTime) {
		return version
	}
	return 0
}

// unixNano is t in unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// docTags are a document's tags as the index keeps them: those the source
// found and its meta's "tags" (all an event from before tags were carried
// has), normalised.
func docTags(tags []string, meta map[string]string) []string {
	all := append([]string(nil), tags...)
	if m := meta["tags"]; m != "" {
		all = append(all, strings.Split(m, ",")...)
	}
	return schemas.NormalizeTags(all)
}

// putDocTags replaces a document's tags.
func putDocTags(ctx context.Context, tx *sql.Tx, docID string, tags []string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM doc_tags WHERE doc_id = ?`, docID); err != nil {
		return fmt.Errorf("tags of doc %s: %w", docID, err)
	}
	for _, t := range tags {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO doc_tags (tag, doc_id) VALUES (?, ?)`, t, docID); err != nil {
			return fmt.Errorf("tags of doc %s: %w", docID, err)
		}
	}
	return nil
}

// backfillScope fills in the notebook name, time and tags of the documents
// indexed before migration 9, from what their rows hold (meta's tags and
// dates, the version); it runs once, when migration 9 left the mark.
func backfillScope(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fill in scope fields: %w", err)
	}
	defer tx.Rollback()
	var mark string
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'scope_backfill'`).Scan(&mark)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fill in scope fields: %w", err)
	}
	type row struct {
		id, notebook, meta string
		version            int64
	}
	var docs []row
	rows, err := tx.QueryContext(ctx, `SELECT doc_id, notebook, meta, version FROM documents`)
	if err != nil {
		return fmt.Errorf("fill in scope fields: %w", err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.notebook, &r.meta, &r.version); err != nil {
			rows.Close()
			return fmt.Errorf("fill in scope fields: %w", err)
		}
		docs = append(docs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fill in scope fields: %w", err)
	}
	for _, d := range docs {
		meta := parseMeta(d.meta)
		if _, err := tx.ExecContext(ctx, `UPDATE documents SET notebook_name = ?, doc_time = ? WHERE doc_id = ?`,
			notebookName(d.notebook, "", meta), docTime(time.Time{}, time.Time{}, d.meta, d.version), d.id); err != nil {
			return fmt.Errorf("fill in scope fields of doc %s: %w", d.id, err)
		}
		if err := putDocTags(ctx, tx, d.id, docTags(nil, meta)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key = 'scope_backfill'`); err != nil {
		return fmt.Errorf("fill in scope fields: %w", err)
	}
	return tx.Commit()
}

// DocScope is what a scope filters on of one document (DocFilter's
// fields): the index stage writes it with the document's vector points
// (retrieval.PointMetaOf) so a vector store with payloads can filter too.
type DocScope struct {
	Notebook, NotebookName string
	// Path is the document's path; RelPath the path within its notebook.
	Path, RelPath string
	Tags          []string // normalised
	Time          time.Time
}

// DocScopes returns the scope fields of the documents the index holds
// among docIDs (the others are left out).
func (s *Store) DocScopes(ctx context.Context, docIDs []string) (map[string]DocScope, error) {
	out := map[string]DocScope{}
	if len(docIDs) == 0 {
		return out, nil
	}
	ids, err := json.Marshal(docIDs)
	if err != nil {
		return nil, fmt.Errorf("document scopes: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT doc_id, source, notebook, notebook_name, path, doc_time,
	coalesce((SELECT group_concat(tag, char(10)) FROM doc_tags t WHERE t.doc_id = d.doc_id), '')
FROM documents d WHERE doc_id IN (SELECT value FROM json_each(?))`, string(ids))
	if err != nil {
		return nil, fmt.Errorf("document scopes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, source, tags string
		var d DocScope
		var at int64
		if err := rows.Scan(&id, &source, &d.Notebook, &d.NotebookName, &d.Path, &at, &tags); err != nil {
			return nil, fmt.Errorf("document scopes: %w", err)
		}
		d.RelPath = relPath(source, strings.ToLower(d.Path), strings.ToLower(d.Notebook), strings.ToLower(d.NotebookName))
		if tags != "" {
			d.Tags = strings.Split(tags, "\n")
		}
		if at != 0 {
			d.Time = time.Unix(0, at).UTC()
		}
		out[id] = d
	}
	return out, rows.Err()
}
