package index

import (
	"errors"
	"fmt"
	"time"
)

// Config configures the index stage.
type Config struct {
	// DBPath is the SQLite index file (opened with store.Open; this stage is
	// its only writer).
	DBPath string
	// WriteTimeout bounds one chunk's write; keep it well under the
	// consumer's AckWait. A document structure's write may take longer,
	// one transaction as long as rows keep going in, and fails once it has
	// made no progress for WriteTimeout (see store.WithStallTimeout). A
	// write that runs out of time is retried.
	WriteTimeout time.Duration
}

// DefaultConfig returns the defaults: data/exocortex.db, 10s per write.
func DefaultConfig() Config {
	return Config{DBPath: "data/exocortex.db", WriteTimeout: 10 * time.Second}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.DBPath == "" {
		errs = append(errs, errors.New("index: db_path is empty"))
	}
	if c.WriteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("index: write_timeout must be positive, got %s", c.WriteTimeout))
	}
	return errors.Join(errs...)
}
