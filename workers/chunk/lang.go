package chunk

import "github.com/exocortex/exocortex/lang"

// EstimateTokens estimates the model tokens of s (see lang.EstimateTokens).
func EstimateTokens(s string) int { return lang.EstimateTokens(s) }
