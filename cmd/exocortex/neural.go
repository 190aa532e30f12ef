package main

import (
	"flag"
	"os"

	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/models/llm"
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
}

func (n *neural) apply(cfg *pipeline.Config) error {
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
