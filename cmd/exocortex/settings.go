package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/pipeline"
	"github.com/exocortex/exocortex/models/llm"
)

// reasonRunningSettings starts the notes that say a running system's
// settings, not the client's, answer a query.
const reasonRunningSettings = "running_system_settings"

// runningSettingsNotes compares the settings a client gave (its language-model
// providers when llmToo, its models directory) with those of the running
// system that answers its query, and says plainly which are used. A query
// carries no provider settings (they hold API keys), and the running system's
// models do the retrieval.
func runningSettingsNotes(ctx context.Context, b *bus.Bus, c common, n neural, llmToo bool) []string {
	st, _ := pipeline.RunningSettings(ctx, b)
	who := "the running system (NATS " + b.URL() + ")"
	if st != nil && c.nats == "" {
		who = "exocortex up on " + st.DataDir
	}
	restart := "restart 'exocortex up' with them to use them"
	if c.nats != "" {
		restart = "restart its workers with them to use them"
	}
	var notes []string
	if llmToo {
		var mine *llm.Config
		var src string
		if n.llmConfig != "" {
			if cfg, err := llm.LoadConfig(n.llmConfig); err == nil {
				mine, src = &cfg, "--llm-config "+n.llmConfig
				if os.Getenv("EXOCORTEX_LLM_CONFIG") == n.llmConfig {
					src = "EXOCORTEX_LLM_CONFIG=" + n.llmConfig
				}
			}
		} else if cfg, ok := llm.FromEnv(); ok {
			mine, src = &cfg, "EXOCORTEX_LLM_BASE_URL"
		}
		if mine != nil && (st == nil || !slices.Equal(pipeline.ProviderSummary(mine), st.Providers)) {
			notes = append(notes, fmt.Sprintf("%s: %s answers with its own language-model providers (providers: %s), not those of your %s (%s); %s",
				reasonRunningSettings, who, providerList(st), src, strings.Join(pipeline.ProviderSummary(mine), ", "), restart))
		}
	}
	if !n.noModels {
		dir, src := n.models, "--models "+n.models
		if dir == "" {
			dir, src = os.Getenv("EXOCORTEX_MODELS"), "EXOCORTEX_MODELS="+os.Getenv("EXOCORTEX_MODELS")
		}
		if dir != "" && (st == nil || st.NoModels || abs(dir) != st.ModelsDir) {
			notes = append(notes, fmt.Sprintf("%s: %s retrieves with its own models (%s), not those of your %s; %s",
				reasonRunningSettings, who, modelsOf(st), src, restart))
		}
	} else if llmToo && (st == nil || !st.NoModels) {
		notes = append(notes, fmt.Sprintf("%s: --no-models makes this query's retrieval lexical, but %s may still answer with its extractive-QA model (%s)",
			reasonRunningSettings, who, modelsOf(st)))
	}
	return notes
}

func providerList(st *pipeline.Settings) string {
	switch {
	case st == nil:
		return "unknown: it did not record its settings"
	case len(st.Providers) == 0:
		return "none"
	}
	return strings.Join(st.Providers, ", ")
}

func modelsOf(st *pipeline.Settings) string {
	switch {
	case st == nil:
		return "unknown: it did not record its settings"
	case st.NoModels:
		return "none: it runs with --no-models; search: lexical"
	}
	return "models: " + st.ModelsDir + "; search: " + st.Search
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
