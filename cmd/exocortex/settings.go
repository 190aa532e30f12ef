package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/exocortex/exocortex/client"
	"github.com/exocortex/exocortex/models/llm"
	"github.com/exocortex/exocortex/schemas"
)

// reasonRunningSettings marks a note a client adds when a running system
// answers its query with its own settings, not the client's.
const reasonRunningSettings = "running_system_settings"

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

// askNotes say who answers ask's question when a running system is asked
// (cl.Notes) and which of the client's settings the running system's
// replace: its models, and its answer deadlines.
func askNotes(cl *client.Client, c common, n neural, af answerFlags) []string {
	st, who, running := cl.Running()
	if !running {
		return nil
	}
	here := cl.AnswersHere()
	notes := append(cl.Notes(), runningSettingsNotes(c, n, who, st, !here)...)
	if here {
		return notes
	}
	if src, ok := af.given(); ok && (st == nil || st.AnswerDeadline != af.deadline.value.String()) {
		running := "its own"
		if st != nil && st.AnswerDeadline != "" {
			running = st.AnswerDeadline
		}
		notes = append(notes, fmt.Sprintf("%s: %s answers within its deadline (%s), not your %s; restart it with the deadline to use it",
			reasonRunningSettings, who, running, src))
	}
	if src, ok := af.givenLocal(); ok && (st == nil || st.AnswerDeadlineLocal != af.local.value.String()) {
		running := "its own"
		if st != nil && st.AnswerDeadlineLocal != "" {
			running = st.AnswerDeadlineLocal
		}
		notes = append(notes, fmt.Sprintf("%s: %s answers without a language model within its deadline (%s), not your %s; restart it with the deadline to use it",
			reasonRunningSettings, who, running, src))
	}
	return notes
}

// runningSettingsNotes compares the models directory and the recency
// settings a client gave with the running system's, which does the
// retrieval, and says plainly which are used.
// With qaNote (ask --no-models answered by the running system) it says that
// only retrieval follows --no-models.
func runningSettingsNotes(c common, n neural, who string, st *schemas.SystemSettings, qaNote bool) []string {
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
	if given := n.recency.differsFrom(st); len(given) > 0 {
		notes = append(notes, fmt.Sprintf("%s: %s ranks newer notes first with its own recency settings (%s), not your %s; %s",
			reasonRunningSettings, who, recencyOf(st), strings.Join(given, " and "), restart))
	}
	return notes
}

func providerList(st *schemas.SystemSettings) string {
	switch {
	case st == nil:
		return "unknown: it did not record its settings"
	case len(st.Providers) == 0:
		return "none"
	}
	return strings.Join(st.Providers, ", ")
}

func modelsOf(st *schemas.SystemSettings) string {
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
