package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/vectors"
)

// neural holds the flags of the neural parts: where the models are, and
// which vector store to use.
type neural struct {
	models    string
	noModels  bool
	store     string
	qdrant    string
	qdrantKey string
	llmConfig string
	// The rerank's cost and quality: candidates scored, input length, and
	// which part of a long passage is read.
	rerankCandidates int
	rerankTokens     int
	rerankWindow     bool
	// The recency signal of queries that prefer recent notes.
	recency recencyFlags
}

func (n *neural) register(fs *flag.FlagSet) {
	fs.StringVar(&n.models, "models", "", "models directory (env EXOCORTEX_MODELS; default <data>/models)")
	fs.BoolVar(&n.noModels, "no-models", false, "run lexical-only, without loading any model")
	def := os.Getenv("EXOCORTEX_VECTORS")
	if def == "" {
		def = vectors.KindEmbedded
	}
	fs.StringVar(&n.store, "vectors", def, "vector store: embedded (under <data>/vectors) or qdrant (env EXOCORTEX_VECTORS)")
	fs.StringVar(&n.qdrant, "qdrant", os.Getenv("EXOCORTEX_QDRANT"), "Qdrant gRPC address host:port (env EXOCORTEX_QDRANT; default localhost:6334)")
	n.qdrantKey = os.Getenv("EXOCORTEX_QDRANT_API_KEY")
	fs.StringVar(&n.llmConfig, "llm-config", os.Getenv("EXOCORTEX_LLM_CONFIG"), "language-model providers: a JSON file (env EXOCORTEX_LLM_CONFIG); "+
		"default: EXOCORTEX_LLM_BASE_URL, EXOCORTEX_LLM_API_KEY and EXOCORTEX_LLM_MODEL for one provider")
	n.rerankCandidates, n.rerankTokens = retrieval.DefaultConfig().RerankCandidates, models.RerankMaxLength
	fs.Var(&boundedInt{v: &n.rerankCandidates, lo: retrieval.RerankFloor, hi: 1 << 20,
		why: fmt.Sprintf("at least %d (the fused top %d are always reranked)", retrieval.RerankFloor, retrieval.RerankFloor)},
		"rerank-candidates", fmt.Sprintf("the cross-encoder scores the `N` best fused candidates (at least %d; the others follow in fused order)", retrieval.RerankFloor))
	fs.Var(&boundedInt{v: &n.rerankTokens, lo: minRerankTokens, hi: maxRerankTokens,
		why: fmt.Sprintf("want %d to %d", minRerankTokens, maxRerankTokens)},
		"rerank-tokens", "the cross-encoder reads at most `N` tokens of question and passage; a longer passage is cut")
	fs.BoolVar(&n.rerankWindow, "rerank-window", true,
		"cut a long passage to the part around the question's words (false: keep its beginning)")
	n.recency.register(fs)
}

func (n *neural) apply(cfg *system.Config) error {
	cfg.Retrieval.RerankCandidates = n.rerankCandidates
	if err := n.recency.apply(&cfg.Retrieval); err != nil {
		return err
	}
	cfg.Rerank = models.RerankOptions()
	cfg.Rerank.MaxLength, cfg.Rerank.QueryWindow = n.rerankTokens, n.rerankWindow
	cfg.ModelsDir, cfg.NoModels = n.models, n.noModels
	cfg.Vectors.Kind = n.store
	cfg.Vectors.Qdrant.Addr = n.qdrant
	cfg.Vectors.Qdrant.APIKey = n.qdrantKey
	if n.llmConfig != "" {
		c, err := llm.LoadConfig(n.llmConfig)
		if err != nil {
			return err
		}
		cfg.LLM = &c
	}
	return nil
}

// The bounds of --rerank-tokens: room for a question and some passage, and
// the reranker's own input length.
const (
	minRerankTokens = 32
	maxRerankTokens = 512
)

// boundedInt is an integer flag checked when parsed (a bad value is a usage
// error, exit status 2, before any work).
type boundedInt struct {
	v      *int
	lo, hi int
	why    string
}

func (b *boundedInt) String() string {
	if b.v == nil {
		return "0"
	}
	return strconv.Itoa(*b.v)
}

func (b *boundedInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not a whole number")
	}
	if n < b.lo || n > b.hi {
		return errors.New(b.why)
	}
	*b.v = n
	return nil
}
