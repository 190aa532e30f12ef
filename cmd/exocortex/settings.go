package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/models/llm"
)

// Reasons a client adds when a running system answers its query: its own
// settings that the running system's replace, or its own providers that
// answered here.
const (
	reasonRunningSettings = "running_system_settings"
	reasonClientProviders = "client_llm_providers"
)

// runningWho names the running system that answers a client's query.
func runningWho(c common, b *bus.Bus, st *system.Settings) string {
	if st != nil && c.nats == "" {
		return "exocortex up on " + st.DataDir
	}
	return "the running system (NATS " + b.URL() + ")"
}

// clientProviders are the language-model providers the client gave
// (--llm-config, EXOCORTEX_LLM_CONFIG or EXOCORTEX_LLM_BASE_URL), and where
// they came from; nil when none.
func clientProviders(n neural) (*llm.Config, string) {
	if n.llmConfig != "" {
		cfg, err := llm.LoadConfig(n.llmConfig)
		if err != nil {
			return nil, ""
		}
		if os.Getenv("EXOCORTEX_LLM_CONFIG") == n.llmConfig {
			return &cfg, "EXOCORTEX_LLM_CONFIG=" + n.llmConfig
		}
		return &cfg, "--llm-config " + n.llmConfig
	}
	if cfg, ok := llm.FromEnv(); ok {
		return &cfg, "EXOCORTEX_LLM_BASE_URL"
	}
	return nil, ""
}

// providersDiffer says whether the client's providers are not the running
// system's (or the running system did not say which it has).
func providersDiffer(mine *llm.Config, st *system.Settings) bool {
	return mine != nil && (st == nil || !slices.Equal(system.ProviderSummary(mine), st.Providers))
}

// runningSettingsNotes compares the models directory a client gave with the
// running system's, which does the retrieval, and says plainly which is used.
// With qaNote (ask --no-models answered by the running system) it says that
// only retrieval follows --no-models.
func runningSettingsNotes(c common, n neural, who string, st *system.Settings, qaNote bool) []string {
	restart := "restart 'exocortex up' with it to use it"
	if c.nats != "" {
		restart = "restart its workers with it to use it"
	}
	var notes []string
	if !n.noModels {
		dir, src := n.models, "--models "+n.models
		if dir == "" {
			dir, src = os.Getenv("EXOCORTEX_MODELS"), "EXOCORTEX_MODELS="+os.Getenv("EXOCORTEX_MODELS")
		}
		if dir != "" && (st == nil || st.NoModels || abs(dir) != st.ModelsDir) {
			notes = append(notes, fmt.Sprintf("%s: %s retrieves with its own models (%s), not those of your %s; %s",
				reasonRunningSettings, who, modelsOf(st), src, restart))
		}
	} else if qaNote && (st == nil || !st.NoModels) {
		notes = append(notes, fmt.Sprintf("%s: --no-models makes this query's retrieval lexical, but %s may still answer with its extractive-QA model (%s)",
			reasonRunningSettings, who, modelsOf(st)))
	}
	return notes
}

func providerList(st *system.Settings) string {
	switch {
	case st == nil:
		return "unknown: it did not record its settings"
	case len(st.Providers) == 0:
		return "none"
	}
	return strings.Join(st.Providers, ", ")
}

func modelsOf(st *system.Settings) string {
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
