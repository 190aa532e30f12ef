// Package chunking is the chunker: Split cuts a document's blocks
// (schemas.DocChanged) into block-aware chunks (Piece): section paths, block
// spans, overlap and the instruction flags of blocks addressed to a model.
// It is pure and deterministic. The chunk stage (workers/chunk) runs it on
// the bus; exocortex eval and the tests run it directly.
//
// It may import schemas, lang and analysis; never bus, store or workers/.
package chunking

import (
	"errors"
	"fmt"
)

// Config sizes the chunks. Sizes are in estimated XLM-R tokens (lang.EstimateTokens).
type Config struct {
	// MinTokens is the size a chunk should reach: a level 1-2 heading starts a
	// new chunk once the chunk (or the section it is in) has MinTokens/2, and
	// a small last chunk of a section takes blocks from the chunk before it.
	MinTokens int
	// MaxTokens is the hard limit of a chunk, overlap included.
	MaxTokens int
	// OverlapTokens is about how much of the previous chunk's tail starts a
	// chunk that continues a section.
	OverlapTokens int
}

// DefaultConfig returns 250-400 token chunks with a 30 token overlap.
func DefaultConfig() Config {
	return Config{MinTokens: 250, MaxTokens: 400, OverlapTokens: 30}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.MinTokens <= 0 {
		errs = append(errs, fmt.Errorf("chunk: min tokens is %d, must be positive", c.MinTokens))
	}
	if c.MaxTokens < c.MinTokens {
		errs = append(errs, fmt.Errorf("chunk: max tokens %d is below min tokens %d", c.MaxTokens, c.MinTokens))
	}
	if c.OverlapTokens < 0 {
		errs = append(errs, fmt.Errorf("chunk: overlap tokens is %d, must not be negative", c.OverlapTokens))
	}
	if c.OverlapTokens >= c.MinTokens {
		errs = append(errs, fmt.Errorf("chunk: overlap tokens %d must be below min tokens %d", c.OverlapTokens, c.MinTokens))
	}
	return errors.Join(errs...)
}

// sane clamps an unvalidated config so that Split always terminates and never
// exceeds MaxTokens.
func (c Config) sane() Config {
	if c.MaxTokens < 1 {
		c.MaxTokens = 1
	}
	if c.MinTokens < 1 {
		c.MinTokens = 1
	}
	if c.MinTokens > c.MaxTokens {
		c.MinTokens = c.MaxTokens
	}
	if c.OverlapTokens < 0 {
		c.OverlapTokens = 0
	}
	if c.OverlapTokens >= c.MaxTokens {
		c.OverlapTokens = c.MaxTokens - 1
	}
	return c
}
