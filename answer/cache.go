package answer

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver

	"github.com/exocortex/exocortex/schemas"
)

// CacheConfig tunes the semantic cache.
type CacheConfig struct {
	// MinCosine is how close a new question's embedding must be to a cached
	// one (default 0.87).
	MinCosine float64
	// TTL is how long an answer stays (default 7 days); MaxEntries bounds
	// the cache, the least recently used going first (default 5000).
	TTL        time.Duration
	MaxEntries int
	Now        func() time.Time
}

func (c CacheConfig) withDefaults() CacheConfig {
	if c.MinCosine == 0 {
		c.MinCosine = 0.87
	}
	if c.TTL == 0 {
		c.TTL = 7 * 24 * time.Hour
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = 5000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Hashes returns the current content hash of each chunk the index still
// holds; a chunk left out is gone.
type Hashes func(ctx context.Context, chunkIDs []string) (map[string]string, error)

// Cache keeps answers by their question's embedding in SQLite, and gives one
// back for a close enough question only while every chunk it cites still
// has the content it had.
type Cache struct {
	db     *sql.DB
	cfg    CacheConfig
	hashes Hashes

	mu      sync.Mutex
	entries []cacheEntry
	hits    int64
	misses  int64
}

type cacheEntry struct {
	id     int64
	vector []float32
	lang   string
	used   int64
}

// OpenCache opens (or creates) the cache database at path.
func OpenCache(path string, cfg CacheConfig, hashes Hashes) (*Cache, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("answer cache %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`
CREATE TABLE IF NOT EXISTS answers (
	id       INTEGER PRIMARY KEY,
	question TEXT NOT NULL,
	lang     TEXT NOT NULL DEFAULT '',
	vector   BLOB NOT NULL,
	answer   TEXT NOT NULL, -- the kb.answer.done JSON
	chunks   TEXT NOT NULL, -- JSON {chunk_id: hash} of the cited chunks
	created  INTEGER NOT NULL,
	used     INTEGER NOT NULL,
	hits     INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;`); err != nil {
		db.Close()
		return nil, fmt.Errorf("answer cache %s: %w", path, err)
	}
	c := &Cache{db: db, cfg: cfg.withDefaults(), hashes: hashes}
	rows, err := db.Query(`SELECT id, vector, lang, used FROM answers`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("answer cache %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e cacheEntry
		var raw []byte
		if err := rows.Scan(&e.id, &raw, &e.lang, &e.used); err != nil {
			db.Close()
			return nil, fmt.Errorf("answer cache %s: %w", path, err)
		}
		v, err := schemas.VectorFromBytes(raw)
		if err != nil {
			continue
		}
		e.vector = v
		c.entries = append(c.entries, e)
	}
	_ = db.QueryRow(`SELECT `+countersCols).Scan(&c.hits, &c.misses)
	return c, rows.Err()
}

// countersCols selects the persisted hits and misses.
const countersCols = `coalesce((SELECT value FROM counters WHERE name = 'hits'), 0),
	coalesce((SELECT value FROM counters WHERE name = 'misses'), 0)`

// Close closes the database.
func (c *Cache) Close() error { return c.db.Close() }

// Stats returns the hits, misses and entries since the cache was created.
func (c *Cache) Stats() (hits, misses int64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, len(c.entries)
}

// HitRate is hits / (hits + misses), 0 before any lookup.
func (c *Cache) HitRate() float64 {
	h, m, _ := c.Stats()
	if h+m == 0 {
		return 0
	}
	return float64(h) / float64(h+m)
}

// Lookup returns a cached answer for a question whose embedding is vec, or
// nil. An entry past its TTL, or one citing a chunk that has changed or
// gone, is dropped.
func (c *Cache) Lookup(ctx context.Context, vec []float32, lang string) (*schemas.AnswerDone, error) {
	now := c.cfg.Now()
	c.mu.Lock()
	type cand struct {
		i   int
		cos float64
	}
	var cands []cand
	for i, e := range c.entries {
		if e.lang != lang || len(e.vector) != len(vec) {
			continue
		}
		if cos := dot(e.vector, vec); cos >= c.cfg.MinCosine {
			cands = append(cands, cand{i, cos})
		}
	}
	sort.Slice(cands, func(a, b int) bool { return cands[a].cos > cands[b].cos })
	ids := make([]int64, len(cands))
	for k, cd := range cands {
		ids[k] = c.entries[cd.i].id
	}
	c.mu.Unlock()
	for _, id := range ids {
		done, ok, err := c.valid(ctx, id, now)
		if err != nil {
			return nil, err
		}
		if ok {
			c.count(ctx, "hits")
			_, _ = c.db.ExecContext(ctx, `UPDATE answers SET used = ?, hits = hits + 1 WHERE id = ?`, now.UnixNano(), id)
			c.mu.Lock()
			for i := range c.entries {
				if c.entries[i].id == id {
					c.entries[i].used = now.UnixNano()
				}
			}
			c.mu.Unlock()
			return done, nil
		}
		c.remove(ctx, id)
	}
	c.count(ctx, "misses")
	return nil, nil
}

// valid loads an entry and checks its age and the chunks it cites.
func (c *Cache) valid(ctx context.Context, id int64, now time.Time) (*schemas.AnswerDone, bool, error) {
	var raw, chunks string
	var created int64
	err := c.db.QueryRowContext(ctx, `SELECT answer, chunks, created FROM answers WHERE id = ?`, id).Scan(&raw, &chunks, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("answer cache: %w", err)
	}
	if now.Sub(time.Unix(0, created)) > c.cfg.TTL {
		return nil, false, nil
	}
	var want map[string]string
	if json.Unmarshal([]byte(chunks), &want) != nil {
		return nil, false, nil
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	have, err := c.hashes(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	for id, h := range want {
		if have[id] != h {
			return nil, false, nil
		}
	}
	var done schemas.AnswerDone
	if json.Unmarshal([]byte(raw), &done) != nil {
		return nil, false, nil
	}
	return &done, true, nil
}

// Put caches an answer (llm or extractive, with citations) under its
// question's embedding.
func (c *Cache) Put(ctx context.Context, vec []float32, done *schemas.AnswerDone) error {
	if len(vec) == 0 || len(done.Citations) == 0 || (done.Mode != schemas.AnswerLLM && done.Mode != schemas.AnswerExtractive) {
		return nil
	}
	var ids []string
	for _, ct := range done.Citations {
		if ct.ChunkID != "" {
			ids = append(ids, ct.ChunkID)
		}
	}
	hashes, err := c.hashes(ctx, ids)
	if err != nil {
		return err
	}
	chunks, _ := json.Marshal(hashes)
	raw, _ := json.Marshal(done)
	now := c.cfg.Now().UnixNano()
	res, err := c.db.ExecContext(ctx, `INSERT INTO answers (question, lang, vector, answer, chunks, created, used) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		done.Question, done.Lang, schemas.Vector(vec).Bytes(), string(raw), string(chunks), now, now)
	if err != nil {
		return fmt.Errorf("answer cache: %w", err)
	}
	id, _ := res.LastInsertId()
	c.mu.Lock()
	c.entries = append(c.entries, cacheEntry{id: id, vector: append([]float32(nil), vec...), lang: done.Lang, used: now})
	var evict []int64
	if over := len(c.entries) - c.cfg.MaxEntries; over > 0 {
		sort.Slice(c.entries, func(a, b int) bool { return c.entries[a].used < c.entries[b].used })
		for _, e := range c.entries[:over] {
			evict = append(evict, e.id)
		}
		c.entries = append([]cacheEntry(nil), c.entries[over:]...)
	}
	c.mu.Unlock()
	for _, id := range evict {
		c.remove(ctx, id)
	}
	return nil
}

func (c *Cache) remove(ctx context.Context, id int64) {
	_, _ = c.db.ExecContext(ctx, `DELETE FROM answers WHERE id = ?`, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		if c.entries[i].id == id {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
			return
		}
	}
}

func (c *Cache) count(ctx context.Context, name string) {
	c.mu.Lock()
	if name == "hits" {
		c.hits++
	} else {
		c.misses++
	}
	c.mu.Unlock()
	_, _ = c.db.ExecContext(ctx, `INSERT INTO counters (name, value) VALUES (?, 1)
ON CONFLICT (name) DO UPDATE SET value = value + 1`, name)
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return math.Max(-1, math.Min(1, s))
}

// CacheStats is what a cache database holds, read without opening it for
// writing (exocortex status, while the answer stage runs).
type CacheStats struct {
	Entries int     `json:"entries"`
	Hits    int64   `json:"hits"`
	Misses  int64   `json:"misses"`
	HitRate float64 `json:"hit_rate"`
}

// ReadCacheStats reads the counters of the cache database at path; a
// missing database is an error.
func ReadCacheStats(ctx context.Context, path string) (CacheStats, error) {
	var s CacheStats
	if _, err := os.Stat(path); err != nil {
		return s, fmt.Errorf("answer cache: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return s, fmt.Errorf("answer cache %s: %w", path, err)
	}
	defer db.Close()
	err = db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM answers), `+countersCols).Scan(&s.Entries, &s.Hits, &s.Misses)
	if err != nil {
		return s, fmt.Errorf("answer cache %s: %w", path, err)
	}
	if s.Hits+s.Misses > 0 {
		s.HitRate = float64(s.Hits) / float64(s.Hits+s.Misses)
	}
	return s, nil
}
