package vectors

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Config selects and configures a store.
type Config struct {
	Kind     string         // KindEmbedded (default) or KindQdrant
	Dir      string         // embedded: the data directory's vectors/ folder
	Dim      int            // vector dimension, e.g. 384
	Qdrant   QdrantConfig   // used when Kind is KindQdrant
	Embedded EmbeddedConfig // tuning for the embedded store; zero = defaults
}

// QdrantConfig says where the Qdrant collection is.
type QdrantConfig struct {
	Addr       string // host:port of the gRPC API; default localhost:6334
	APIKey     string
	UseTLS     bool
	Collection string // default DefaultCollection
}

// DefaultCollection is the Qdrant collection used when none is configured.
const DefaultCollection = "exocortex_chunks"

// DefaultQdrantAddr is Qdrant's default gRPC address.
const DefaultQdrantAddr = "localhost:6334"

// EmbeddedConfig tunes the embedded HNSW store. The zero value is the
// defaults below; they are what the benchmarks measure.
type EmbeddedConfig struct {
	M              int // graph degree above level 0; default 16 (2·M at level 0)
	EfConstruction int // candidate list size while inserting; default 128
	EfSearch       int // candidate list size of a query whose Ef is 0; default 64
	// NoSync skips the fsync after each Upsert and Delete; the log is synced
	// by Flush, snapshots and Close. Faster bulk loads; a crash loses the
	// writes since the last sync.
	NoSync bool
	// SnapshotLogBytes: a snapshot is written (and the op log emptied) once
	// the log is larger than this and than a quarter of the last snapshot.
	// Default 64 MiB.
	SnapshotLogBytes int64
	// CompactFraction: when deleted and replaced points make up more than
	// this fraction of the graph (and number at least 1024), the graph is
	// repaired around them and they are dropped. Default 0.2.
	CompactFraction float64
	// ReadOnly opens the store for searching only, leaving its directory as
	// it is: nothing is created, locked, truncated or written (no snapshot
	// at Close, no compaction); the op log after the snapshot is replayed in
	// memory, a torn tail skipped. The directory must exist. Writes fail
	// with ErrReadOnly. A writer in another process may go on meanwhile:
	// the store holds what was on disk when it opened.
	ReadOnly bool
}

// Defaults of EmbeddedConfig.
const (
	DefaultM                = 16
	DefaultEfConstruction   = 128
	DefaultEfSearch         = 64
	DefaultSnapshotLogBytes = 64 << 20
	DefaultCompactFraction  = 0.2
)

func (c Config) withDefaults() Config {
	if c.Kind == "" {
		c.Kind = KindEmbedded
	}
	c.Qdrant = c.Qdrant.withDefaults()
	c.Embedded = c.Embedded.withDefaults()
	return c
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Dim <= 0 {
		errs = append(errs, fmt.Errorf("vectors: dim %d must be positive", c.Dim))
	}
	switch c.Kind {
	case "", KindEmbedded:
		if c.Dir == "" {
			errs = append(errs, errors.New("vectors: embedded store needs a directory"))
		}
		errs = append(errs, c.Embedded.Validate())
	case KindQdrant:
		errs = append(errs, c.Qdrant.Validate())
	default:
		errs = append(errs, fmt.Errorf("vectors: kind %q is neither %q nor %q", c.Kind, KindEmbedded, KindQdrant))
	}
	return errors.Join(errs...)
}

func (c QdrantConfig) withDefaults() QdrantConfig {
	if c.Addr == "" {
		c.Addr = DefaultQdrantAddr
	}
	if c.Collection == "" {
		c.Collection = DefaultCollection
	}
	return c
}

// Validate reports every problem with the Qdrant settings.
func (c QdrantConfig) Validate() error {
	var errs []error
	c = c.withDefaults()
	if _, _, err := splitAddr(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("vectors: qdrant addr: %w", err))
	}
	return errors.Join(errs...)
}

func splitAddr(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return host, port, nil
}

func (c EmbeddedConfig) withDefaults() EmbeddedConfig {
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.EfConstruction == 0 {
		c.EfConstruction = DefaultEfConstruction
	}
	if c.EfSearch == 0 {
		c.EfSearch = DefaultEfSearch
	}
	if c.SnapshotLogBytes == 0 {
		c.SnapshotLogBytes = DefaultSnapshotLogBytes
	}
	if c.CompactFraction == 0 {
		c.CompactFraction = DefaultCompactFraction
	}
	return c
}

// Validate reports every problem with the embedded settings.
func (c EmbeddedConfig) Validate() error {
	var errs []error
	c = c.withDefaults()
	if c.M < 2 || c.M > 128 {
		errs = append(errs, fmt.Errorf("vectors: M %d is outside 2..128", c.M))
	}
	if c.EfConstruction < c.M {
		errs = append(errs, fmt.Errorf("vectors: ef construction %d is below M %d", c.EfConstruction, c.M))
	}
	if c.EfSearch < 1 {
		errs = append(errs, fmt.Errorf("vectors: ef search %d must be positive", c.EfSearch))
	}
	if c.SnapshotLogBytes < 0 {
		errs = append(errs, fmt.Errorf("vectors: snapshot log bytes %d is negative", c.SnapshotLogBytes))
	}
	if c.CompactFraction < 0 || c.CompactFraction >= 1 {
		errs = append(errs, fmt.Errorf("vectors: compact fraction %g is outside [0, 1)", c.CompactFraction))
	}
	return errors.Join(errs...)
}
