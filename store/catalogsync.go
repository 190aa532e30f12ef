package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
)

// scopeCache holds a store's scope catalog. Queries read it under rw's
// read lock, so none sees it half-updated; one refresh at a time (mu)
// catches it up with the database, reading outside rw and applying under
// its write lock (a full rebuild is swapped in whole).
type scopeCache struct {
	mu  sync.Mutex   // one refresh at a time
	rw  sync.RWMutex // queries (read) against applying a refresh (write)
	cat *catalog

	// fullOnly makes every refresh a full rebuild (the behaviour before
	// catalogs followed writes; benchmarks compare the two).
	fullOnly bool
	// rebuilds and updates count full and incremental refreshes.
	rebuilds, updates atomic.Int64
}

// withCatalog runs fn on the catalog as of now (at least the scope_seq the
// database shows when it is called), under the catalog's read lock: fn
// must not keep the catalog or its documents.
func (s *Store) withCatalog(ctx context.Context, fn func(*catalog)) error {
	var seq int64
	if err := s.r.QueryRowContext(ctx, `SELECT n FROM scope_seq`).Scan(&seq); err != nil {
		return fmt.Errorf("read scope sequence: %w", err)
	}
	sc := &s.scope
	sc.rw.RLock()
	if sc.cat != nil && sc.cat.seq == seq {
		defer sc.rw.RUnlock()
		fn(sc.cat)
		return nil
	}
	sc.rw.RUnlock()
	if err := s.refreshCatalog(ctx); err != nil {
		return err
	}
	sc.rw.RLock()
	defer sc.rw.RUnlock()
	fn(sc.cat)
	return nil
}

// refreshCatalog brings the catalog up to the database's scope_seq: it
// reloads only the documents changed since (scope_docs, migration 10),
// whoever wrote them (this store, another handle, another process), and
// rebuilds it in full when there is none yet, when the database's
// sequence went back (another file), or when so many documents changed
// that reading them all is cheaper.
func (s *Store) refreshCatalog(ctx context.Context) error {
	sc := &s.scope
	sc.mu.Lock()
	defer sc.mu.Unlock()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("read scope catalog: %w", err)
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT n FROM scope_seq`).Scan(&seq); err != nil {
		return fmt.Errorf("read scope catalog: %w", err)
	}
	cur := sc.cat // only a refresh, under mu, changes it
	switch {
	case cur != nil && cur.seq == seq:
		return nil
	case cur != nil && !sc.fullOnly && seq > cur.seq:
		ids, err := changedDocs(ctx, tx, cur.seq, len(cur.docs)/4+64)
		if err != nil {
			return err
		}
		if ids != nil {
			return s.updateCatalog(ctx, tx, seq, ids)
		}
	}
	c, err := readCatalog(ctx, tx, seq, "")
	if err != nil {
		return err
	}
	sc.rw.Lock()
	sc.cat = c
	sc.rw.Unlock()
	sc.rebuilds.Add(1)
	return nil
}

// changedDocs lists the documents a change after scope_seq since touched,
// or nil when more than most did (a full rebuild is then cheaper).
func changedDocs(ctx context.Context, tx *sql.Tx, since int64, most int) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT doc_id FROM scope_docs WHERE seq > ? LIMIT ?`, since, most+1)
	if err != nil {
		return nil, fmt.Errorf("read changed documents of the scope catalog: %w", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read changed documents of the scope catalog: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read changed documents of the scope catalog: %w", err)
	}
	if len(ids) > most {
		return nil, nil
	}
	return ids, nil
}

// updateCatalog reads the documents ids in tx and applies them to the
// catalog, which moves to seq.
func (s *Store) updateCatalog(ctx context.Context, tx *sql.Tx, seq int64, ids []string) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("read scope catalog: %w", err)
	}
	delta, err := readCatalog(ctx, tx, seq, string(list))
	if err != nil {
		return err
	}
	sc := &s.scope
	sc.rw.Lock()
	sc.cat.apply(delta, ids)
	sc.rw.Unlock()
	sc.updates.Add(1)
	return nil
}
