package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/exocortex/exocortex/internal/system"
)

// Environment variables of the storage limits.
const (
	EnvMaxStore       = "EXOCORTEX_MAX_STORE"
	EnvEmbedsCacheMiB = "EXOCORTEX_EMBEDS_CACHE_MB"
)

// storageFlags are the limits of what the system keeps on disk.
type storageFlags struct {
	maxStore    string // --max-store: a size such as 2G; empty or 0 is the server's own
	embedsCache int    // --embeds-cache-mb: MiB; 0 sizes it from the store
	withStore   bool   // --max-store is registered (up: the embedded server)
}

// register adds --embeds-cache-mb, and --max-store when withStore (only a
// command that runs the embedded server has a store to bound).
func (s *storageFlags) register(fs *flag.FlagSet, withStore bool) {
	s.withStore = withStore
	if withStore {
		fs.StringVar(&s.maxStore, "max-store", os.Getenv(EnvMaxStore), "most disk the embedded JetStream store may use, e.g. 500M or 4G "+
			"(env "+EnvMaxStore+"; default 75% of the data directory's free space)")
	}
	def := 0
	if v := os.Getenv(EnvEmbedsCacheMiB); v != "" {
		def, _ = strconv.Atoi(v) // checked in apply
	}
	fs.IntVar(&s.embedsCache, "embeds-cache-mb", def, "size of the embedding cache in MiB (env "+EnvEmbedsCacheMiB+
		"; default an eighth of the JetStream store's limit, at most 1024)")
}

// apply sets cfg's storage limits.
func (s *storageFlags) apply(cfg *system.Config) error {
	if v := os.Getenv(EnvEmbedsCacheMiB); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return fmt.Errorf("%s=%q: want a number of MiB, 0 or more", EnvEmbedsCacheMiB, v)
		}
	}
	if s.embedsCache < 0 {
		return fmt.Errorf("--embeds-cache-mb %d: want 0 (sized from the store) or more", s.embedsCache)
	}
	cfg.EmbedsCache = int64(s.embedsCache) << 20
	if s.withStore && s.maxStore != "" {
		n, err := parseSize(s.maxStore)
		if err != nil {
			return fmt.Errorf("--max-store (or %s) %q: %w", EnvMaxStore, s.maxStore, err)
		}
		cfg.MaxStore = n
	}
	return nil
}

// explain adds the flags to a limit error of system.Start.
func (s *storageFlags) explain(err error) error {
	if errors.Is(err, system.ErrEmbedsCacheTooLarge) {
		hint := "lower --embeds-cache-mb"
		if s.withStore {
			hint += " or raise --max-store"
		}
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

// parseSize reads a byte count with an optional binary unit: 512K, 64M,
// 64MiB, 2G, 2GB, 1T (K, M, G, T are powers of 1024) or plain bytes.
func parseSize(v string) (int64, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "IB"), "B")
	mult := int64(1)
	if s != "" {
		if i := strings.IndexByte("KMGT", s[len(s)-1]); i >= 0 {
			mult = int64(1) << (10 * (i + 1))
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n < 0 {
		return 0, errors.New("want a size such as 500M or 4G")
	}
	return int64(n * float64(mult)), nil
}
