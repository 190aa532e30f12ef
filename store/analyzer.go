package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/exocortex/exocortex/analysis"
)

// DefaultAnalyzer is the analysis mode of a new index.
const DefaultAnalyzer = analysis.Full

// Analyzer is the analyzer that wrote the full-text rows; queries are
// analysed with it too.
func (s *Store) Analyzer() *analysis.Analyzer { return s.analyzer.Load() }

// UseAnalyzer makes the index use the analyzer of the given mode. When the
// rows were written by another analyzer (or another version of it), every
// full-text row is rebuilt, in one transaction, before it returns.
func (s *Store) UseAnalyzer(ctx context.Context, mode analysis.Mode) error {
	if s.w == nil {
		return ErrReadOnly
	}
	a, err := analysis.New(mode)
	if err != nil {
		return err
	}
	if cur := s.Analyzer(); cur != nil && cur.Name() == a.Name() {
		return nil
	}
	return s.switchAnalyzer(ctx, a)
}

func (s *Store) switchAnalyzer(ctx context.Context, a *analysis.Analyzer) error {
	prev := s.analyzer.Swap(a)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := s.reindex(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
INSERT INTO meta (key, value) VALUES ('analyzer', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, a.Name())
		return err
	})
	if err != nil {
		s.analyzer.Store(prev)
		return fmt.Errorf("rebuild the full-text index with analyzer %s: %w", a.Name(), err)
	}
	return nil
}

// queryAnalyzer is the analyzer for a query. A reader checks first that the
// writer has not switched analyzers since it last looked.
func (s *Store) queryAnalyzer(ctx context.Context) (*analysis.Analyzer, error) {
	a := s.Analyzer()
	if s.w != nil {
		return a, nil
	}
	name, err := s.recordedAnalyzer(ctx)
	if err != nil {
		return nil, err
	}
	if name == a.Name() || name == "none" {
		return a, nil
	}
	if err := s.loadAnalyzer(ctx); err != nil {
		return nil, err
	}
	return s.Analyzer(), nil
}

// loadAnalyzer sets up the analyzer recorded in the database. The writer
// rebuilds the full-text rows when none is recorded or the recorded one is
// another version than this binary's; a reader cannot, and says so.
func (s *Store) loadAnalyzer(ctx context.Context) error {
	name, err := s.recordedAnalyzer(ctx)
	if err != nil {
		return err
	}
	mode, ver, known := parseAnalyzerName(name)
	if !known {
		mode = DefaultAnalyzer
	}
	a, err := analysis.New(mode)
	if err != nil {
		return err
	}
	if known && a.Name() == name {
		s.analyzer.Store(a)
		return nil
	}
	if s.w == nil {
		if name == "none" {
			s.analyzer.Store(a) // not built yet: nothing to find either way
			return nil
		}
		return fmt.Errorf("%w: the full-text index was built by analyzer %s (version %d), this binary has %s: "+
			"run the index stage (exocortex up) once to rebuild it", ErrSchema, name, ver, a.Name())
	}
	return s.switchAnalyzer(ctx, a)
}

// recordedAnalyzer is the name of the analyzer that built the full-text rows
// ("none" before the first build).
func (s *Store) recordedAnalyzer(ctx context.Context) (string, error) {
	var name string
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'analyzer'`).Scan(&name); err != nil {
		return "", fmt.Errorf("read the analyzer's name: %w", err)
	}
	return name, nil
}

// parseAnalyzerName splits "full/1" into its mode and version.
func parseAnalyzerName(name string) (analysis.Mode, int, bool) {
	m, v, ok := strings.Cut(name, "/")
	if !ok {
		return "", 0, false
	}
	mode, err := analysis.ParseMode(m)
	if err != nil {
		return "", 0, false
	}
	ver, err := strconv.Atoi(v)
	if err != nil {
		return "", 0, false
	}
	return mode, ver, true
}
